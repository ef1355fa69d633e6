"""The demand file's JSON Schema and the stack key `demand`: the examples validate, bad stack demand is one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from gpu_platform.planning.declared import schema
from tests.conftest import ROOT, stack_path
from tests.planning.helpers import run_cli


def test_schema_is_valid_and_the_examples_follow_it() -> None:
    Draft202012Validator.check_schema(schema())
    for path in sorted((ROOT / "examples" / "demand").glob("*.yaml")):
        errors = list(Draft202012Validator(schema()).iter_errors(yaml.safe_load(path.read_text())))
        assert errors == [], (path.name, [e.message for e in errors])


def test_schema_documents_every_key() -> None:
    entry = schema()["properties"]["demand"]["items"]["properties"]
    planning = schema()["properties"]["planning"]["properties"]
    for name, decl in {**entry, **planning}.items():
        assert decl.get("description"), name


@pytest.mark.parametrize(
    ("demand", "message"),
    [
        (
            [{"workloadClass": "development", "p95": 10, "sla": "batch"}, {"workloadClass": "development", "p95": 5, "sla": "batch"}],
            "gpu-platform:demand[1].workloadClass: 'development' is listed twice; allowed: each workload class once",
        ),
        ([{"workloadClass": "training", "p95": 10, "sla": "training"}], "gpu-platform:demand[0].workloadClass: no node pool serves 'training'"),
        ([{"workloadClass": "development", "p95": -1, "sla": "batch"}], "gpu-platform:demand[0].p95: -1 is out of range; allowed: >= 0"),
        ([{"workloadClass": "development", "p95": 1, "sla": "urgent"}], "gpu-platform:demand[0].sla: 'urgent' is not a valid choice"),
    ],
)
def test_bad_stack_demand_is_one_line(demand: list[dict[str, object]], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(stack_path("dev").read_text())
    doc["config"]["gpu-platform:demand"] = demand
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, out, err = run_cli(capsys, "check", "--config", str(path))
    assert code == 2 and out == "Stack bad: bad input, not checked (1 problem(s) on stderr)\n"
    (line,) = err.strip().splitlines()
    assert line.startswith(f"{path}: ") and message in line, line


def test_make_demo_capacity_plan_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The `capacity plan` line of `make demo` (read from the Makefile), with its chart redirected to tmp."""
    recipe = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    line = next(x.strip() for x in recipe.splitlines() if x.startswith("\t$(BIN)/gpu-platform capacity plan"))
    argv = line.split()[1:]
    argv[argv.index("--chart") + 1] = str(tmp_path / "plan.svg")
    argv = [str(ROOT / a) if a.startswith("examples/") else a for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "inference" in out and "Expected monthly bill" in out
    assert (tmp_path / "plan.svg").read_text().startswith("<svg")
