"""Capacity arithmetic of a stack: GPUs per pool and class, reserved floor, Spot exposure, quota coverage, cost.

Pure functions over the spec and catalog, shared by `gpu-platform capacity`, the policy gate and
(later) a planner that derives pool sizes from declared demand.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_platform.catalog import Catalog
from gpu_platform.pools import gpu_of, gpus_per_node, node_counts
from gpu_platform.spec.models import NodePool, PlatformSpec

HOURS_PER_MONTH = 730
# Spot is billed at a market price; for estimates we assume this fraction of On-Demand (AWS's
# GPU Spot prices have mostly sat between 30 % and 50 % of On-Demand). An estimate, labelled so.
SPOT_PRICE_FACTOR = 0.4
FLOOR_TIERS = ("reserved", "capacity-block", "on-demand")
BILLED_WHEN_IDLE = ("reserved", "capacity-block")


@dataclass(frozen=True)
class PoolCapacity:
    """One pool's size in GPUs and its hourly cost at desired size."""

    pool: str
    workload_class: str
    tier: str
    gpu: str
    gpus_per_node: int
    min_gpus: int
    desired_gpus: int
    max_gpus: int
    quota_gpus: int
    hourly_cost: float | None

    @property
    def quota_coverage(self) -> float:
        """Share of the pool's maximum GPUs that tenants are promised (above 1.0 is oversubscribed)."""
        return self.quota_gpus / self.max_gpus if self.max_gpus else 0.0


@dataclass(frozen=True)
class ClassCapacity:
    """One workload class across its pools."""

    workload_class: str
    max_gpus: int
    floor_gpus: int
    spot_max_gpus: int

    @property
    def spot_exposure(self) -> float:
        """Share of the class's maximum GPUs that AWS can take back."""
        return self.spot_max_gpus / self.max_gpus if self.max_gpus else 0.0


def hourly_price(pool: NodePool, catalog: Catalog) -> float | None:
    """Estimated price per node-hour: On-Demand list price (also what ODCRs bill), Spot at SPOT_PRICE_FACTOR.

    On-prem pools are owned hardware and have no hourly price here.
    """
    if not pool.instance_types:
        return None
    # Spot and mixed pools run the cheapest type that fits; estimate with the first (smallest) type.
    price = catalog.instance(pool.instance_types[0]).price_per_hour
    if price is None:
        return None
    return price * SPOT_PRICE_FACTOR if pool.capacity == "spot" else price


def pool_capacity_report(spec: PlatformSpec, catalog: Catalog) -> list[PoolCapacity]:
    """Per-pool GPUs, tenant quota and cost, in stack order."""
    quota: dict[str, int] = {}
    for tenant in spec.tenants:
        for q in tenant.quotas:
            quota[q.pool] = quota.get(q.pool, 0) + q.gpus
    out = []
    for pool in spec.node_pools:
        lo, want, hi = node_counts(pool)
        per = gpus_per_node(pool, catalog)
        price = hourly_price(pool, catalog)
        out.append(
            PoolCapacity(
                pool=pool.name,
                workload_class=pool.workload_class,
                tier=pool.capacity,
                gpu=gpu_of(pool, catalog).name,
                gpus_per_node=per,
                min_gpus=lo * per,
                desired_gpus=want * per,
                max_gpus=hi * per,
                quota_gpus=quota.get(pool.name, 0),
                # Reservations and Capacity Blocks bill every reserved instance, used or not.
                hourly_cost=None if price is None else price * (hi if pool.capacity in BILLED_WHEN_IDLE else want),
            )
        )
    return out


def class_capacity_report(pools: list[PoolCapacity]) -> list[ClassCapacity]:
    """Per workload class: maximum GPUs, the floor that is not interruptible, and the Spot share."""
    classes: dict[str, list[PoolCapacity]] = {}
    for p in pools:
        classes.setdefault(p.workload_class, []).append(p)
    return [
        ClassCapacity(
            workload_class=name,
            max_gpus=sum(p.max_gpus for p in members),
            floor_gpus=sum(p.min_gpus for p in members if p.tier in FLOOR_TIERS),
            spot_max_gpus=sum(p.max_gpus for p in members if p.tier == "spot"),
        )
        for name, members in sorted(classes.items())
    ]


def monthly_cost(pools: list[PoolCapacity]) -> float:
    """Estimated monthly cost at desired size of the pools that have a price."""
    return sum(p.hourly_cost or 0.0 for p in pools) * HOURS_PER_MONTH
