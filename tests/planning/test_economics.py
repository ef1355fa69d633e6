"""Commitment economics against hand-computed cases: the exceedance curve, break-even sizing and the expected bill.

The history used here, over 10 hours: 4 GPUs for 5 h, 2 GPUs for 3 h, 8 GPUs for 2 h. By hand:
GPUs 1-2 are busy 10/10 h, GPUs 3-4 busy 7/10 h (the 4- and 8-GPU hours), GPUs 5-8 busy 2/10 h.
Mean demand (4*5 + 2*3 + 8*2) / 10 = 4.2 GPUs; above 4 GPUs: (8 - 4) * 2 / 10 = 0.8 GPUs.
"""

from __future__ import annotations

import pytest

from gpu_platform.planning.economics import SpotUse, break_even_nodes, exceedance, expected_bill, from_quantiles, from_series
from gpu_platform.planning.series import step_series
from gpu_platform.pricing import load_commitments

HOUR = 3600.0


def curve():  # type: ignore[no-untyped-def]
    series = step_series([(0, 5 * HOUR, 4000), (5 * HOUR, 8 * HOUR, 2000), (8 * HOUR, 10 * HOUR, 8000)], 0, 10 * HOUR)
    return from_series(series)


def test_exceedance_curve_by_hand() -> None:
    c = curve()
    assert [round(c.node_busy(k - 1, 1), 6) for k in range(1, 10)] == [1.0, 1.0, 0.7, 0.7, 0.2, 0.2, 0.2, 0.2, 0.0]
    assert c.mean() == pytest.approx(4.2)
    assert c.mean_above(4) == pytest.approx(0.8)
    assert c.used_within(4) / 4 == pytest.approx(0.85)  # (4*5 + 2*3 + 4*2) / 10 / 4


@pytest.mark.parametrize(
    ("discount", "per_node", "nodes"),
    [
        (0.35, 1, 4),  # break-even 65 %: GPUs 3-4 (70 %) pay, GPU 5 (20 %) does not
        (0.25, 1, 2),  # break-even 75 %: only the always-busy GPUs pay
        (0.35, 2, 2),  # node 2 (GPUs 3-4) 70 % busy
        (0.35, 4, 1),  # node 1 (GPUs 1-4): (1 + 1 + .7 + .7) / 4 = 85 %; node 2: 20 %
        (0.35, 8, 1),  # one 8-GPU node: its GPUs are busy (2 + 1.4 + .8) / 8 = 52.5 %, but it is up (billed) all 10 h
        (0.35, 3, 2),  # node 2 (GPUs 4-6) is up while demand is above 3: 7/10 h, though 1 of its 3 GPUs is busy then for 5 h
        (0.85, 8, 1),  # break-even 15 %: even that node pays
    ],
)
def test_break_even_sizing_by_hand(discount: float, per_node: int, nodes: int) -> None:
    assert break_even_nodes(curve(), per_node, 1 - discount, limit=100) == nodes


def test_a_node_is_up_while_demand_is_above_the_nodes_below_it() -> None:
    """Elastic nodes are billed whole: up while demand exceeds the GPUs below them (4 GPUs for 5 h, 2 for 3 h, 8 for 2 h)."""
    c = curve()
    assert [round(c.node_up(base), 6) for base in (0, 1, 2, 3, 4, 7, 8)] == [1.0, 1.0, 0.7, 0.7, 0.2, 0.2, 0.0]
    # declared quantiles: uniform pieces, P50 = P95 = 10: up 1 - 0.05 k above k GPUs
    d = from_quantiles(10, 10, 10, 10)
    assert [round(d.node_up(k), 6) for k in (0, 2, 8, 10)] == [1.0, 0.9, 0.6, 0.0]


def test_break_even_stops_at_the_planned_nodes_and_stacks_on_given_commitments() -> None:
    assert break_even_nodes(curve(), 1, 0.1, limit=3) == 3
    # 2 GPUs already committed (an existing reservation): only GPUs 3-4 are left to buy at 65 %
    assert break_even_nodes(curve(), 1, 0.65, limit=100, given=2) == 2


def test_expected_bill_by_hand() -> None:
    """$1 per GPU-hour, 730 h, 4 GPUs at 35 % off: 4 * .65 * 730 = 1,898 committed; 0.8 GPUs above on demand: 584."""
    bill = expected_bill(curve(), 4, 1, 1.0, 0.35, spot=None, spot_gpus=0, hours=730)
    assert (bill.committed, bill.on_demand, bill.spot) == pytest.approx((1898.0, 584.0, 0.0))
    assert bill.expected == pytest.approx(2482.0)
    assert bill.on_demand_only == pytest.approx((4 + 0.8) * 730)  # the same 4 GPUs kept up on on-demand, 0.8 elastic above


def test_expected_bill_with_spot_and_fallback_by_hand() -> None:
    """Half the 0.8 GPUs above the reserve are interruptible: 0.4 on Spot, of which 10 % fall back to on-demand.
    On-demand 0.4 + 0.04 = 0.44 GPUs; Spot 0.36 GPUs at 40 % of list: 0.144; x 730."""
    bill = expected_bill(curve(), 4, 1, 1.0, 0.35, spot=SpotUse(0.5, 0.6, 0.1), spot_gpus=100, hours=730)
    assert bill.on_demand == pytest.approx(0.44 * 730)
    assert bill.spot == pytest.approx(0.144 * 730)
    assert bill.expected == pytest.approx(1898 + 0.584 * 730)


