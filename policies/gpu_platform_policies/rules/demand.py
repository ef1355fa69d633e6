"""Capacity against declared demand: coverage, Spot exposure and Spot fallback per workload class.

The stack's `demand` reaches both runners as the ConfigMap `gpu-platform-capacity-demand`
(gpu_platform/k8s/demand.py); pools come from the node groups (or on-prem node patches). The
arithmetic is gpu_platform/planning/checks.py, which `capacity plan` applies to its own plans too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gpu_platform.k8s.demand import DEMAND_CONFIGMAP, DEMAND_KEY
from gpu_platform.planning.checks import (
    DEFAULT_MIN_COVERAGE,
    DEFAULT_SPOT_CAPS,
    ClassSupply,
    coverage_below_target,
    spot_above_cap,
    spot_without_fallback,
)
from gpu_platform_policies.model import Context, Finding, PlanView, rule
from gpu_platform_policies.rules.capacity import KUEUE, flavor_pools, flavor_reaches
from gpu_platform_policies.view import Pool, get, object_name, objects, pools


def declared_demand(plan: PlanView) -> tuple[str, list[dict[str, Any]]] | None:
    """(ConfigMap resource, entries) of the stack's demand, or None when it declares none."""
    for r in objects(plan, "ConfigMap", ""):
        if object_name(r) != DEMAND_CONFIGMAP:
            continue
        try:
            entries = json.loads(str(get(r.inputs, "data", DEMAND_KEY, default="[]")))
        except ValueError:
            return r.name, []
        return r.name, [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    return None


def no_demand(plan: PlanView, ctx: Context) -> str | None:
    """Why the demand rules have nothing to judge: the stack declares no `demand`."""
    return "the stack declares no gpu-platform:demand" if declared_demand(plan) is None else None


def reachable_fallback(plan: PlanView, spot: list[Pool], floor: list[Pool]) -> list[Pool]:
    """The non-Spot pools that pods admitted on the class's Spot flavors can be scheduled on (capacity.flavor_reaches).

    Without Kueue nothing pins the pods, so every non-Spot pool of the class counts.
    """
    flavors = objects(plan, "ResourceFlavor", KUEUE)
    if not flavors:
        return floor
    by_pool = {pool: f for f in flavors for pool in (flavor_pools(plan).get(object_name(f)),) if pool}
    return [p for p in floor if any(flavor_reaches(by_pool[s.name], p) for s in spot if s.name in by_pool)]


def supplies(plan: PlanView, ctx: Context) -> Iterator[tuple[ClassSupply, str, str]]:
    """Each declared class's supply, and the resources findings name: its largest stable pool and its largest Spot pool."""
    found = declared_demand(plan)
    if found is None:
        return
    cm, entries = found
    by_class: dict[str, list[Pool]] = {}
    for p in pools(plan, ctx.catalog):
        if p.workload_class and p.gpus_per_node is not None:
            by_class.setdefault(p.workload_class, []).append(p)
    for e in entries:
        cls = str(e.get("workloadClass"))
        members = sorted(by_class.get(cls, []), key=lambda p: (-(p.max_gpus or 0), p.resource))
        spot = [p for p in members if p.spot]
        stable = [p for p in members if not p.spot]  # fallback groups included: what Spot pods may reach
        floor = [p for p in stable if not p.spot_fallback]
        reachable = reachable_fallback(plan, spot, stable)
        supply = ClassSupply(
            workload_class=cls,
            sla=str(e.get("sla", "")),
            interruptible=bool(e.get("interruptible")),
            p95=float(e.get("p95", 0) or 0),
            stable=sum(p.min_nodes * (p.gpus_per_node or 0) for p in floor),
            spot=sum(p.max_gpus or 0 for p in spot),
            non_spot_max=sum(p.max_gpus or 0 for p in reachable if not p.spot_fallback),
            dedicated_fallback=sum(p.max_gpus or 0 for p in reachable if p.spot_fallback),
        )
        yield supply, floor[0].resource if floor else cm, spot[0].resource if spot else cm


@rule(
    "demand-coverage",
    "Classes with an SLA (online, inference, training) keep stable capacity of at least min-demand-coverage of their declared P95 demand.",
    "advisory",
    "stack",
    category="capacity",
    thresholds={"min-demand-coverage": DEFAULT_MIN_COVERAGE},
    not_applicable=no_demand,
)
def demand_coverage(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Stable capacity (reserved pools, on-demand minimums) below target leaves the SLA to a scale-up that may not come."""
    target = ctx.threshold("min-demand-coverage")
    for supply, floor, _ in supplies(plan, ctx):
        for message in coverage_below_target(supply, target):
            yield Finding(floor, message)


@rule(
    "demand-spot-exposure",
    "Spot GPUs of each class stay under max-demand-spot-<class> of its declared P95 demand.",
    "advisory",
    "stack",
    category="capacity",
    thresholds={f"max-demand-spot-{c}": v for c, v in DEFAULT_SPOT_CAPS.items()},
    not_applicable=no_demand,
)
def demand_spot_exposure(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A reclaim wave takes every Spot GPU at once; beyond the cap the class loses too much of its P95."""
    caps = {c: ctx.threshold(f"max-demand-spot-{c}") for c in DEFAULT_SPOT_CAPS}
    for supply, _, spot in supplies(plan, ctx):
        for message in spot_above_cap(supply, caps):
            yield Finding(spot, message)


@rule(
    "spot-fallback-for-non-interruptible",
    "Non-interruptible classes on Spot can fall back to as many on-demand GPUs as they have on Spot, on pools their Spot pods can reach.",
    "mandatory",
    "stack",
    category="capacity",
    not_applicable=no_demand,
)
def spot_fallback(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Work that cannot be interrupted loses its capacity at a reclaim unless on-demand can take it over.

    Only on-demand the Spot pods can reach counts (`reachable_fallback`): headroom on a pool the
    Spot flavor's node labels exclude is headroom no pod admitted on Spot quota can use.
    """
    for supply, _, spot in supplies(plan, ctx):
        for message in spot_without_fallback(supply):
            yield Finding(spot, message)
