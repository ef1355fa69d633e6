"""Every field of every workload shape and of a stack file, replaced by a value of the wrong kind: never exit 70.

A user's manifest or stack file with a typo'd type (a list where a map goes, text where a number goes, a
number too big for any Go integer, `null`) is bad input, not our bug: `explain` answers what the API server
does with it (kube-apiserver decodes the body into the kind's Go type first: gpu_platform.behaviour.decode),
and `check` refuses a stack file with one line and exit 2. Each path gets one of the wrong values, chosen by
the path so the sample is the same on every run; the fuzzing that found the cases this fixed ran all of them.
"""

from __future__ import annotations

import copy
import io
import json
import zlib
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform import cli
from gpu_platform.behaviour.decode import decoded
from gpu_platform.versions import load_lockfile
from tests.conftest import ROOT
from tests.planning.test_inputs import prometheus_export

SHAPES = sorted((ROOT / "tests" / "workloads" / "shapes").glob("*.yaml"))
WRONG: tuple[Any, ...] = (None, [], {}, "x", -1, 10**30, 1.5, True, "99999999999Gi", "1e400")
Path_ = tuple[str | int, ...]


def paths(node: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every leaf and every container below the root, depth first."""
    if path:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from paths(value, (*path, i))


def replaced(doc: Any, path: Path_, value: Any) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def wrong_for(path: Path_) -> Any:
    return WRONG[zlib.crc32(repr(path).encode()) % len(WRONG)]


def run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue()


@pytest.mark.parametrize("shape", SHAPES, ids=[s.stem for s in SHAPES])
def test_a_mistyped_workload_is_answered_not_crashed_on(shape: Path, tmp_path: Path) -> None:
    docs = list(yaml.safe_load_all(shape.read_text()))
    assert len(docs) == 1 and isinstance(docs[0], dict), f"{shape.name}: every shape is one manifest"
    file = tmp_path / "workload.yaml"
    crashed = []
    for path in paths(docs[0]):
        value = wrong_for(path)
        file.write_text(yaml.safe_dump(replaced(docs[0], path, value)))
        code, err = run(["explain", "--stack", "prod", "--workload", str(file)])
        if code == 70 or "internal error" in err:
            crashed.append(f"{'.'.join(map(str, path))} = {value!r}: {err.strip()}")
    assert not crashed, "\n".join(crashed[:10])


def test_the_decode_stage_names_the_field_and_go_type() -> None:
    """What the user sees for the commonest mistake: a GPU count written as a list."""
    doc = yaml.safe_load((ROOT / "tests" / "workloads" / "shapes" / "vllm-deployment.yaml").read_text())
    bad = replaced(doc, ("spec", "replicas"), ["2"])
    minor = load_lockfile().kubernetes.version
    _, errors = decoded(bad, minor)
    assert errors == ["json: cannot unmarshal array into Go struct field Deployment.spec.replicas of type int32"]
    _, errors = decoded(replaced(doc, ("spec", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"), "eight"), minor)
    assert errors and "quantities must match the regular expression" in errors[0]


@pytest.mark.parametrize("stack", ["dev", "onprem"])
def test_a_mistyped_stack_file_is_refused_in_one_line(stack: str, tmp_path: Path) -> None:
    """Each key of the stack file given a value of the wrong kind: `check` exits 0, 1 or 2, never 70."""
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    file = tmp_path / f"Pulumi.{stack}.yaml"
    crashed = []
    for path in paths(doc["config"]):
        value = wrong_for(path)
        file.write_text(yaml.safe_dump(replaced(doc, ("config", *path), value)))
        code, err = run(["check", "--config", str(file)])
        if code not in (0, 1, 2) or "internal error" in err or (code == 2 and not err.strip()):
            crashed.append(f"{'.'.join(map(str, path))} = {value!r}: exit {code}: {err.strip()[:300]}")
    assert not crashed, "\n".join(crashed[:10])


@pytest.mark.parametrize("demand", ["teams.yaml", "serving-requests.yaml", "prometheus"])
def test_a_mistyped_demand_input_is_refused_in_one_line(demand: str, tmp_path: Path) -> None:
    """Each field of a demand file (and of a Prometheus export) given a value of the wrong kind: exit 0, 1 or 2, never 70.

    The sweep that made this a test found a label value that was not text crashing the export reader (label sets
    map names to strings: prometheus/model LabelSet) and a peak of 1e30 GPUs sizing for ever.
    """
    if demand == "prometheus":
        doc: Any = prometheus_export({("serving", "nvidia_com_gpu"): [1, 2, 3, 4], ("data-platform", "nvidia_com_gpu"): [0, 8, 8, 2]})
        file = tmp_path / "usage.json"
    else:
        doc = yaml.safe_load((ROOT / "examples" / "demand" / demand).read_text())
        file = tmp_path / "demand.yaml"
    crashed = []
    for path in paths(doc):
        value = wrong_for(path)
        file.write_text(json.dumps(replaced(doc, path, value)) if demand == "prometheus" else yaml.safe_dump(replaced(doc, path, value)))
        code, err = run(["capacity", "plan", "--demand", str(file), "--stack", "prod"])
        if code not in (0, 1, 2) or "internal error" in err:
            crashed.append(f"{'.'.join(map(str, path))} = {value!r}: exit {code}: {err.strip()[:300]}")
    assert not crashed, "\n".join(crashed[:10])
