"""What a change does to the things a platform team counts: each pool's GPUs and cost, each tenant's quotas.

Pools are priced by the same pricing model as `gpu-platform capacity` (gpu_platform.capacity
pool_capacity_report over each side's stack), so the change report and the capacity report never
disagree: on-demand and Spot at desired size, a reserved pool at full size (billed used or not: it is
already paid for), a Capacity Block at its rate for its dates (paid up front, outside the monthly figure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.capacity import PoolCapacity, pool_capacity_report
from gpu_platform.catalog import Catalog
from gpu_platform.pricing import HOURS_PER_MONTH
from gpu_platform.spec.models import PlatformSpec

BILLING = {
    "reserved": "committed, billed used or not",
    "capacity-block": "paid up front for the block's dates",
    "on-demand": "per hour at desired size",
    "spot": "Spot estimate at desired size",
}


@dataclass(frozen=True)
class PoolCost:
    """One pool on each side (None where the pool does not exist)."""

    pool: str
    before: PoolCapacity | None
    after: PoolCapacity | None

    @staticmethod
    def monthly(p: PoolCapacity | None) -> float:
        """Monthly cost of one side (0 for a missing pool, an on-prem pool or a Capacity Block, which is paid per block)."""
        if p is None or p.hourly_cost is None or p.tier == "capacity-block":
            return 0.0
        return p.hourly_cost * HOURS_PER_MONTH

    @property
    def delta(self) -> float:
        """Monthly cost after minus before."""
        return self.monthly(self.after) - self.monthly(self.before)

    @property
    def tier(self) -> str:
        """`reserved`, or `reserved -> on-demand` where it moves."""
        return _arrow(self.before.tier if self.before else None, self.after.tier if self.after else None)

    @property
    def gpu(self) -> str:
        """GPU model, `H100-80GB -> A100-80GB` where it changes."""
        return _arrow(self.before.gpu if self.before else None, self.after.gpu if self.after else None)

    @property
    def changed(self) -> bool:
        """Whether the pool's tier, model, GPUs or cost moves."""
        b, a = self.before, self.after
        if b is None or a is None:
            return True
        return (b.tier, b.gpu, b.max_gpus, b.desired_gpus, b.hourly_cost) != (a.tier, a.gpu, a.max_gpus, a.desired_gpus, a.hourly_cost)

    def to_json(self) -> dict[str, Any]:
        """Both sides' tier, GPU model, GPUs, hourly and monthly cost, and the monthly difference."""

        def side(p: PoolCapacity | None) -> dict[str, Any] | None:
            if p is None:
                return None
            hourly = None if p.hourly_cost is None else round(p.hourly_cost, 2)
            return {
                "workloadClass": p.workload_class,
                "tier": p.tier,
                "gpuModel": p.gpu,
                "maxGpus": p.max_gpus,
                "desiredGpus": p.desired_gpus,
                "hourlyCost": hourly,
                "monthlyCost": round(self.monthly(p), 2),
                "billing": BILLING.get(p.tier, ""),
            }

        return {"pool": self.pool, "before": side(self.before), "after": side(self.after), "monthlyDelta": round(self.delta, 2)}


def _arrow(before: str | None, after: str | None) -> str:
    if before == after:
        return before or ""
    return f"{before or '(none)'} -> {after or '(removed)'}"


