"""`--write-stack`: the written stack passes `check`, its quotas fill its pools, and its pools carry the plan.

Kueue admits against nominal quota per flavor (kueue v0.19.2 pkg/cache/scheduler clusterqueue.go):
quotas that add up to the pool's GPUs neither strand capacity nor promise more than exists.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.commands.check import check_stack
from gpu_platform.engine import run_program
from gpu_platform.k8s.demand import DEMAND_CONFIGMAP
from tests.conftest import ROOT, spec_for, stack_path
from tests.planning.helpers import TRACE_FILES, plan_json, require_trace, row, run_cli

TEAMS = ROOT / "examples" / "demand" / "teams.yaml"


def written(capsys: pytest.CaptureFixture[str], tmp_path: Path, demand: Path, stack: str) -> tuple[dict[str, Any], Path, dict[str, Any]]:
    out = tmp_path / f"Pulumi.planned-{stack}.yaml"
    out.unlink(missing_ok=True)
    doc = plan_json(capsys, "--demand", str(demand), "--stack", stack, "--write-stack", str(out))
    return doc, out, yaml.safe_load(out.read_text())["config"]


def blocking(violations: list[Any], base: str) -> list[Any]:
    """Mandatory violations (the base stack's tenants are the only ones: the writer adds none)."""
    return [v for v in violations if v.level == "mandatory"]


def pool_gpus(pool: dict[str, Any]) -> int:
    return int(pool["scaling"]["max"]) * load_catalog().instance(pool["instanceTypes"][0]).gpus


@pytest.mark.parametrize("stack", ["prod"])
def test_stack_from_declared_demand_passes_check(stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc, out, cfg = written(capsys, tmp_path, TEAMS, stack)
    _, violations = check_stack(out, out.stem.removeprefix("Pulumi."), root=ROOT)
    assert blocking(violations, stack) == []
    assert not [v for v in violations if v.policy in ("demand-coverage", "spot-fallback-for-non-interruptible")]
    w = doc["plan"]["writtenStack"]
    pools = {p["name"]: p for p in cfg["gpu-platform:nodePools"]}
    planned = {n: pools[n] for n in w["updated"] + w["added"]}
    for cls in ("training", "inference", "batch"):
        plan = row(doc, "plan", cls)
        mine = [p for p in planned.values() if p["workloadClass"] == cls]
        assert sum(pool_gpus(p) for p in mine if p["capacity"] == "spot") == plan["spot"]
        floor = sum(p["scaling"]["min"] * load_catalog().instance(p["instanceTypes"][0]).gpus for p in mine if p["capacity"] != "spot")
        assert floor >= plan["reserved"]
    for pool in planned.values():  # every planned pool's GPUs are promised exactly once
        quota = sum(q["gpus"] for t in cfg["gpu-platform:tenants"] for q in t["quotas"] if q["pool"] == pool["name"])
        assert quota == pool_gpus(pool), pool["name"]
    assert {d["workloadClass"] for d in cfg["gpu-platform:demand"]} == {"training", "inference", "batch"}


def test_teams_are_the_stacks_tenants_and_a_reserved_pools_layout_stays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """teams.yaml's teams are prod's tenants (kept with every key). Its MIG demand sizes the reserved p4de pool as
    all-3g.40gb, but re-partitioning a pool evicts its pods (sharing-layout-changed): the pool keeps all-balanced and
    the output says so; the pool the plan adds carries the plan's layout."""
    doc, _, cfg = written(capsys, tmp_path, TEAMS, "prod")
    tenants = {t["name"]: t for t in cfg["gpu-platform:tenants"]}
    assert set(tenants) == {t.name for t in spec_for("prod").tenants}
    assert tenants["serving"]["groups"] == ["serving-oncall"]  # kept from the base stack's tenant of that name
    pools = {p["name"]: p for p in cfg["gpu-platform:nodePools"]}
    assert pools["infer-a100-mig"]["sharing"] == {"mode": "mig", "migConfig": "all-balanced"}
    assert doc["plan"]["writtenStack"]["layoutsKept"] == [{"pool": "infer-a100-mig", "sharing": "mig all-balanced", "planned": "mig all-3g.40gb"}]
    added = [pools[n] for n in doc["plan"]["writtenStack"]["added"] if pools[n]["instanceTypes"] == ["p4de.24xlarge"]]
    assert added and all(p["sharing"] == {"mode": "mig", "migConfig": "all-3g.40gb"} for p in added)
    shared = [p for p in cfg["gpu-platform:nodePools"] if p.get("sharing", {}).get("mode") == "time-slicing"]
    assert shared and all(p["sharing"]["replicas"] == 4 for p in shared)


def test_reserved_tier_keeps_the_base_reservation_as_given_supply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """prod reserves 4 p5.48xlarge (cr-0a1b2c3d4e5f60718): given supply, billed at list. teams.yaml states a 70 % floor,
    floor(0.7 x 56 x 1.03^3 / 8) = 5 nodes: the reservation's 4 stay, 1 more is a `-baseline` pool to commit."""
    doc, _, cfg = written(capsys, tmp_path, TEAMS, "prod")
    p = row(doc, "plan", "training", "H100-80GB")
    assert p["nodes"]["reserved"] == 5 and p["existingReserved"] == 32
    assert p["instrument"] == "odcr (existing, 4 nodes) + savings-plan-1y"
    pools = {p["name"]: p for p in cfg["gpu-platform:nodePools"]}
    reserved = pools["train-h100-reserved"]  # the base pool itself, under its own name
    assert reserved["reservation"] == {"id": "cr-0a1b2c3d4e5f60718", "placementGroup": "gpu-prod-h100-cpg"}
    assert reserved["scaling"] == {"min": 4, "desired": 4, "max": 4}
    assert reserved["efa"] is True and reserved["availabilityZones"] == ["us-east-1a"] and reserved["rootVolumeGiB"] == 1000
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
    written stack leaves its floor under target, and with the Spot pools' own fallback groups switched off
    (`fallback: false`) its Spot has no fallback, and `check` says so."""
    _, _, cfg = written(capsys, tmp_path, TEAMS, "prod")
    for d in cfg["gpu-platform:demand"]:
        if d["workloadClass"] == "inference":
            d["p95"] = d["p95"] * 3
            d["interruptible"] = False
    for p in cfg["gpu-platform:nodePools"]:
        if p["capacity"] == "spot":
            p["fallback"] = False
    grown = tmp_path / "Pulumi.grown.yaml"
    grown.write_text(yaml.safe_dump({"config": cfg}))
    _, violations = check_stack(grown, "grown", root=ROOT)
    fired = {(v.policy, v.level) for v in violations}
    assert ("demand-coverage", "advisory") in fired
    assert ("spot-fallback-for-non-interruptible", "mandatory") in fired
    code, _, _ = run_cli(capsys, "check", "--config", str(grown))
    assert code == 1


def test_prod_round_trips_with_nothing_lost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Merging a plan into prod keeps every pool (the Capacity Block, the H100 MIG pool), every key of a resized pool
    (`efa`, `rootVolumeGiB`, zones, reservations), every tenant key (borrowing and lending limits, fair-share weight,
    resources), every comment line and every non-planning section byte for byte."""
    base_text = stack_path("prod").read_text()
    base = yaml.safe_load(base_text)["config"]
    doc, out, cfg = written(capsys, tmp_path, TEAMS, "prod")
    text = out.read_text()
    for line in base_text.splitlines():
        if line.strip().startswith("#"):
            assert line in text, f"comment lost: {line}"
    for key, value in base.items():
        if key not in ("gpu-platform:nodePools", "gpu-platform:tenants"):
            assert cfg[key] == value, key
    w = doc["plan"]["writtenStack"]
    pools = {p["name"]: p for p in cfg["gpu-platform:nodePools"]}
    for old in base["gpu-platform:nodePools"]:
        new = pools[old["name"]]
        if old["name"] in w["kept"]:
            assert new == old, old["name"]
        else:
            assert set(old) <= set(new), old["name"]
            assert {k: v for k, v in new.items() if k not in ("scaling", "sharing")} == {
                k: v for k, v in old.items() if k not in ("scaling", "sharing")
            }
    assert {"train-h100-block", "infer-h100-mig"} <= set(w["kept"])
    tenants = {t["name"]: t for t in cfg["gpu-platform:tenants"]}
    for old in base["gpu-platform:tenants"]:
        new = tenants[old["name"]]
        assert {k: v for k, v in new.items() if k != "quotas"} == {k: v for k, v in old.items() if k != "quotas"}
        for q in old["quotas"]:
            if q["pool"] in w["kept"]:
                assert q in new["quotas"], (old["name"], q)
    quota = {(t, q["pool"]): q for t, tt in tenants.items() for q in tt["quotas"]}
    assert quota[("llm-training", "train-h100-reserved")]["lendingLimit"] == 8  # kept: 8 <= the new quota
    assert quota[("foundation-research", "train-h100-reserved")]["borrowingLimit"] == 8
    assert quota[("llm-training", "train-h100-block")] == {"pool": "train-h100-block", "gpus": 16}


def test_spot_quota_only_for_interruptible_teams(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In teams.yaml `serving` is not interruptible and `search-ranking` is (half its work): prod gave serving 16 GPUs of
    the L4 Spot pool; the merged stack gives that pool's quota to search-ranking alone."""
    _, _, cfg = written(capsys, tmp_path, TEAMS, "prod")
    spot = {p["name"] for p in cfg["gpu-platform:nodePools"] if p["capacity"] == "spot"}
    holders = {t["name"] for t in cfg["gpu-platform:tenants"] for q in t["quotas"] if q["pool"] == "infer-l4-spot"}
    assert holders == {"search-ranking"}
    for t in cfg["gpu-platform:tenants"]:
        if t["name"] in ("llm-training", "serving"):  # declared interruptible: false
            assert not [q for q in t["quotas"] if q["pool"] in spot], t["name"]


def test_never_overwrites_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An existing file, and above all the base stack itself, is not overwritten: one line, exit 2; --force replaces."""
    out = tmp_path / "Pulumi.next.yaml"
    out.write_text("# mine\n")
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(TEAMS), "--stack", "prod", "--write-stack", str(out))
    assert code == 2 and err.strip() == f"{out}: --write-stack: exists; not overwritten; allowed: a new file, or --force to replace it"
    assert out.read_text() == "# mine\n"
    base = tmp_path / "Pulumi.base.yaml"
    base.write_text(stack_path("prod").read_text())
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(TEAMS), "--config", str(base), "--write-stack", str(base))
    assert code == 2 and "is the base stack it was planned from; not overwritten" in err
    assert base.read_text() == stack_path("prod").read_text()
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(TEAMS), "--stack", "prod", "--write-stack", str(out), "--force")
    assert code == 0, err
    assert out.read_text().startswith("# Written by `gpu-platform capacity plan")


def test_a_team_the_stack_has_no_tenant_for_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """teams.yaml against dev: its teams are no tenants of dev. A tenant needs its people's access (accessRoleArns,
    whose EKS access entries carry its groups), which no plan knows: one line per team, exit 2, nothing written."""
    out = tmp_path / "Pulumi.next.yaml"
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(TEAMS), "--stack", "dev", "--write-stack", str(out))
    assert code == 2 and not out.exists()
    lines = err.strip().splitlines()
    want = "which is no tenant of this stack; add the tenant first (name, groups, cohort, priority, accessRoleArns)"
    assert lines and all(want in x for x in lines)
    assert any("team 'llm-training'" in x for x in lines)


def test_the_written_stack_passes_check_base_except_what_the_output_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The written stack, committed over the base stack in a pull request: `check --base` (state and change rules) has
    no mandatory finding; every quota that moved is in the output, as the two files show it, and nothing else moved."""
    from tests.change.gitrepo import git, make_repo

    repo = make_repo(tmp_path / "repo")
    doc, out, cfg = written(capsys, tmp_path, TEAMS, "prod")
    (repo / "stacks" / "Pulumi.prod.yaml").write_text(out.read_text())
    git(repo, "commit", "-qam", "capacity plan --write-stack")
    code, text, err = run_cli(capsys, "check", "--stack", str(repo / "stacks" / "Pulumi.prod.yaml"), "--base", "base", "--format", "json")
    assert code == 0, text + err
    findings = json.loads(text)
    assert not [f for f in _all_findings(findings) if f.get("level") == "mandatory"], findings
    before = {(t.name, q.pool): q.gpus for t in spec_for("prod").tenants for q in t.quotas}
    after = {(t["name"], q["pool"]): q["gpus"] for t in cfg["gpu-platform:tenants"] for q in t.get("quotas") or []}
    pairs = set(before) | set(after)
    moved = {(t, p): (before.get((t, p), 0), after.get((t, p), 0)) for t, p in pairs if before.get((t, p), 0) != after.get((t, p), 0)}
    listed = {(q["tenant"], q["pool"]): (q["before"], q["after"]) for q in doc["plan"]["writtenStack"]["quotaChanges"]}
    assert listed == moved and ("serving", "infer-l4-spot") in listed


def _all_findings(doc: Any) -> list[dict[str, Any]]:
    """Every finding object anywhere in `check --format json`'s document."""
    if isinstance(doc, dict):
        here = [doc] if "policy" in doc and "level" in doc else []
        return here + [f for v in doc.values() for f in _all_findings(v)]
    if isinstance(doc, list):
        return [f for v in doc for f in _all_findings(v)]
    return []


def test_a_refused_target_leaves_no_chart_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every target is checked before the first file is written: an existing --write-stack file (no --force) or a
    missing folder refuses the run, and the chart is not written either."""
    chart = tmp_path / "plan.svg"
    taken = tmp_path / "taken.yaml"
    taken.write_text("old\n")
    for target in (taken, tmp_path / "missing" / "out.yaml"):
        code, out, err = run_cli(
            capsys, "capacity", "plan", "--demand", str(TEAMS), "--stack", "prod", "--chart", str(chart), "--write-stack", str(target)
        )
        assert (code, out) == (2, ""), err
        assert not chart.exists()
    assert taken.read_text() == "old\n"
