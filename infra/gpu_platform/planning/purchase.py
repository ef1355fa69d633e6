"""The purchase line a buyer signs: per planned commitment, the hourly commitment, term, payment, payback and use.

A commitment is bought for the reserved GPUs the plan adds beyond the reservations the stack already holds, on the
group's instance type, with the plan's instrument (data/commitments.yaml): a Savings Plan or Reserved Instance
bills its discounted rate for every hour of the term, used or not (no upfront payment: the catalog's discounts are
no-upfront rates). Nodes are billed whole, so a node's use is the share of the hours it would be up on demand (while
the demand is above the nodes below it, stacked on the reservations held), whatever share of its GPUs is busy; the
nodes the plan keeps up every hour (the N+1 spare, a production floor) are committed too. It pays from the first month
when that use is above the break-even share (1 - discount); below that it never pays, and the line says so. The
on-demand-only comparison is the same demand on elastic on-demand nodes alone (the plan's `onDemandOnlyExpectedMonthlyCost`).
"""

from __future__ import annotations

from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.planning.planner import COMMITTED_KINDS, Plan, stacked_node_up, stacked_node_use
from gpu_platform.pricing import load_commitments

HOURS_PER_MONTH = 730
PAYMENT = "no upfront"


def purchases(plan: Plan, catalog: Catalog) -> list[dict[str, Any]]:
    """One line per class and GPU model whose plan commits GPUs beyond the existing reservations."""
    instrument = load_commitments().instrument(plan.demand.options.instrument)
    if instrument.kind not in COMMITTED_KINDS:
        return []
    out = []
    for d, g in zip(plan.demand.groups, plan.groups, strict=True):
        new_gpus = g.reserved - g.existing_reserved
        if g.instance_type is None or g.gpus_per_node <= 0 or (new_gpus <= 0 and g.always_on <= 0):
            continue
        itype = catalog.instance(g.instance_type)
        if itype.price_per_hour is None:
            continue
        per = g.gpus_per_node
        bought = new_gpus // per
        kept = g.always_on // per  # nodes the plan keeps up every hour (the N+1 spare, a production floor): up 100 %
        nodes = bought + kept
        hourly = nodes * itype.price_per_hour * (1 - instrument.discount)
        # The nodes bought sit on top of the reservations held: on demand, node i would be up (and billed whole) while the
        # demand is above the nodes below it; its GPUs are busy less than that.
        up = stacked_node_up(d, g.existing_reserved, per, bought) + [1.0] * kept
        above = stacked_node_use(d, g.reserved, per, kept)
        busy = stacked_node_use(d, g.existing_reserved, per, bought) + [sum(above) / kept if kept else 0.0] * kept
        used = sum(up) / nodes
        saving = itype.price_per_hour * HOURS_PER_MONTH * sum(u - instrument.break_even for u in up)
        out.append(
            {
                "class": g.workload_class,
                "gpuModel": g.gpu_model,
                "instrument": instrument.name,
                "kind": instrument.kind,
                "payment": PAYMENT,
                "termMonths": instrument.term_months,
                "instanceType": g.instance_type,
                "nodes": nodes,
                "alwaysOnNodes": kept,
                "gpus": nodes * per,
                "hourlyCommitment": round(hourly, 2),
                "listHourly": round(nodes * itype.price_per_hour, 2),
                "termCommitment": round(hourly * HOURS_PER_MONTH * instrument.term_months, 2),
                "expectedUtilization": round(used, 4),
                "gpuBusy": round(sum(busy) / nodes, 4),
                "breakEvenUtilization": round(instrument.break_even, 4),
                "monthlySavingVsOnDemand": round(saving, 2),
                "paybackMonth": 1 if saving > 0 else None,
                # nodes past break-even are bought for a stated coverage floor (planning.coverageTarget), not for price
                "reason": "coverage floor" if g.reserved > g.break_even_reserved else "break-even",
            }
        )
    return out


def purchase_line(p: dict[str, Any]) -> str:
    """The line a buyer reads."""
    pays = (
        f"pays from month {p['paybackMonth']} (${p['monthlySavingVsOnDemand']:,.0f}/month below on-demand for the same hours)"
        if p["paybackMonth"]
        else f"never pays: expected use {p['expectedUtilization']:.0%} is below the {p['breakEvenUtilization']:.0%} break-even"
        + (" (bought for the stated coverage floor, not for price)" if p["reason"] == "coverage floor" else "")
    )
    return (
        f"Purchase {p['class']}/{p['gpuModel']}: {p['instrument']} ({p['payment']}), commit ${p['hourlyCommitment']:,.2f}/h for "
        f"{p['termMonths']} months (${p['termCommitment']:,.0f} in all) = {p['nodes']:g} x {p['instanceType']} at "
        f"${p['listHourly'] / p['nodes']:,.2f}/h list less {1 - p['breakEvenUtilization']:.0%}"
        + (f" ({p['alwaysOnNodes']} of them kept up every hour anyway)" if p["alwaysOnNodes"] else "")
        + f"; expected use {p['expectedUtilization']:.0%} of the hours (GPUs busy {p['gpuBusy']:.0%}); {pays}."
    )
