"""The purchase line: what a buyer signs per planned commitment, recomputed here from the catalog's own YAML."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import ROOT
from tests.planning.helpers import plan_json, run_cli

TEAMS = ROOT / "examples" / "demand" / "teams.yaml"
CATALOG = yaml.safe_load((ROOT / "infra" / "gpu_platform" / "data" / "catalog.yaml").read_text())
COMMITMENTS = yaml.safe_load((ROOT / "infra" / "gpu_platform" / "data" / "commitments.yaml").read_text())


def _price(instance_type: str) -> float:
    return float(CATALOG["instance_types"][instance_type]["price"])


def test_every_new_commitment_has_a_purchase_line(capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", str(TEAMS), "--stack", "prod")
    discount = COMMITMENTS["instruments"]["savings-plan-1y"]["discount"]
    rows = {(r["class"], r["gpuModel"]): r for r in doc["plan"]["classes"]}
    lines = doc["plan"]["purchases"]
    assert {(p["class"], p["gpuModel"]) for p in lines} == {k for k, r in rows.items() if k[1] != "any" and r["reserved"] > r["existingReserved"]}
    for p in lines:
        r = rows[p["class"], p["gpuModel"]]
        assert p["gpus"] == r["reserved"] - r["existingReserved"]
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