def test_spot_takes_no_more_than_the_spot_pool_holds() -> None:
    """The same, with a Spot pool of 1 GPU: half of the 4 GPUs above the reserve (2h in 10) is 2, the pool takes 1.
    Spot 1 x 0.2 = 0.2 GPUs, 90 % of it on Spot at 40 %: 0.072; on-demand 0.8 - 0.2 + 0.02 = 0.62."""
    bill = expected_bill(curve(), 4, 1, 1.0, 0.35, spot=SpotUse(0.5, 0.6, 0.1), spot_gpus=1, hours=730)
    assert bill.on_demand == pytest.approx(0.62 * 730)
    assert bill.spot == pytest.approx(0.072 * 730)


def test_break_even_weighs_a_committed_node_against_spot_where_the_spot_pool_takes_its_hours() -> None:
    """Fully interruptible work at 60 % off on Spot, no fallback; commitment at 35 % off (break-even 65 %).

    A Spot pool as large as the demand: every elastic hour costs 40 % of list on Spot, cheaper than any commitment:
    none pays. A Spot pool of 1 GPU: per committed GPU at base b the bill drops (1 - 0.6) P(d > b) + 0.6 P(d > b + 1):
    b = 0: 0.4 + 0.6 = 1.0; b = 1: 0.4 + 0.6 x 0.7 = 0.82; b = 2: 0.28 + 0.42 = 0.70; b = 3: 0.28 + 0.12 = 0.40 < 0.65.
    So 3 GPUs, where against on-demand alone the 4th (70 % busy) paid too."""
    spot = SpotUse(share=1.0, off=0.6, fallback=0.0)
    assert break_even_nodes(curve(), 1, 0.65, limit=100, spot=(spot, lambda n: 100.0)) == 0
    assert break_even_nodes(curve(), 1, 0.65, limit=100, spot=(spot, lambda n: 1.0)) == 3
    assert break_even_nodes(curve(), 1, 0.65, limit=100) == 4
    # no Spot at all (an empty pool) is the on-demand rule, node for node
    for per, be in ((1, 0.65), (2, 0.65), (3, 0.65), (8, 0.15), (1, 0.75)):
        assert break_even_nodes(curve(), per, be, 100, spot=(spot, lambda n: 0.0)) == break_even_nodes(curve(), per, be, 100)


def test_on_demand_only_keeps_the_same_floor_up() -> None:
    """No reserve, nothing kept up: elastic on-demand for the whole demand, 4.2 GPUs on average."""
    bill = expected_bill(curve(), 0, 1, 1.0, 0.35, spot=None, spot_gpus=0, hours=730)
    assert bill.expected == bill.on_demand_only == pytest.approx(4.2 * 730)
    kept = expected_bill(curve(), 2, 1, 1.0, 0.35, spot=None, spot_gpus=0, hours=730, always_on_gpus=2)
    assert kept.always_on == pytest.approx(2 * 730)
    assert kept.committed == pytest.approx(2 * 0.65 * 730)
    assert kept.on_demand == pytest.approx(0.8 * 730)  # above 2 + 2 GPUs
    assert kept.on_demand_only == pytest.approx((4 + 0.8) * 730)


def test_elastic_nodes_round_up_at_every_instant() -> None:
    """3-GPU nodes above 3 reserved GPUs: at 4 GPUs one node (3), at 8 GPUs two (6), at 2 none: (3*5 + 6*2) / 10 = 2.7."""
    assert curve().elastic_gpus(3, 3) == pytest.approx(2.7)


def test_declared_quantiles_make_a_linear_quantile_function() -> None:
    """P50 = P95 = P99 = peak = 10: demand uniform on [0, 10) half the time, 10 the other half; G(0) = 2.5 + 5."""
    c = from_quantiles(10, 10, 10, 10)
    assert c.mean() == pytest.approx(7.5)
    assert c.node_busy(0, 1) == pytest.approx(1 - 0.5 * 0.5 / 10)  # GPU 1: busy unless demand < 1 (5 % of the time, half-busy)
    assert c.elastic_gpus(0, 10) == pytest.approx(10.0)  # any demand above zero holds the one 10-GPU node
    assert exceedance([(1.0, 1.0)]).mean() == 1.0


def test_instruments_are_data_with_date_and_source() -> None:
    c = load_commitments()
    assert c.as_of and c.source.startswith("https://")
    assert c.instrument("savings-plan-1y").break_even == pytest.approx(0.65)
    assert c.instrument("odcr").break_even == 1.0  # an ODCR bills at list: it never pays for itself in cost, only in assurance
    block = c.capacity_blocks["p5.48xlarge"]
    assert block.price > 0 and block.as_of and block.source.startswith("https://")


def test_capacity_and_capacity_plan_share_one_pricing_model(capsys: pytest.CaptureFixture[str]) -> None:
    """`capacity` prices Spot with the same discount the planner assumes, and a Capacity Block at its own rate for
    its dates (prod's 2 x p5.48xlarge block: 2 x $39.33 an hour), outside the 730-hour monthly figure."""
    import json

    from gpu_platform.capacity import SPOT_PRICE_FACTOR
    from gpu_platform.cli import main
    from gpu_platform.planning.demand import Options

    assert pytest.approx(1 - Options().spot_discount) == SPOT_PRICE_FACTOR
    assert Options().reserved_discount == load_commitments().instrument("savings-plan-1y").discount
    assert main(["capacity", "--stack", "prod", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    block = next(p for p in doc["pools"] if p["pool"] == "train-h100-block")
    assert doc["capacityBlockHourlyCost"] == pytest.approx(2 * 39.33) == pytest.approx(block["hourlyCost"])
    others = sum(p["hourlyCost"] or 0 for p in doc["pools"] if p["tier"] != "capacity-block")
    assert doc["monthlyCost"] == pytest.approx(others * 730, abs=0.01)
