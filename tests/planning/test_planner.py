"""The planner's arithmetic on declared demand: the issue's worked figures, safety stock, packing and shortfall.

Worked figures (issue 11): P95 1,000 GPUs with 700 reserved is 70 % coverage; 300 on Spot is 30 %
exposure; 7 on-demand + 3 Spot GPUs at a 50 % Spot discount cost 15 % less than 10 on-demand.
Reserved is sized by break-even (issue 19): declared quantiles draw the quantile function linearly
through (0, 0), (0.5, P50), (0.95, P95), so with P50 = P95 = D the k-th GPU (one per node) is up, and billed
on demand, while demand is above k - 1: 1 - 0.5 (k - 1) / D of the time, and a 35 %-off commitment (break-even 65 %)
reserves the first 0.7 D + 1 GPUs (the last one exactly at break-even: committed or not, it costs the same).
MIG layouts are the catalog's (NVIDIA mig-parted config-default.yaml per PCI device id).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.pricing import HOURS_PER_MONTH
from tests.conftest import stack_path
from tests.planning.helpers import plan_json, row, run_cli, write_demand

L4_HOUR = load_catalog().instance("g6.xlarge").price_per_hour  # the cheapest L4 GPU-hour: one GPU per node


def entry(**kw: Any) -> dict[str, Any]:
    """One demand entry with the defaults these tests share."""
    return {"team": "team-a", "class": "batch", "gpuModel": "L4", "p50": 0, **kw}


def test_worked_coverage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """P50 = P95 = 1,000 GPUs, not interruptible: GPU k is up 1 - 0.5 (k - 1) / 1000 of the time, 65 % for the 701st,
    64.95 % for the 702nd, against the break-even of 35 % off (65 %): 701 reserved (70.1 % coverage), 299 on-demand.
    (Issue 11's 700 counted GPUs busy, not nodes billed.)"""
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry(p50=1000, p95=1000)]})))
    p = row(doc, "plan", "batch")
    assert (p["reserved"], p["onDemand"], p["spot"]) == (701, 299, 0)
    assert p["coverage"] == 0.701
    assert p["nodes"] == {"reserved": 701, "onDemand": 299, "spot": 0}  # g6.xlarge: one L4 per node
    assert (p["instrument"], p["breakEvenUtilization"]) == ("savings-plan-1y", 0.65)
    assert p["reservedUtilization"] == pytest.approx(1 - 0.5 * 350.5 / 1000, abs=1e-4)  # mean busy 1 - 0.5 (k - 0.5) / 1000, k <= 701


def test_worked_coverage_and_spot_exposure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same 1,000 GPUs, all interruptible: a committed GPU is weighed against the hours it would otherwise run,
    partly on Spot. Spot takes up to its cap (30 % of P95: 300 GPUs) of the elastic GPUs; a Spot node-hour is 40 % of
    g6.2xlarge's list ($0.39104, the dearest type listed), 51.4 % below g6.xlarge's $0.8048, and 10 % of Spot hours fall
    back to on-demand, so a Spot hour saves c = 0.9 x 0.5141 = 46.3 % of list. Committing the GPU at base b (b < 700)
    lowers the elastic bill by P(d > b) - c (P(d > b) - P(d > b + 300)) = 1 - b / 2000 - 0.15 c of list per hour, which
    is at least 65 % while b <= 700 - 300 c = 561.2: 562 reserved, 300 on Spot (the cap), 138 on-demand. Before the
    Spot pool was counted its hours were all priced at Spot, uncapped, and nothing was reserved at all."""
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry(p50=1000, p95=1000, interruptible=True)]})))
    p = row(doc, "plan", "batch")
    cat = load_catalog()
    c = 0.9 * (1 - 0.4 * cat.instance("g6.2xlarge").price_per_hour / L4_HOUR)
    assert 561 < 700 - 300 * c < 562
    assert (p["reserved"], p["onDemand"], p["spot"]) == (562, 138, 300)
    assert (p["coverage"], p["spotExposure"]) == (0.562, 0.3)


def test_worked_saving_of_spot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ten GPUs, no reservation, three on Spot at a 50 % discount. The Spot pool lists g6.xlarge and g6.2xlarge (one L4
    each; g6.4xlarge is past 1.5x the price), and any of them may be launched, so a Spot node-hour is priced at half the
    dearest: 7 x $0.8048 + 3 x 0.5 x $0.9776 = $7.10 an hour instead of 10 x $0.8048 (11.8 % less)."""
    doc = plan_json(
        capsys,
        "--demand",
        str(write_demand(tmp_path, {"planning": {"coverageTarget": 0, "spotDiscount": 0.5}, "demand": [entry(p95=10, interruptible=True)]})),
    )
    p = row(doc, "plan", "batch")
    assert (p["reserved"], p["onDemand"], p["spot"]) == (0, 7, 3)
    g6_2xl = load_catalog().instance("g6.2xlarge").price_per_hour
    assert (p["spotInstanceTypes"], p["spotNodeHour"]) == (["g6.xlarge", "g6.2xlarge"], round(0.5 * g6_2xl, 4))
    hourly = 7 * L4_HOUR + 3 * 0.5 * g6_2xl
    assert doc["plan"]["saving"] == round(1 - hourly / (10 * L4_HOUR), 4) == 0.1178
    assert doc["plan"]["monthlyCost"] == pytest.approx(hourly * HOURS_PER_MONTH, abs=0.01)
    assert doc["plan"]["onDemandOnlyMonthlyCost"] == pytest.approx(10 * L4_HOUR * HOURS_PER_MONTH, abs=0.01)