@dataclass(frozen=True)
class CostDelta:
    """Monthly cost before and after, per pool, with Capacity Blocks' hourly rate beside it; `problem` when a side is not costed."""

    pools: Sequence[PoolCost]
    problem: str = ""
    caveat: str = ""
    """Where the prices may not be the stack's (the catalog's list prices are one region's), as `capacity` says it."""

    @property
    def before(self) -> float:
        """Monthly cost of the base revision's pools."""
        return sum(PoolCost.monthly(p.before) for p in self.pools)

    @property
    def after(self) -> float:
        """Monthly cost of the working tree's pools."""
        return sum(PoolCost.monthly(p.after) for p in self.pools)

    def blocks(self, after: bool) -> float:
        """Capacity Blocks' cost per hour of their dates at full size, on one side."""
        sides = (p.after if after else p.before for p in self.pools)
        return sum(s.hourly_cost or 0.0 for s in sides if s is not None and s.tier == "capacity-block")

    def by_tier(self) -> list[tuple[str, float, float]]:
        """(tier, monthly before, monthly after) for every tier on either side, in tier order."""
        out: dict[str, list[float]] = {t: [0.0, 0.0] for t in BILLING}
        for p in self.pools:
            for i, side in enumerate((p.before, p.after)):
                if side is not None:
                    out[side.tier][i] += PoolCost.monthly(side)
        seen = {s.tier for p in self.pools for s in (p.before, p.after) if s is not None}
        return [(t, b, a) for t, (b, a) in out.items() if t in seen]

    def headline(self) -> str:
        """`Monthly cost: $1,000.00 -> $1,500.00 (+$500.00, +50.0%)`."""
        if self.problem:
            return f"Monthly cost: not compared ({self.problem})"
        return f"Monthly cost: {money(self.before)} -> {money(self.after)} ({signed(self.after - self.before)}{percent(self.before, self.after)})"

    def to_json(self) -> dict[str, Any]:
        """`cost` of the change report: totals, per tier, per pool, Capacity Blocks' hourly rates."""
        if self.problem:
            return {"compared": False, "problem": self.problem}
        return {
            "compared": True,
            "caveat": self.caveat or None,
            "monthlyBefore": round(self.before, 2),
            "monthlyAfter": round(self.after, 2),
            "monthlyDelta": round(self.after - self.before, 2),
            "hoursPerMonth": HOURS_PER_MONTH,
            "capacityBlockHourlyBefore": round(self.blocks(False), 2),
            "capacityBlockHourlyAfter": round(self.blocks(True), 2),
            "tiers": [{"tier": t, "monthlyBefore": round(b, 2), "monthlyAfter": round(a, 2)} for t, b, a in self.by_tier()],
            "pools": [p.to_json() for p in self.pools],
        }


def money(value: float) -> str:
    """`$1,234.56`."""
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def signed(value: float) -> str:
    """`+$12.00` / `-$12.00` / `$0.00`."""
    return "$0.00" if round(value, 2) == 0 else ("+" if value > 0 else "-") + f"${abs(value):,.2f}"


def percent(before: float, after: float) -> str:
    """`, +12.5%` of the before figure (nothing when before is 0)."""
    return f", {(after - before) / before:+.1%}" if before else ""


def cost_delta(
    before: PlatformSpec | None, after: PlatformSpec, catalog: Catalog, file: str, problem: str = "", new_stack: bool = False
) -> CostDelta:
    """Per pool (base order, then new pools) both sides' capacity and cost; `problem` says why the base was not costed.

    `new_stack`: the stack file is absent at the base, so every pool is new and the base costs nothing.
    """
    new = {p.pool: p for p in pool_capacity_report(after, catalog, file)}
    prices = catalog.pricing
    caveat = ""
    if after.region and after.region != prices.region:
        caveat = f"prices are {prices.region}'s list prices of {prices.as_of}; this stack runs in {after.region}"
    if new_stack:
        return CostDelta([PoolCost(name, None, p) for name, p in new.items()], caveat=caveat)
    if before is None:
        return CostDelta([PoolCost(name, None, p) for name, p in new.items()], problem or "the base revision's stack could not be read")
    old = {p.pool: p for p in pool_capacity_report(before, catalog, file)}
    names = list(old) + [n for n in new if n not in old]
    return CostDelta([PoolCost(n, old.get(n), new.get(n)) for n in names], caveat=caveat)


@dataclass(frozen=True)
class QuotaChange:
    """One tenant's GPUs on one pool, before and after (0 where it had or has none)."""

    tenant: str
    pool: str
    before: int
    after: int

    def to_json(self) -> dict[str, Any]:
        """`{"tenant", "pool", "before", "after"}`."""
        return {"tenant": self.tenant, "pool": self.pool, "before": self.before, "after": self.after}


def _quotas(config: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    tenants = config.get("gpu-platform:tenants")
    for t in tenants if isinstance(tenants, list) else []:
        if not isinstance(t, Mapping):
            continue
        for q in t.get("quotas") or []:
            if isinstance(q, Mapping) and isinstance(q.get("gpus"), int) and not isinstance(q.get("gpus"), bool):
                key = (str(t.get("name")), str(q.get("pool")))
                out[key] = out.get(key, 0) + int(q["gpus"])
    return out


def quota_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[QuotaChange]:
    """Every (tenant, pool) quota the change sets, raises, cuts or removes, as written in the two stack files."""
    old, new = _quotas(before), _quotas(after)
    keys = list(old) + [k for k in new if k not in old]
    return [QuotaChange(t, p, old.get((t, p), 0), new.get((t, p), 0)) for t, p in keys if old.get((t, p), 0) != new.get((t, p), 0)]
