"""Capacity arithmetic of a stack: GPUs per pool and class, reserved floor, Spot exposure, quota coverage, cost.

Pure functions over the spec and catalog, shared by `gpu-platform capacity`, the policy gate and
(later) a planner that derives pool sizes from declared demand.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_platform.catalog import Catalog
from gpu_platform.pools import gpu_of, gpus_per_node, node_counts
from gpu_platform.pricing import HOURS_PER_MONTH, load_commitments, node_hour_price
from gpu_platform.spec.models import NodePool, PlatformSpec

# Spot is billed at a market price; the estimate (a share of On-Demand) lives with the other
# instruments in data/commitments.yaml, so `capacity` and `capacity plan` price Spot alike.
SPOT_PRICE_FACTOR = 1 - load_commitments().spot_discount
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
    """Per hour at desired size; reserved pools at max (billed used or not); a Capacity Block at its rate while its dates run."""

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


def hourly_price(pool: NodePool, catalog: Catalog, file: str = "", where: str = "") -> float | None:
    """Price per node-hour from the shared pricing model (gpu_platform.pricing).

    On-Demand and ODCR at list, Spot at its estimate, a Capacity Block at its rate.

    On-prem pools are owned hardware and have no hourly price here; a catalog type without a price is a ConfigError.
    """
    if not pool.instance_types:
        return None
    # Spot and mixed pools run the cheapest type that fits; estimate with the first (smallest) type.
    return node_hour_price(catalog.instance(pool.instance_types[0]), pool.capacity, file, where)


def pool_capacity_report(spec: PlatformSpec, catalog: Catalog, file: str = "") -> list[PoolCapacity]:
    """Per-pool GPUs, tenant quota and cost, in stack order; `file` names the stack in errors."""
    quota: dict[str, int] = {}
    for tenant in spec.tenants:
        for q in tenant.quotas:
            quota[q.pool] = quota.get(q.pool, 0) + q.gpus
    out = []
    for i, pool in enumerate(spec.node_pools):
        lo, want, hi = node_counts(pool)
        per = gpus_per_node(pool, catalog)
        price = hourly_price(pool, catalog, file or f"stacks/Pulumi.{spec.stack}.yaml", f"gpu-platform:nodePools[{i}].instanceTypes")
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
    """Estimated monthly cost at desired size of the priced pools; Capacity Blocks are paid for their dates, not by the month."""
    return sum(p.hourly_cost or 0.0 for p in pools if p.tier != "capacity-block") * HOURS_PER_MONTH


def block_hourly_cost(pools: list[PoolCapacity]) -> float:
    """Capacity Blocks' cost per hour of their dates (paid up front for the block, outside the monthly figure)."""
    return sum(p.hourly_cost or 0.0 for p in pools if p.tier == "capacity-block")
