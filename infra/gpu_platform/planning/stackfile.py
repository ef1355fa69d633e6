"""`--write-stack OUT`: the node pools that carry the plan (merged into the base stack by planning/stackmerge.py).

A reserved tier reuses the base stack's reservation for the same instance type, up to that pool's
size; reserved GPUs beyond any existing reservation are written as an always-on on-demand `-baseline`
pool (min = desired = max), the capacity a Savings Plan then covers as it runs (a stack cannot name
a commitment that has not been bought yet). A Spot tier is a `-spot` pool listing the plan's Spot types;
its on-demand fallback is the pool's own fallback group, which the program sizes to the pool's Spot
quota (gpu_platform.pools.fallback_pool, the gate's spot-fallback-sized): no headroom is added to the
`-ondemand` pool, whose nodes Spot-admitted pods cannot reach.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.planning.planner import GroupPlan, Plan
from gpu_platform.spec.models import NodePool, PlatformSpec


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _sharing(g: GroupPlan) -> dict[str, Any] | None:
    if g.sharing is None:
        return None
    mode, value = g.sharing
    return {"mode": "mig", "migConfig": value} if mode == "mig" else {"mode": mode, "replicas": value}


def _reservation_for(instance_type: str, base: PlatformSpec) -> NodePool | None:
    return next((p for p in base.node_pools if p.capacity == "reserved" and p.instance_types == (instance_type,) and p.reservation), None)


def planned_pools(plan: Plan, base: PlatformSpec, catalog: Catalog) -> tuple[list[dict[str, Any]], dict[tuple[str, str, str], list[str]]]:
    """Stack-file node pools for every planned group, and (class, catalog GPU, group model) -> its pool names."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    owners: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for g in plan.groups:
        if g.instance_type is None or g.total == 0:
            continue
        share = _sharing(g)
        suffix = "" if share is None else f"-{share['mode'][:3]}{share.get('replicas', '')}"
        key = (g.workload_class, g.instance_type, suffix)
        entry = merged.setdefault(
            key, {"group": g, "sharing": share, "suffix": suffix, "reserved": 0, "onDemand": 0, "spot": 0, "spotTypes": (), "alwaysOn": 0}
        )
        for tier in ("reserved", "onDemand", "spot"):
            entry[tier] += g.nodes[tier]
        entry["alwaysOn"] += g.always_on // g.gpus_per_node
        entry["spotTypes"] = entry["spotTypes"] or g.spot_types
        owners.setdefault(key, []).append((g.workload_class, g.gpu_model))
    pools: list[dict[str, Any]] = []
    names: dict[tuple[str, str, str], list[str]] = {}
    for key, e in merged.items():
        first: GroupPlan = e["group"]
        stem = f"{first.workload_class[:5]}-{_slug(first.catalog_gpu)}{e['suffix']}"
        common: dict[str, Any] = {"workloadClass": first.workload_class}
        mine: list[str] = []

        def add(
            name: str, body: dict[str, Any], sharing: dict[str, Any] | None = e["sharing"], common: dict[str, Any] = common, mine: list[str] = mine
        ) -> None:
            pool = {"name": name, **common, **body}
            if sharing:
                pool["sharing"] = sharing
            pools.append(pool)
            mine.append(name)

        reserved = e["reserved"]
        existing = _reservation_for(key[1], base) if reserved else None
        if existing is not None and existing.scaling is not None and existing.reservation is not None:
            n = min(reserved, existing.scaling.max_size)
            body: dict[str, Any] = {"capacity": "reserved", "instanceTypes": [key[1]], "scaling": {"min": n, "desired": n, "max": n}}
            body["reservation"] = existing.reservation.model_dump(by_alias=True, exclude_none=True)
            if existing.efa:
                body["efa"] = True
            if existing.availability_zones:
                body["availabilityZones"] = list(existing.availability_zones)
            add(f"{stem}-reserved", body)
            reserved -= n
        if reserved:
            add(
                f"{stem}-baseline",
                {"capacity": "on-demand", "instanceTypes": [key[1]], "scaling": {"min": reserved, "desired": reserved, "max": reserved}},
            )
        od = e["onDemand"]
        if od:
            keep_up = e["alwaysOn"]  # the SLA floor and the N+1 spare the plan keeps up (and bills in its expected cost)
            add(
                f"{stem}-ondemand",
                {"capacity": "on-demand", "instanceTypes": [key[1]], "scaling": {"min": keep_up, "desired": keep_up, "max": od}},
            )
        if e["spot"]:
            add(
                f"{stem}-spot",
                {"capacity": "spot", "instanceTypes": list(e["spotTypes"]), "scaling": {"min": 0, "desired": 0, "max": e["spot"]}},
            )
        names[key] = mine
    by_group: dict[tuple[str, str, str], list[str]] = {}
    for key, groups in owners.items():
        for cls, model in groups:
            by_group[(cls, key[1], model)] = names[key]
    return pools, by_group


def _split(total: int, shares: dict[str, float]) -> dict[str, int]:
    """Split whole GPUs by shares with the largest remainder, so the parts add up to the total exactly."""
    weight = sum(shares.values())
    if weight <= 0:
        return dict.fromkeys(shares, 0)
    raw = {k: total * v / weight for k, v in shares.items()}
    out = {k: math.floor(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: (out[k] - raw[k], k))[: total - sum(out.values())]:
        out[k] += 1
    return out
