"""Spot over several instance types: which types a Spot pool lists, what a Spot node-hour is priced at, and the
fallback the written stack gets.

EKS hands a Spot managed node group's Auto Scaling group every type in `instanceTypes` and EC2 launches whichever
pool has capacity (EKS CreateNodegroup `instanceTypes`, capacityType SPOT): several types are what lets a reclaimed
pool be replaced, and any of them may be the one billed. So the plan lists the planned type and the others of its
GPU model and GPU count that hold the tasks' shape within 1.5x its list price, prices a Spot node-hour at the
dearest one's Spot estimate, and plans no Spot over a single type. The on-demand fallback is the Spot pool's own
fallback group, which the program sizes to the pool's Spot quota (gpu_platform.pools.fallback_pool; the gate's
spot-fallback-sized and spot-fallback-for-non-interruptible judge it).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.planning.demand import Shape
from gpu_platform.planning.planner import spot_types
from gpu_platform.pools import node_groups
from gpu_platform.spec.loader import load_stack_file
from tests.conftest import ROOT
from tests.planning.helpers import plan_json, row, run_cli

CATALOG = load_catalog()
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


@pytest.mark.parametrize(
    ("planned", "shape", "expected"),
    [
        # g6e.4xlarge lists at $3.00, past 1.5 x $1.86
        ("g6e.xlarge", None, ("g6e.xlarge", "g6e.2xlarge")),
        ("g6.xlarge", None, ("g6.xlarge", "g6.2xlarge")),
        ("g5.xlarge", None, ("g5.xlarge", "g5.2xlarge")),
        ("g4dn.xlarge", None, ("g4dn.xlarge", "g4dn.2xlarge")),
        # 16 vCPU per GPU: only g6.4xlarge and larger hold it, and g6.8xlarge ($2.01) is past 1.5 x $1.32
        ("g6.4xlarge", Shape(1, 16.0, 8.0), ("g6.4xlarge",)),
        # eight L40S: one type in the catalog; eight H100: one type
        ("g6e.48xlarge", None, ("g6e.48xlarge",)),
        ("p5.48xlarge", None, ("p5.48xlarge",)),
        # four A10G: g5.24xlarge ($8.14) is within 1.5 x $5.67
        ("g5.12xlarge", None, ("g5.12xlarge", "g5.24xlarge")),
    ],
)
def test_a_spot_pool_lists_its_gpu_and_count_within_the_price_span(planned: str, shape: Shape | None, expected: tuple[str, ...]) -> None:
    got = spot_types(CATALOG.instance(planned), CATALOG, shape)
    assert tuple(t.name for t in got) == expected
    first = CATALOG.instance(planned)
    assert all(t.gpu.name == first.gpu.name and t.gpus == first.gpus for t in got)


def _batch_trace(tmp_path: Path, gpus: int) -> Path:
    """Sixty BE (batch, interruptible) tasks of `gpus` whole GPUs over ten days, staggered."""
    rows = [f"b{i},8000,16384,{gpus},1000,,BE,Running,{i * 14400},{i * 14400 + 7200},{i * 14400}" for i in range(60)]
    path = tmp_path / "batch.csv"
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path


def test_one_type_gets_no_spot_and_the_plan_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", str(_batch_trace(tmp_path, 8)), "--window", "full")
    batch = row(doc, "plan", "batch")
    assert batch["instanceType"] == "g6e.48xlarge"
    assert batch["spot"] == 0 and batch["spotInstanceTypes"] == []
    note = next(n for n in doc["assumptions"]["notes"] if n.startswith("batch/any: interruptible"))
    assert "g6e.48xlarge is the only priced type with 8 x L40S" in note


def test_spot_is_priced_at_the_dearest_listed_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A declared interruptible batch demand on L40S: Spot over g6e.xlarge and g6e.2xlarge, a node-hour at 40 % of
    g6e.2xlarge's list, in both the full-size and the expected bill."""
    doc = plan_json(capsys, "--demand", str(ROOT / "examples" / "demand" / "alibaba-gpu-2023.yaml"))
    batch = row(doc, "plan", "batch", "L40S")
    assert batch["spot"] > 0
    assert batch["spotInstanceTypes"] == ["g6e.xlarge", "g6e.2xlarge"]
    dearest = CATALOG.instance("g6e.2xlarge").price_per_hour
    assert batch["spotNodeHour"] == round(dearest * (1 - doc["assumptions"]["spotDiscount"]), 4)
    note = next(n for n in doc["assumptions"]["notes"] if n.startswith("batch/L40S: Spot over"))
    assert f"${batch['spotNodeHour']:.2f} a node-hour" in note and f"({batch['spotFallback']} GPUs" in note