def test_reserved_price_uses_the_discount(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(
        capsys,
        "--demand",
        str(write_demand(tmp_path, {"planning": {"reservedDiscount": 0.4}, "demand": [entry(p50=10, p95=10)]})),
    )
    p = row(doc, "plan", "batch")
    assert (p["reserved"], p["onDemand"], p["spot"]) == (9, 1, 0)  # GPU k up 1 - 0.05 (k - 1) >= 0.6 for k <= 9
    assert p["breakEvenUtilization"] == 0.6
    assert p["monthlyCost"] == pytest.approx((9 * 0.6 + 1) * L4_HOUR * HOURS_PER_MONTH, abs=0.01)


def test_non_interruptible_work_never_goes_to_spot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry(p50=100, p95=100, interruptible=False)]})))
    p = row(doc, "plan", "batch")
    assert p["spot"] == 0 and p["reserved"] == 71 and p["onDemand"] == 29  # GPU k up 1 - 0.005 (k - 1) >= 0.65 for k <= 71


def test_interruptible_share_bounds_spot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only 10 % of the work survives interruption: Spot takes 10 GPUs, not the 30 % cap."""
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry(p95=100, interruptible=True, interruptibleShare=0.1)]})))
    assert row(doc, "plan", "batch")["spot"] == 10


@pytest.mark.parametrize(
    ("sla", "extra", "target"),
    [("online", {}, 110), ("online", {"knownPeak": True}, 135), ("inference", {}, 115), ("training", {}, 100), ("batch", {}, 100)],
)
def test_safety_stock_by_sla(sla: str, extra: dict[str, Any], target: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Online P95 + 10 % (+25 % before a known peak), inference + 15 %; training and batch have no history: P95.
    Online and inference also get N+1: one spare node (one L4) on demand."""
    cls = "inference" if sla in ("online", "inference") else "batch"
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry(p95=100, sla=sla, **{"class": cls}, **extra)]})))
    p = row(doc, "plan", cls)
    assert p["target"] == pytest.approx(target)
    assert p["safetyStock"] == pytest.approx(target - 100)
    spare = 1 if sla in ("online", "inference") else 0
    assert p["reserved"] + p["onDemand"] + p["spot"] == pytest.approx(target + spare)


def test_growth_over_the_lead_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """10 % a month over a 2-month lead time: sized for P95 x 1.21; coverage still reads against today's P95."""
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry(p50=100, p95=100, growthPerMonth=0.1, leadTimeMonths=2)]})))
    p = row(doc, "plan", "batch")
    assert p["target"] == pytest.approx(121)
    assert p["reserved"] == 85  # GPU k (from k - 1 to k) busy 1 - 0.5 (k - 0.5) / 121 >= 0.65 for k <= 85.2
    assert p["coverage"] == 0.85


