"""`gpu-platform capacity`: the numbers a platform owner reads before approving a stack change."""

from __future__ import annotations

import json

import pytest

from gpu_platform.capacity import SPOT_PRICE_FACTOR, class_capacity_report, pool_capacity_report
from gpu_platform.catalog import load_catalog
from gpu_platform.cli import main
from tests.conftest import spec_for


def test_prod_pool_sizes_and_quota_coverage() -> None:
    pools = {p.pool: p for p in pool_capacity_report(spec_for("prod"), load_catalog())}
    reserved = pools["train-h100-reserved"]
    assert (reserved.min_gpus, reserved.max_gpus, reserved.gpus_per_node) == (32, 32, 8)
    assert reserved.quota_gpus == 32  # llm-training 24 + foundation-research 8
    assert reserved.quota_coverage == 1.0
    assert reserved.hourly_cost == pytest.approx(4 * 55.04)
    spot = pools["infer-l4-spot"]
    assert spot.hourly_cost == pytest.approx(4 * 0.9776 * SPOT_PRICE_FACTOR)


def test_spot_exposure_and_floor_per_class() -> None:
    classes = {c.workload_class: c for c in class_capacity_report(pool_capacity_report(spec_for("prod"), load_catalog()))}
    assert classes["training"].spot_exposure == 0.0
    assert classes["training"].floor_gpus == 32
    assert classes["inference"].spot_max_gpus == 24
    assert 0 < classes["inference"].spot_exposure < 0.5
    assert classes["batch"].floor_gpus >= 1


def test_capacity_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "--stack", "prod", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stack"] == "prod"
    assert {p["pool"] for p in data["pools"]} == {p.name for p in spec_for("prod").node_pools}
    assert data["monthlyCost"] > 100_000
    assert data["pricing"]["region"] == "us-east-1"


def test_onprem_has_no_price_but_has_capacity(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "--stack", "onprem"]) == 0
    out = capsys.readouterr().out
    assert "hgx-h100-train" in out
    assert "n/a" in out
    assert "$0.00 per month" in out
