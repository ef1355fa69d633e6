"""Whole nodes per zone: each tier of a plan spread over the zones its stack's pools run in.

A node group spreads its nodes over its subnets' zones (the EKS managed node group's Auto Scaling
group balances instances across the zones of its subnets, AZRebalance); the plan therefore states
each tier in whole nodes per zone, so that a buyer reserves capacity where the pools can use it.
"""

from __future__ import annotations

import dataclasses

from gpu_platform.catalog import Catalog
from gpu_platform.planning.planner import GroupPlan, Plan
from gpu_platform.pools import gpu_of
from gpu_platform.spec.models import PlatformSpec

TIERS = ("reserved", "onDemand", "spot")


def spread(count: int, zones: tuple[str, ...]) -> dict[str, int]:
    """`count` whole nodes over `zones` as evenly as whole nodes allow, the first zones taking the remainder."""
    if not zones:
        return {}
    base, extra = divmod(count, len(zones))
    return {z: base + (1 if i < extra else 0) for i, z in enumerate(zones)}


def zones_of(spec: PlatformSpec, catalog: Catalog, workload_class: str, gpu: str) -> tuple[str, ...]:
    """Zones of the stack's pools for a class and catalog GPU (a pool naming none runs in every cluster zone)."""
    cluster = spec.network.zones()
    found: list[str] = []
    for pool in spec.node_pools:
        if pool.workload_class != workload_class or gpu_of(pool, catalog).name != gpu:
            continue
        for z in pool.availability_zones or cluster:
            if z not in found:
                found.append(z)
    return tuple(sorted(found))


def per_zone(group: GroupPlan, zones: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """Whole nodes of one group by zone: zone -> {reserved, onDemand, spot}."""
    tiers = {t: spread(group.nodes.get(t, 0), zones) for t in TIERS}
    return {z: {t: tiers[t][z] for t in TIERS} for z in zones}


def zoned(plan: Plan, spec: PlatformSpec, catalog: Catalog) -> Plan:
    """The plan with nodes per zone for every group whose class and GPU the stack's pools place in named zones."""
    groups = []
    for g in plan.groups:
        zones = zones_of(spec, catalog, g.workload_class, g.catalog_gpu) if g.catalog_gpu else ()
        groups.append(dataclasses.replace(g, nodes_per_zone=per_zone(g, zones)) if zones else g)
    totals = []
    for t in plan.totals:
        merged: dict[str, dict[str, int]] = {}
        for g in groups:
            if g.workload_class != t.workload_class:
                continue
            for z, tiers in g.nodes_per_zone.items():
                row = merged.setdefault(z, dict.fromkeys(TIERS, 0))
                for k, n in tiers.items():
                    row[k] += n
        totals.append(dataclasses.replace(t, nodes_per_zone=dict(sorted(merged.items()))))
    return dataclasses.replace(plan, groups=tuple(groups), totals=tuple(totals))