def test_mig_slices_pack_by_the_catalog_layouts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """28 x 3g.40gb on A100-80GB: all-3g.40gb holds 2 per GPU, so 14 GPUs' worth; 14 x 1g.10gb (7 per GPU) is 2."""
    demand = {
        "planning": {"safetyStock": {"inference": 0}},
        "demand": [
            entry(team="a", **{"class": "inference"}, gpuModel="A100-80GB", unit="mig", migProfile="3g.40gb", p95=28),
            entry(team="b", **{"class": "training"}, gpuModel="H100-80GB", unit="mig", migProfile="1g.10gb", p95=14),
        ],
    }
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, demand)))
    assert row(doc, "demand", "inference", "A100-80GB")["p95"] == 14
    assert row(doc, "demand", "training", "H100-80GB")["p95"] == 2
    p = row(doc, "plan", "inference", "A100-80GB")
    assert p["instanceType"] == "p4de.24xlarge"
    assert p["reserved"] + p["onDemand"] == 16 + 8  # two 8-GPU nodes for 14 GPUs, plus the N+1 node


def test_time_slicing_shares_pack_by_replicas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry(unit="shared", replicas=4, p95=10)]})))
    assert row(doc, "demand", "batch", "L4")["p95"] == 2.5
    p = row(doc, "plan", "batch")
    assert p["reserved"] + p["onDemand"] == 3  # 2.5 GPUs' worth needs 3 physical GPUs


@pytest.mark.parametrize(("p95", "training_type"), [(8, "g6.48xlarge"), (5, "g6.12xlarge"), (2, "g6.xlarge")])
def test_training_takes_the_largest_nodes_it_fills_and_inference_the_cheapest_gpu_hour(
    p95: int, training_type: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demand = {"demand": [entry(**{"class": "training"}, gpuModel="L4", p95=p95), entry(team="b", **{"class": "inference"}, gpuModel="L4", p95=8)]}
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, demand)))
    assert row(doc, "plan", "training", "L4")["instanceType"] == training_type
    assert row(doc, "plan", "inference", "L4")["instanceType"] == "g6.xlarge"


def test_shortfall_against_a_pool_of_600(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A team asks for 1,000 GPUs and the pool has 600: a gap of 400, with options ranked by monthly cost.
    Another class's idle L4 pool lends first (no new cost), then the cheapest priced option."""
    stack = yaml.safe_load(stack_path("dev").read_text())
    cfg = stack["config"]
    cfg["gpu-platform:nodePools"] = [
        {
            "name": "batch-l4",
            "workloadClass": "batch",
            "capacity": "on-demand",
            "instanceTypes": ["g6.xlarge"],
            "scaling": {"min": 0, "desired": 0, "max": 600},
        },
        {
            "name": "dev-l4",
            "workloadClass": "development",
            "capacity": "on-demand",
            "instanceTypes": ["g6.xlarge"],
            "scaling": {"min": 0, "desired": 0, "max": 50},
        },
    ]
    cfg["gpu-platform:tenants"] = []
    stack_file = tmp_path / "Pulumi.small.yaml"
    stack_file.write_text(yaml.safe_dump(stack))
    demand = write_demand(tmp_path, {"demand": [entry(p95=1000, interruptible=True, leadTimeMonths=3)]})
    doc = plan_json(capsys, "--demand", str(demand), "--config", str(stack_file))
    (short,) = doc["plan"]["shortfall"]
    assert (short["class"], short["gpuModel"], short["needed"], short["available"], short["gap"]) == ("batch", "L4", 1000, 600, 400)
    actions = [o["action"] for o in short["options"]]
    assert actions == ["borrow", "spot", "phased-reserved", "on-demand", "other-region"]
    assert short["options"][0]["gpus"] == 50 and short["options"][0]["monthlyCost"] == 0
    costs = [o["monthlyCost"] for o in short["options"]]
    assert costs == sorted(costs)
    assert short["options"][1]["monthlyCost"] == pytest.approx(400 * L4_HOUR * 0.4 * HOURS_PER_MONTH, abs=0.01)
    assert "3 months" in short["options"][2]["detail"]


def test_unpriced_gpu_is_an_error_not_free(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """H200 (p5e/p5en) has no On-Demand list price in the catalog: one line naming the type, exit 2, never $0."""
    demand = write_demand(tmp_path, {"demand": [entry(**{"class": "training"}, gpuModel="H200-141GB", p95=16)]})
    code, out, err = run_cli(capsys, "capacity", "plan", "--demand", str(demand))
    assert code == 2 and out == ""
    assert err.strip() == (
        f"{demand}: training.H200-141GB.instanceType: p5e.48xlarge (H200-141GB) has no On-Demand list price in the catalog "
        "(AWS sells it as Capacity Blocks); allowed: a priced instance type (another GPU model via --gpu-map or gpuModel), "
        "or add its price with date and source to data/catalog.yaml"
    )
