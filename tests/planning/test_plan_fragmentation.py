"""`capacity plan --nodes FILE`: GPUs needed = demand / the share the cluster's placement policy can allocate.

The share is the trace paper's replay (planning/fragmentation.py, held against the published simulator's results in
test_fragmentation.py) of the demand's own pod list onto the node list, read at 100 % arrived: what `capacity
fragmentation` prints as `allocatedShareAt["100"]`. Each class then needs at least its fluid demand (the rule of
thumb's P95 + safety stock, or the fluid queue's capacity for the wait target) divided by that share; where the plan's
own placement (jobs on whole nodes, tasks packed first-fit decreasing) already needs more, that holds.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.errors import ConfigError
from gpu_platform.planning.demand import Allocatable
from gpu_platform.planning.fragmentation_choices import POLICIES
from gpu_platform.planning.inputs import load_demand
from gpu_platform.planning.planner import plan
from tests.planning.helpers import plan_json, require_trace, row, run_cli

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def test_the_plan_divides_by_the_share_the_fragmentation_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    nodes, pods = require_trace("openb_node_list_gpu_node.csv"), require_trace("openb_pod_list_default.csv")
    argv = ["--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd", "--seeds", "42", "--format", "json"]
    code, out, err = run_cli(capsys, "capacity", "fragmentation", *argv)
    assert code == 0, err
    measured = json.loads(out)["policies"][0]["allocatedShareAt"]["100"] / 100
    doc = plan_json(capsys, "--demand", str(pods), "--nodes", str(nodes), "--seeds", "42")
    share = doc["assumptions"]["allocatable"]
    assert share["share"] == pytest.approx(measured, abs=1e-4)
    assert (share["policy"], share["nodes"], share["gpus"], share["seeds"]) == ("fgd", 1213, 6212, [42])
    assert share["share"] < 0.97  # the trace's cluster strands GPUs at 100 % arrived: the division matters
    # inference (1-GPU g6 nodes, rule of thumb + 15 %, N+1): its fluid need / share against its packed need
    inf = row(doc, "plan", "inference")
    p95 = row(doc, "demand", "inference")["p95"]
    fluid_nodes = p95 * 1.15 / share["share"]
    packed_nodes = inf["packedNodesP95"] * 1.15
    assert inf["reserved"] + inf["onDemand"] + inf["spot"] == math.ceil(max(fluid_nodes, packed_nodes) - 1e-9) + 1
    assert "allocatable" in inf["basis"]
    without = plan_json(capsys, "--demand", str(pods))
    assert without["assumptions"]["allocatable"] is None
    assert "fragmentation" not in row(without, "plan", "inference")["basis"]


def _cpu_bound(tmp_path: Path) -> tuple[Path, Path]:
    """40 one-GPU pods of 8 cores, running together, and 20 nodes of 4 GPUs and 8 cores: one pod per node."""
    pods = tmp_path / "pods.csv"
    pods.write_text(HEADER + "\n" + "".join(f"p{i},8000,8192,1,1000,,LS,Running,{i * 10},259200,{i * 10}\n" for i in range(40)))
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},8000,262144,4,T4\n" for i in range(20)))
    return pods, nodes


@pytest.mark.parametrize("policy", POLICIES)
def test_a_cluster_that_strands_three_gpus_in_four_quadruples_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str) -> None:
    """Every node takes one pod (its 8 cores), so at 100 % arrived (80 GPUs' worth) 20 of 80 GPUs are allocated: 25 %.
    Inference's 40 GPUs + 15 % = 46 GPUs' worth / 0.25 = 184 GPUs, + 1 spare; without the node list 46 + 1."""
    pods, nodes = _cpu_bound(tmp_path)
    doc = plan_json(capsys, "--demand", str(pods), "--nodes", str(nodes), "--policy", policy, "--seeds", "42-43")
    assert doc["assumptions"]["allocatable"]["share"] == 0.25
    assert doc["assumptions"]["allocatable"]["seedRange"] == [0.25, 0.25]
    inf = row(doc, "plan", "inference")
    assert inf["reserved"] + inf["onDemand"] + inf["spot"] == 185
    assert "46 GPUs' worth / 0.2500 allocatable = 184 GPUs" in inf["basis"]
    plain = row(plan_json(capsys, "--demand", str(pods)), "plan", "inference")
    assert plain["reserved"] + plain["onDemand"] + plain["spot"] == 47
    code, out, _ = run_cli(capsys, "capacity", "plan", "--demand", str(pods), "--nodes", str(nodes), "--seeds", "42")
    assert code == 0
    assert f"Fragmentation: fgd places 25.00% of the GPUs arrived when arrivals reach 100 % of the 80 GPUs on 20 nodes of {nodes}" in out


def test_the_cli_offers_the_replays_options_without_loading_the_planner_or_numpy() -> None:
    """`plan`, `render` and `check` build the same argument parser as `capacity`: it must not import the planner or
    the replay (numpy alone was a tenth of a second of every `plan`)."""
    probe = (
        "import sys; from gpu_platform.cli import _parser; _parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy' or m.startswith('gpu_platform.planning.')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['gpu_platform.planning.fragmentation_choices']"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--nodes", "{nodes}"], "is declared demand: it has no pods to place on the nodes; allowed: --nodes with a trace pod list"),
        (["--policy", "fgd"], "--policy: <root>: given without --nodes; allowed: --policy and --seeds with --nodes FILE"),
        (["--seeds", "42"], "--seeds: <root>: given without --nodes"),
    ],
    ids=["declared-demand", "policy-alone", "seeds-alone"],
)
def test_node_options_that_cannot_apply_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    _, nodes = _cpu_bound(tmp_path)
    demand = Path(__file__).resolve().parents[2] / "examples" / "demand" / "alibaba-gpu-2023.yaml"
    code, out, err = run_cli(capsys, "capacity", "plan", "--demand", str(demand), *[e.format(nodes=nodes) for e in extra])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and expected in err, err


def test_a_bad_node_list_is_refused_before_anything_is_planned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods, _ = _cpu_bound(tmp_path)
    for nodes, expected in [
        (pods, str(pods)),  # the pod list given as the node list
        (tmp_path / "missing.csv", "missing.csv"),
        (tmp_path, str(tmp_path)),
    ]:
        code, out, err = run_cli(capsys, "capacity", "plan", "--demand", str(pods), "--nodes", str(nodes), "--seeds", "42")
        assert code == 2 and out == "", err
        assert expected in err and "Traceback" not in err and "internal error" not in err


def _nodes(tmp_path: Path, rows: str, name: str = "n.csv") -> Path:
    path = tmp_path / name
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + rows)
    return path


def test_hostile_node_lists_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods, _ = _cpu_bound(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        (_nodes(tmp_path, "n1,0,0,8,T4\n", "nocpu.csv"), "places no GPU pod of the demand on these nodes"),  # share 0: no division by it
        (_nodes(tmp_path, "n1,99999999999999999999999,262144,8,T4\n", "huge.csv"), "line 2.cpu_milli: 99999999999999999999999 is out of range"),
        (fifo, "is a FIFO, not a regular file"),  # never opened: opening a FIFO with no writer blocks
    ]
    for nodes, expected in cases:
        code, out, err = run_cli(capsys, "capacity", "plan", "--demand", str(pods), "--nodes", str(nodes), "--seeds", "42")
        assert (code, out) == (2, ""), err
        assert len(err.strip().splitlines()) == 1 and expected in err, err
    code, _, err = run_cli(capsys, "capacity", "fragmentation", "--nodes", str(fifo), "--pods", str(pods))
    assert code == 2 and "is a FIFO" in err


def test_pods_of_a_model_the_nodes_lack_are_left_out_not_counted_as_fragmentation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Half the pods ask for V100M32, which no node has: the share is of the pods that can run there (every node
    takes two 4-core pods here: 100 %), and the basis says how many were left out; if none can run, one line."""
    rows = [f"p{i},4000,8192,1,1000,{'V100M32' if i % 2 else ''},LS,Running,{i * 10},259200,{i * 10}" for i in range(40)]
    pods = tmp_path / "pods.csv"
    pods.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    nodes = _nodes(tmp_path, "".join(f"n{i},8000,262144,2,T4\n" for i in range(10)))
    doc = plan_json(capsys, "--demand", str(pods), "--nodes", str(nodes), "--seeds", "42")
    share = doc["assumptions"]["allocatable"]
    assert share["share"] == 1.0
    assert "20 GPU pods that accept none of its GPU models left out" in share["basis"]
    only_v100 = tmp_path / "v100.csv"
    only_v100.write_text(HEADER + "\n" + "\n".join(r for r in rows if "V100" in r) + "\n")
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(only_v100), "--nodes", str(nodes), "--seeds", "42")
    assert code == 2 and "no GPU pod of the demand accepts a GPU model of these nodes" in err and "V100M32" in err


def test_a_header_with_spaces_reads_the_same_with_and_without_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods, nodes = _cpu_bound(tmp_path)
    spaced = tmp_path / "spaced.csv"
    text = pods.read_text()
    spaced.write_text(text.replace(HEADER, HEADER.replace(",", ", "), 1))
    doc = plan_json(capsys, "--demand", str(spaced), "--nodes", str(nodes), "--seeds", "42")
    assert doc["assumptions"]["allocatable"]["share"] == 0.25


def test_a_share_that_would_buy_past_the_bound_is_refused(tmp_path: Path) -> None:
    """The 100,000-GPU bound per class and model holds after the division by the share, not only before it."""
    pods, _ = _cpu_bound(tmp_path)
    demand = load_demand(pods, load_catalog())
    tiny = Allocatable(0.0001, 0.0001, 0.0001, "fgd", "n.csv", 1, 1, (42,))
    with pytest.raises(ConfigError) as err:
        plan(dataclasses.replace(demand, options=dataclasses.replace(demand.options, allocatable=tiny)), load_catalog())
    assert "at most 100,000 GPUs per class and GPU model" in str(err.value.problems[0])
