"""The purchase line: what a buyer signs per planned commitment, recomputed here from the catalog's own YAML."""

from __future__ import annotations

import csv
from itertools import pairwise

import pytest
import yaml

from tests.conftest import ROOT
from tests.planning.helpers import TRACE_FILES, plan_json, require_trace, row, run_cli

TEAMS = ROOT / "examples" / "demand" / "teams.yaml"
CATALOG = yaml.safe_load((ROOT / "infra" / "gpu_platform" / "data" / "catalog.yaml").read_text())
COMMITMENTS = yaml.safe_load((ROOT / "infra" / "gpu_platform" / "data" / "commitments.yaml").read_text())


def _price(instance_type: str) -> float:
    return float(CATALOG["instance_types"][instance_type]["price"])


def _gpus(instance_type: str) -> int:
    return int(CATALOG["instance_types"][instance_type]["gpus"])


def test_every_new_commitment_has_a_purchase_line(capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", str(TEAMS), "--stack", "prod")
    discount = COMMITMENTS["instruments"]["savings-plan-1y"]["discount"]
    rows = {(r["class"], r["gpuModel"]): r for r in doc["plan"]["classes"]}
    lines = doc["plan"]["purchases"]
    # a line for every new commitment, and for the nodes a plan keeps up every hour (the N+1 spare): up 100 %, committed
    wanted = {k for k, r in rows.items() if k[1] != "any" and (r["reserved"] > r["existingReserved"] or r["alwaysOn"] > 0)}
    assert {(p["class"], p["gpuModel"]) for p in lines} == wanted
    for p in lines:
        r = rows[p["class"], p["gpuModel"]]
        assert p["gpus"] == r["reserved"] - r["existingReserved"] + r["alwaysOn"]
        assert p["alwaysOnNodes"] * _gpus(p["instanceType"]) == r["alwaysOn"]
        assert p["hourlyCommitment"] == pytest.approx(p["nodes"] * _price(p["instanceType"]) * (1 - discount), abs=0.01)
        assert p["termCommitment"] == pytest.approx(p["nodes"] * _price(p["instanceType"]) * (1 - discount) * 730 * 12, abs=0.01)
        assert (p["paybackMonth"] is None) == (p["expectedUtilization"] < p["breakEvenUtilization"])
        assert (p["payment"], p["termMonths"], p["breakEvenUtilization"]) == ("no upfront", 12, 1 - discount)


def test_a_node_bought_for_the_coverage_floor_says_it_never_pays(capsys: pytest.CaptureFixture[str]) -> None:
    """teams.yaml states a 70 % coverage floor: prod's 4 reserved H100 nodes plus one more; that fifth node sits above
    the demand break-even would commit to, so the line says it never pays and why."""
    doc = plan_json(capsys, "--demand", str(TEAMS), "--stack", "prod")
    (h100,) = [p for p in doc["plan"]["purchases"] if p["gpuModel"] == "H100-80GB"]
    assert (h100["nodes"], h100["reason"], h100["paybackMonth"]) == (1, "coverage floor", None)
    code, out, _ = run_cli(capsys, "capacity", "plan", "--demand", str(TEAMS), "--stack", "prod", "--format", "markdown")
    assert code == 0
    assert "Purchase training/H100-80GB: savings-plan-1y (no upfront), commit $" in out
    assert "(bought for the stated coverage floor, not for price)" in out


def test_a_node_up_every_hour_is_committed_though_its_gpus_are_mostly_idle(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32 item 2: over the trace's last 28 days training needs one p5.48xlarge every hour (demand never drops to 0)
    while its GPUs are 23 % busy. On demand that node is billed whole, every hour, so committing it saves 35 % of its
    list price: 0.35 x $55.04 x 730 = $14,063 a month (break-even judged on GPUs bought none)."""
    trace = require_trace(TRACE_FILES[0])
    with trace.open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if int(r["num_gpu"]) > 0]
    end = max(int(r["deletion_time"]) for r in rows)
    start = end - 28 * 86400
    train = [
        (max(int(r["creation_time"]), start), int(r["deletion_time"])) for r in rows if r["qos"] == "Guaranteed" and int(r["deletion_time"]) > start
    ]
    cuts = sorted({start, end, *(t for pair in train for t in pair)})
    idle = sum(b - a for a, b in pairwise(cuts) if not any(s <= a < e for s, e in train))
    assert idle == 0  # independent: some training task runs at every instant of the window
    doc = plan_json(capsys, "--demand", str(trace), "--window-days", "28")
    (line,) = [p for p in doc["plan"]["purchases"] if p["class"] == "training"]
    assert (line["instanceType"], line["nodes"], line["expectedUtilization"]) == ("p5.48xlarge", 1, 1.0)
    assert line["gpuBusy"] == pytest.approx(0.23, abs=0.01)
    assert line["monthlySavingVsOnDemand"] == pytest.approx(0.35 * _price("p5.48xlarge") * 730, abs=0.01)
    plan = row(doc, "plan", "training")
    assert plan["expectedMonthlyCost"] == pytest.approx(0.65 * _price("p5.48xlarge") * 730, abs=0.01)
