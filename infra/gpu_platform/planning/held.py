"""Reservations a stack already holds, judged on the demand: how many to release, and when.

An On-Demand Capacity Reservation bills the On-Demand rate for every hour it is held, used or not, and is discounted
only by a Savings Plan or Reserved Instance applied to it (EC2 user guide, "On-Demand Capacity Reservations",
billing); it can be cancelled at any time. Released, node i (stacked under the demand) would run on demand only while
demand exceeds the i - 1 nodes below it, billed whole (economics.Exceedance.node_up). A held node up less than the
plan's instrument's break-even (1 - discount) of the time loses money even with that instrument applied to it; the nodes a stated
coverage floor asks for stay (planning.coverageTarget), the rest are to be released, now.
"""

from __future__ import annotations

from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.planning.planner import EPS, Plan, coverage_floor_nodes, stacked_node_up, stacked_node_use
from gpu_platform.pricing import HOURS_PER_MONTH, load_commitments
from gpu_platform.spec.models import PlatformSpec


def releases(plan: Plan, spec: PlatformSpec, catalog: Catalog) -> list[dict[str, Any]]:
    """One entry per class and instance type whose held reservation has nodes busy below break-even."""
    # an ODCR instrument has no discount: its break-even is 1, busy every hour
    break_even = load_commitments().instrument(plan.demand.options.instrument).break_even
    out = []
    for d, g in zip(plan.demand.groups, plan.groups, strict=True):
        if g.existing_reserved <= 0 or g.instance_type is None or g.gpus_per_node <= 0:
            continue
        per = g.gpus_per_node
        held = g.existing_reserved // per
        busy = stacked_node_use(d, 0, per, held)
        up = stacked_node_up(d, 0, per, held)
        paying = sum(1 for u in up if u >= break_even - EPS)
        keep = min(held, max(paying, coverage_floor_nodes(d, plan.demand.options, per)))
        if keep >= held:
            continue
        price = catalog.instance(g.instance_type).price_per_hour or 0.0
        released = up[keep:]
        mine = (g.workload_class, (g.instance_type,))
        pools = [
            {"pool": p.name, "reservation": p.reservation.id or p.reservation.resource_group_arn}
            for p in spec.node_pools
            if p.capacity == "reserved" and p.reservation is not None and (p.workload_class, p.instance_types[:1]) == mine
        ]
        out.append(
            {
                "class": g.workload_class,
                "gpuModel": g.gpu_model,
                "instanceType": g.instance_type,
                "held": held,
                "keep": keep,
                "release": held - keep,
                "when": "now (an ODCR is cancelled at any time)",
                "nodeUp": [round(u, 4) for u in up],
                "nodeUse": [round(u, 4) for u in busy],
                "breakEvenUtilization": round(break_even, 4),
                "keptForCoverageFloor": keep - paying,
                "monthlyHeld": round(len(released) * price * HOURS_PER_MONTH, 2),
                "monthlyUsed": round(sum(released) * price * HOURS_PER_MONTH, 2),
                "pools": pools,
            }
        )
    return out


def release_line(r: dict[str, Any]) -> str:
    """The line an owner of the reservation reads."""
    where = ", ".join(f"{p['pool']} ({p['reservation']})" for p in r["pools"]) or "the stack's reserved pools"
    uses = ", ".join(f"{u:.0%}" for u in r["nodeUp"][r["keep"] :])
    floor = f"; {r['keptForCoverageFloor']} kept for the stated coverage floor" if r["keptForCoverageFloor"] else ""
    return (
        f"Release {r['release']} of {r['held']} held {r['instanceType']} nodes ({r['class']}/{r['gpuModel']}, {where}) {r['when']}: "
        f"on demand they would be up {uses} of the time, below the {r['breakEvenUtilization']:.0%} break-even even with "
        f"the plan's instrument applied; ${r['monthlyHeld']:,.0f}/month held for ${r['monthlyUsed']:,.0f}/month of use at list{floor}. "
        "Released capacity comes from on-demand, which EC2 does not guarantee: keep a node whose assurance is worth its cost."
    )
