"""Shortfall: planned GPUs a stack's current pools cannot hold, and the options that close it, ranked.

Options, each priced per month from the catalog (GPU-hours at the planned instance type's price):
borrowing idle quota of other classes' pools on the same GPU model (Kueue cohorts lend it: no new
cost, but the lender can reclaim), Spot (interruptible work only), on-demand, a phased reserved
purchase (cheapest steady price, arrives after the lead time), and another region. Ranked by monthly
cost, then risk.
"""

from __future__ import annotations

import dataclasses

from gpu_platform.catalog import Catalog
from gpu_platform.planning.planner import GroupPlan, Option, Plan, Shortfall
from gpu_platform.pools import gpu_of, max_gpus
from gpu_platform.pricing import HOURS_PER_MONTH
from gpu_platform.spec.models import PlatformSpec

RISK = {"low": 0, "medium": 1, "high": 2}


def stack_gpus(spec: PlatformSpec, catalog: Catalog, spot: bool | None = None) -> dict[tuple[str, str], int]:
    """(workload class, catalog GPU) -> GPUs of the stack's pools at max size (only Spot pools, only the others, or all)."""
    out: dict[tuple[str, str], int] = {}
    for pool in spec.node_pools:
        if spot is not None and (pool.capacity == "spot") != spot:
            continue
        key = (pool.workload_class, gpu_of(pool, catalog).name)
        out[key] = out.get(key, 0) + max_gpus(pool, catalog)
    return out


def _needs(plan: Plan) -> dict[tuple[str, str], list[GroupPlan]]:
    """Planned groups by (class, catalog GPU)."""
    out: dict[tuple[str, str], list[GroupPlan]] = {}
    for g in plan.groups:
        out.setdefault((g.workload_class, g.catalog_gpu), []).append(g)
    return out


def _cost(gpus: int, group: GroupPlan, catalog: Catalog, factor: float) -> float | None:
    if group.instance_type is None:
        return None
    it = catalog.instance(group.instance_type)
    if it.price_per_hour is None:
        return None
    return gpus * it.price_per_hour / it.gpus * factor * HOURS_PER_MONTH


def options_for(gap: int, group: GroupPlan, surplus: int, lead_months: float, plan: Plan, catalog: Catalog) -> list[Option]:
    """Every option that can close (part of) a gap, ranked by monthly cost then risk."""
    o = plan.demand.options
    out = []
    if surplus > 0:
        n = min(gap, surplus)
        out.append(
            Option(
                "borrow",
                n,
                0.0,
                "medium",
                RISK["medium"],
                f"lend {n} idle GPUs of other classes' {group.catalog_gpu} pools through Kueue cohorts; the lender can reclaim them",
            )
        )
    if group.interruptible:
        out.append(
            Option(
                "spot",
                gap,
                _cost(gap, group, catalog, 1 - o.spot_discount),
                "high",
                RISK["high"],
                "interruptible work only: reclaimed at two minutes' notice, needs checkpoints and an on-demand fallback",
            )
        )
    out.append(
        Option(
            "on-demand",
            gap,
            _cost(gap, group, catalog, 1.0),
            "medium",
            RISK["medium"],
            "scale or add an on-demand pool; GPU on-demand capacity can run short (InsufficientInstanceCapacity)",
        )
    )
    wait = f"{lead_months:g} months" if lead_months else "the procurement lead time"
    out.append(
        Option(
            "phased-reserved",
            gap,
            _cost(gap, group, catalog, 1 - o.reserved_discount),
            "medium",
            RISK["medium"],
            f"buy a reservation in phases; the gap stays open for {wait}",
        )
    )
    out.append(
        Option(
            "other-region",
            gap,
            _cost(gap, group, catalog, 1.0),
            "high",
            RISK["high"],
            "run in another region's cluster: data transfer, latency and per-region quotas",
        )
    )
    return sorted(out, key=lambda x: (x.monthly_cost if x.monthly_cost is not None else float("inf"), x.risk_rank, x.action))


def shortfall(plan: Plan, spec: PlatformSpec, catalog: Catalog) -> Plan:
    """The plan with its shortfall against the stack's pools at max size."""
    have = stack_gpus(spec, catalog)
    have_stable = stack_gpus(spec, catalog, spot=False)
    needs = _needs(plan)
    surplus_by_gpu: dict[str, int] = {}
    for (cls, gpu), n in have.items():
        need = sum(g.total for g in needs.get((cls, gpu), []))
        surplus_by_gpu[gpu] = surplus_by_gpu.get(gpu, 0) + max(0, n - need)
    lead = {(g.workload_class, g.gpu_model): g.lead_time_months for g in plan.demand.groups}
    out = []
    for (cls, gpu), members in needs.items():
        # Spot pools hold only the planned Spot tier: non-interruptible work needs non-Spot GPUs
        found = Shortfall(
            cls,
            gpu,
            sum(g.total for g in members),
            have.get((cls, gpu), 0),
            (),
            sum(g.reserved + g.on_demand for g in members),
            have_stable.get((cls, gpu), 0),
        )
        if found.gap == 0:
            continue
        months = max(lead.get((g.workload_class, g.gpu_model), 0.0) for g in members)
        options = tuple(options_for(found.gap, members[0], surplus_by_gpu.get(gpu, 0), months, plan, catalog))
        out.append(dataclasses.replace(found, options=options))
    return dataclasses.replace(plan, shortfall=tuple(out), stack=spec.stack)
