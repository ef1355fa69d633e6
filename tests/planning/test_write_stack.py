"""`--write-stack`: the written stack passes `check`, its quotas fill its pools, and its pools carry the plan.

Kueue admits against nominal quota per flavor (kueue v0.19.2 pkg/cache/scheduler clusterqueue.go):
quotas that add up to the pool's GPUs neither strand capacity nor promise more than exists.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.commands.check import check_stack
from gpu_platform.engine import run_program
from gpu_platform.k8s.demand import DEMAND_CONFIGMAP
from tests.conftest import ROOT, spec_for
from tests.planning.helpers import TRACE_FILES, plan_json, require_trace, row, run_cli

TEAMS = ROOT / "examples" / "demand" / "teams.yaml"


def written(capsys: pytest.CaptureFixture[str], tmp_path: Path, demand: Path, stack: str) -> tuple[dict[str, Any], Path, dict[str, Any]]:
    out = tmp_path / f"Pulumi.planned-{stack}.yaml"
    doc = plan_json(capsys, "--demand", str(demand), "--stack", stack, "--write-stack", str(out))
    return doc, out, yaml.safe_load(out.read_text())["config"]


def blocking(violations: list[Any], base: str) -> list[Any]:
    """Mandatory violations, except that tenants the planner adds (not in the base stack) have no IAM roles yet.

    `tenant-groups-have-principals` rightly reports those: a new team's `accessRoleArns` are for its
    owners to add before `pulumi up`; every tenant the base stack already had keeps its roles.
    """
    known = {t.ns for t in spec_for(base).tenants}
    out = []
    for v in violations:
        new_tenant = v.policy == "tenant-groups-have-principals" and not any(v.resource.startswith(f"tenant-{ns}-") for ns in known)
        if v.level == "mandatory" and not new_tenant:
            out.append(v)
    return out


def pool_gpus(pool: dict[str, Any]) -> int:
    return int(pool["scaling"]["max"]) * load_catalog().instance(pool["instanceTypes"][0]).gpus


@pytest.mark.parametrize("stack", ["prod", "dev", "staging"])
def test_stack_from_declared_demand_passes_check(stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc, out, cfg = written(capsys, tmp_path, TEAMS, stack)
    _, violations = check_stack(out, out.stem.removeprefix("Pulumi."), root=ROOT)
    assert blocking(violations, stack) == []
    assert not [v for v in violations if v.policy in ("demand-coverage", "demand-spot-exposure", "spot-fallback-for-non-interruptible")]
    pools = {p["name"]: p for p in cfg["gpu-platform:nodePools"]}
    for cls in ("training", "inference", "batch"):
        plan = row(doc, "plan", cls)
        mine = [p for p in pools.values() if p["workloadClass"] == cls]
        assert sum(pool_gpus(p) for p in mine if p["capacity"] == "spot") == plan["spot"]
        floor = sum(p["scaling"]["min"] * load_catalog().instance(p["instanceTypes"][0]).gpus for p in mine if p["capacity"] != "spot")
        assert floor >= plan["reserved"]
    for pool in pools.values():  # every pool's GPUs are promised exactly once
        quota = sum(q["gpus"] for t in cfg["gpu-platform:tenants"] for q in t["quotas"] if q["pool"] == pool["name"])
        assert quota == pool_gpus(pool), pool["name"]
    assert {d["workloadClass"] for d in cfg["gpu-platform:demand"]} == {"training", "inference", "batch"}


def test_teams_become_tenants_and_mig_demand_a_mig_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, cfg = written(capsys, tmp_path, TEAMS, "prod")
    tenants = {t["name"]: t for t in cfg["gpu-platform:tenants"]}
    assert set(tenants) == {"llm-training", "foundation-research", "serving", "search-ranking", "data-platform"}
    assert tenants["serving"]["groups"] == ["serving-oncall"]  # kept from the base stack's tenant of that name
    mig = [p for p in cfg["gpu-platform:nodePools"] if p.get("sharing", {}).get("mode") == "mig"]
    assert mig and all(p["sharing"]["migConfig"] == "all-3g.40gb" and p["instanceTypes"] == ["p4de.24xlarge"] for p in mig)
    shared = [p for p in cfg["gpu-platform:nodePools"] if p.get("sharing", {}).get("mode") == "time-slicing"]
    assert shared and all(p["sharing"]["replicas"] == 4 for p in shared)


def test_reserved_tier_reuses_the_base_reservation_up_to_its_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """prod reserves 4 p5.48xlarge (cr-0a1b2c3d4e5f60718); the plan wants 5 reserved nodes: 4 reuse it, 1 is a baseline pool."""
    doc, _, cfg = written(capsys, tmp_path, TEAMS, "prod")
    assert row(doc, "plan", "training", "H100-80GB")["nodes"]["reserved"] == 5
    pools = {p["name"]: p for p in cfg["gpu-platform:nodePools"]}
    reserved = pools["train-h100-80gb-reserved"]
    # The whole reservation is reused, with the cluster placement group it was made in (EFA pools).
    assert reserved["reservation"] == {"id": "cr-0a1b2c3d4e5f60718", "placementGroup": "gpu-prod-h100-cpg"}
    assert reserved["scaling"] == {"min": 4, "desired": 4, "max": 4}
    assert reserved["efa"] is True and reserved["availabilityZones"] == ["us-east-1a"]
    assert pools["train-h100-80gb-baseline"]["scaling"] == {"min": 1, "desired": 1, "max": 1}


def test_stack_from_the_trace_passes_check_and_records_demand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = require_trace(TRACE_FILES[0])
    doc, out, cfg = written(capsys, tmp_path, trace, "prod")
    _, violations = check_stack(out, "planned-prod", root=ROOT)
    assert blocking(violations, "prod") == []
    plan = run_program(cfg, "planned-prod")
    cm = next(r for r in plan.resources if r.inputs.get("metadata", {}).get("name") == DEMAND_CONFIGMAP)
    demand = yaml.safe_load(cm.inputs["data"]["demand.json"])
    assert {d["workloadClass"]: d["p95"] for d in demand} == {d["class"]: d["p95"] for d in doc["demand"]["classes"] if d["gpuModel"] == "any"}


def test_invalid_result_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An on-prem base cannot take planned EKS node groups: exit 2, one line, no stack file and no chart either."""
    out = tmp_path / "Pulumi.x.yaml"
    chart = tmp_path / "plan.svg"
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(TEAMS), "--stack", "onprem", "--write-stack", str(out), "--chart", str(chart))
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.endswith(
        "Pulumi.onprem.yaml: gpu-platform:cluster.provider: --write-stack sizes EKS node groups; allowed: an EKS base stack (--stack NAME)"
    )
    assert not out.exists() and not chart.exists()


