"""Break-even per instrument: each planned group's reserve bought every way AWS sells it, side by side.

The headline plan buys its reserve as one instrument (`planning.instrument`, default savings-plan-1y). A buyer
compares: for every group (class and GPU model on its instance type) and every instrument, the node-hour rate,
the break-even up-share (a node is committed when it would be up at least 1 - discount of the time on demand;
economics.break_even_nodes), the nodes that buys and the expected bill, with the rate's source and date, all against
one baseline per group (the headline plan on on-demand alone), so the rows compare with each other:

- Savings Plan and reserved instance, 1 and 3 years, at their discounts (data/commitments.yaml);
- ODCR: the On-Demand rate, billed whether used or not, so it pays only for a node up every hour and buys
  assurance, never a discount;
- ODCR with a Savings Plan applied to it: the Savings Plan's rate on reserved capacity (the plan's 1-year one);
- Capacity Block: its own rate (data/commitments.yaml capacityBlocks), for fixed dates paid up front, only
  for the types AWS sells so; priced here as if the block covered the month.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpu_platform.catalog import Catalog
from gpu_platform.planning.demand import Demand
from gpu_platform.planning.planner import COMMITTED_KINDS, GroupPlan, Plan, plan_group
from gpu_platform.pricing import Commitments, Instrument, load_commitments

ODCR_WITH_PLAN = "savings-plan-1y"  # the Savings Plan the "ODCR + Savings Plan" row applies


@dataclass(frozen=True)
class Priced:
    """One way to buy a group's reserve: the instrument and where its rate comes from."""

    instrument: Instrument
    rate: float
    """One committed node-hour of the group's type."""
    source: str
    as_of: str


def ways(list_price: float, instance_type: str, c: Commitments) -> list[Priced]:
    """Every instrument one node of `instance_type` (list price per hour) can be committed with, and its rate."""
    out = [
        Priced(i, list_price * (1 - i.discount), c.source if i.kind in COMMITTED_KINDS else "On-Demand list (an ODCR bills at it)", c.as_of)
        for i in c.instruments.values()
    ]
    sp = c.instrument(ODCR_WITH_PLAN)
    out.append(Priced(replace(sp, name=f"odcr+{sp.name}"), list_price * (1 - sp.discount), c.source, c.as_of))
    block = c.capacity_blocks.get(instance_type)
    if block is not None:
        discount = 1 - block.price / list_price
        out.append(Priced(Instrument("capacity-block", "capacity-block", 0, discount), block.price, block.source, block.as_of))
    return out


def instrument_table(demand: Demand, headline: Plan, catalog: Catalog, production: bool) -> list[dict[str, object]]:
    """Per planned group with a priced type, every way to buy its reserve, re-planned with that instrument.

    From scratch: reservations a stack already holds are judged apart (planning/held.py, the Release lines),
    so that each row shows what the instrument itself would buy.
    """
    c = load_commitments()
    rows: list[dict[str, object]] = []
    for group, planned in zip(demand.groups, headline.groups, strict=True):
        itype = catalog.instance(planned.instance_type) if planned.instance_type else None
        if itype is None or itype.price_per_hour is None:
            continue
        for way in ways(itype.price_per_hour, itype.name, c):
            g = plan_group(group, demand.options, catalog, demand.source, production, instrument=way.instrument)
            rows.append(_row(g, way, itype.price_per_hour, planned.expected_on_demand_only))
    return rows


def _row(g: GroupPlan, way: Priced, list_price: float, baseline: float | None) -> dict[str, object]:
    i = way.instrument
    return {
        "class": g.workload_class,
        "gpuModel": g.gpu_model,
        "instanceType": g.instance_type,
        "instrument": i.name,
        "kind": i.kind,
        "termMonths": i.term_months,
        "listNodeHour": round(list_price, 4),
        "nodeHour": round(way.rate, 4),
        "breakEven": round(i.break_even, 4),
        "reservedNodes": g.nodes["reserved"],
        "expectedMonthlyCost": None if g.expected_cost is None else round(g.expected_cost, 2),
        # one baseline per group, the headline plan on on-demand alone, so rows compare with each other
        "onDemandOnlyExpectedMonthlyCost": None if baseline is None else round(baseline, 2),
        "source": way.source,
        "asOf": way.as_of,
    }