def test_the_written_spot_pool_lists_the_types_and_its_fallback_group_holds_its_quota(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "Pulumi.planned.yaml"
    doc = plan_json(capsys, "--demand", str(ROOT / "examples" / "demand" / "teams.yaml"), "--stack", "prod", "--write-stack", str(out))
    spec = load_stack_file(out, "planned")
    written = set(doc["plan"]["writtenStack"]["updated"] + doc["plan"]["writtenStack"]["added"])
    spots = [p for p in spec.node_pools if p.capacity == "spot" and p.name in written and p.scaling is not None and p.scaling.max_size > 0]
    assert spots, "the plan puts interruptible work on Spot"
    groups = {g.name: g for g in node_groups(spec, CATALOG)}
    kept = {k["pool"]: k for k in doc["plan"]["writtenStack"]["instanceTypesKept"]}
    for pool in spots:
        model = next(m["gpuModel"] for m in doc["plan"]["classes"] if m["class"] == pool.workload_class and m["spot"] and m["gpuModel"] != "any")
        plan = row(doc, "plan", pool.workload_class, model)
        if pool.name in kept:  # an existing Spot pool is resized in place, its types kept and listed
            k = kept[pool.name]
            assert (k["instanceTypes"], k["planned"]) == (list(pool.instance_types), plan["spotInstanceTypes"])
        else:
            assert list(pool.instance_types) == plan["spotInstanceTypes"]
        quota = sum(q.gpus for t in spec.tenants for q in t.quotas if q.pool == pool.name)
        fallback = groups[pool.name + "-fallback"]
        assert fallback.capacity == "on-demand" and fallback.instance_types == pool.instance_types
        assert fallback.scaling is not None and fallback.scaling.max_size == math.ceil(quota / CATALOG.instance(pool.instance_types[0]).gpus)
        gpu = CATALOG.instance(pool.instance_types[0]).gpu.name
        ondemand = next(
            p
            for p in spec.node_pools
            if p.name in written
            and p.name.endswith("-ondemand")
            and p.workload_class == pool.workload_class
            and CATALOG.instance(p.instance_types[0]).gpu.name == gpu
        )
        assert ondemand.scaling is not None and ondemand.scaling.max_size == plan["nodes"]["onDemand"]  # no headroom Spot pods cannot reach


def test_a_base_spot_pool_of_one_type_is_not_given_the_plans_spot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """prod's infer-l4-spot cut to g6.xlarge alone: the plan's L4 Spot goes to a pool of its own two types, and the
    one-type pool is kept as the stack had it (listed in `kept`)."""
    base = tmp_path / "Pulumi.one.yaml"
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    assert "instanceTypes: [g6.2xlarge, g6.4xlarge, g6.8xlarge, g6.16xlarge]" in text
    base.write_text(text.replace("instanceTypes: [g6.2xlarge, g6.4xlarge, g6.8xlarge, g6.16xlarge]", "instanceTypes: [g6.xlarge]", 1))
    out = tmp_path / "Pulumi.out.yaml"
    doc = plan_json(capsys, "--demand", str(ROOT / "examples" / "demand" / "teams.yaml"), "--config", str(base), "--write-stack", str(out))
    written = doc["plan"]["writtenStack"]
    assert "infer-l4-spot" in written["kept"] and "infer-l4-spot" not in written["updated"]
    spec = load_stack_file(out, "out")
    planned = next(p for p in spec.node_pools if p.name in written["added"] and p.capacity == "spot" and p.workload_class == "inference")
    assert list(planned.instance_types) == ["g6.xlarge", "g6.2xlarge"]


def test_kept_types_are_priced_beside_the_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """prod's infer-l4-spot lists g6.2xlarge to g6.16xlarge; the plan priced g6.xlarge and g6.2xlarge. Kept in place,
    its Spot node-hour is the dearest kept type's estimate (g6.16xlarge x 0.4), not the plan's (g6.2xlarge x 0.4),
    and the month at full size costs that difference x 730 h x the pool's max nodes more; an On-Demand pool's
    node-hour is its first type's list (a managed node group launches On-Demand types in priority order)."""
    out = tmp_path / "Pulumi.planned.yaml"
    doc = plan_json(capsys, "--demand", str(ROOT / "examples" / "demand" / "teams.yaml"), "--stack", "prod", "--write-stack", str(out))
    kept = {k["pool"]: k for k in doc["plan"]["writtenStack"]["instanceTypesKept"]}
    off = 1 - doc["assumptions"]["spotDiscount"]
    spot = kept["infer-l4-spot"]
    price = {t: CATALOG.instance(t).price_per_hour or 0.0 for t in ("g6.xlarge", "g6.2xlarge", "g6.16xlarge")}
    assert spot["nodeHour"] == round(price["g6.16xlarge"] * off, 4)
    assert spot["plannedNodeHour"] == round(price["g6.2xlarge"] * off, 4)
    spec = load_stack_file(out, "planned")
    nodes = next(p for p in spec.node_pools if p.name == "infer-l4-spot").scaling
    assert nodes is not None and spot["nodes"] == nodes.max_size > 0
    assert spot["monthlyDifferenceAtFullSize"] == pytest.approx((price["g6.16xlarge"] - price["g6.2xlarge"]) * off * 730 * nodes.max_size, abs=0.01)
    ondemand = kept["infer-l4-ondemand"]
    assert ondemand["instanceTypes"][0] == "g6.2xlarge"
    assert (ondemand["nodeHour"], ondemand["plannedNodeHour"]) == (price["g6.2xlarge"], price["g6.xlarge"])
    code, text, _ = run_cli(capsys, "capacity", "plan", "--demand", str(ROOT / "examples" / "demand" / "teams.yaml"), "--stack", "prod")
    assert code == 0 and "Kept pool" not in text  # only a written stack keeps pools
    _, text, _ = run_cli(
        capsys,
        "capacity",
        "plan",
        "--demand",
        str(ROOT / "examples" / "demand" / "teams.yaml"),
        "--stack",
        "prod",
        "--write-stack",
        str(tmp_path / "again.yaml"),
    )
    line = next(x for x in text.splitlines() if x.startswith("Kept pool infer-l4-spot's instance types"))
    assert f"${spot['monthlyDifferenceAtFullSize']:,.0f} a month more at full size ({nodes.max_size} nodes)" in line