def test_committed_trace_demand_is_what_the_script_derives() -> None:
    """examples/demand/alibaba-gpu-2023.yaml (what `make demo` plans) is the trace's own quantiles, not invented numbers."""
    trace = require_trace(TRACE_FILES[0])
    spec = importlib.util.spec_from_file_location("derive", ROOT / "scripts" / "demand-from-trace.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.derive(trace) == (ROOT / "examples" / "demand" / "alibaba-gpu-2023.yaml").read_text()


def test_check_sees_the_written_demand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: stack key `demand` -> the program's ConfigMap -> the capacity rules. Tripling inference's P95 in the
    written stack leaves its floor under target and its Spot without fallback, and `check` says so."""
    _, _, cfg = written(capsys, tmp_path, TEAMS, "prod")
    for d in cfg["gpu-platform:demand"]:
        if d["workloadClass"] == "inference":
            d["p95"] = d["p95"] * 3
            d["interruptible"] = False
    grown = tmp_path / "Pulumi.grown.yaml"
    grown.write_text(yaml.safe_dump({"config": cfg}))
    _, violations = check_stack(grown, "grown", root=ROOT)
    fired = {(v.policy, v.level) for v in violations}
    assert ("demand-coverage", "advisory") in fired
    assert ("spot-fallback-for-non-interruptible", "mandatory") in fired
    code, _, _ = run_cli(capsys, "check", "--config", str(grown))
    assert code == 1
