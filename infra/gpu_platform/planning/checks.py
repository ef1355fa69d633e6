"""Pure checks over capacity against demand, shared by the policy gate (over a stack) and `capacity plan` (over a plan).

- coverage: stable GPUs / P95 demand must reach the target for classes with an SLA (not batch);
- Spot exposure: Spot GPUs / P95 demand must stay under the class's cap;
- Spot fallback: non-interruptible work on Spot needs as many on-demand GPUs to fall back to.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

SLA_CLASSES = ("online", "inference", "training")
DEFAULT_MIN_COVERAGE = 0.6
DEFAULT_SPOT_CAPS = {"training": 0.3, "inference": 0.3, "batch": 0.5, "development": 0.5}


@dataclass(frozen=True)
class ClassSupply:
    """One class's demand next to the capacity meant for it."""

    workload_class: str
    sla: str
    interruptible: bool
    p95: float
    stable: float
    """GPUs that stay up: reserved and capacity-block pools, and on-demand pools' minimum."""
    spot: float
    """Spot GPUs at max size."""
    non_spot_max: float
    """Every non-Spot GPU the class can reach (reserved, and on-demand pools at max), Spot pools' own fallback groups aside."""
    dedicated_fallback: float = 0.0
    """GPUs of the Spot pools' own fallback groups the class's Spot pods reach: no other work runs there."""

    @property
    def coverage(self) -> float:
        """Stable GPUs / P95 demand."""
        return self.stable / self.p95 if self.p95 > 0 else 1.0

    @property
    def spot_exposure(self) -> float:
        """Spot GPUs / P95 demand."""
        return self.spot / self.p95 if self.p95 > 0 else 0.0

    @property
    def fallback(self) -> float:
        """On-demand GPUs left to replace Spot: dedicated fallback groups, plus shared capacity the rest of P95 leaves."""
        shared = self.non_spot_max - max(0.0, self.p95 - self.spot)
        return self.dedicated_fallback + (max(0.0, shared) if self.dedicated_fallback else shared)


def coverage_below_target(supply: ClassSupply, target: float) -> Iterator[str]:
    """A class with an SLA whose stable capacity covers less of P95 than the target."""
    if supply.sla in SLA_CLASSES and supply.p95 > 0 and supply.coverage < target - 1e-9:
        yield (
            f"{supply.workload_class} ({supply.sla} SLA): stable capacity {supply.stable:g} GPUs covers {supply.coverage:.0%} of "
            f"P95 demand {supply.p95:g}; target is {target:.0%}"
        )


def spot_above_cap(supply: ClassSupply, caps: Mapping[str, float]) -> Iterator[str]:
    """Spot GPUs above the class's cap, as a share of P95 demand."""
    cap = caps.get(supply.workload_class)
    if cap is not None and supply.p95 > 0 and supply.spot_exposure > cap + 1e-9:
        yield f"{supply.workload_class}: {supply.spot:g} Spot GPUs are {supply.spot_exposure:.0%} of P95 demand {supply.p95:g}; cap is {cap:.0%}"


def spot_without_fallback(supply: ClassSupply) -> Iterator[str]:
    """Non-interruptible work on Spot without as many on-demand GPUs to fall back to."""
    if not supply.interruptible and supply.spot > 0 and supply.fallback < supply.spot - 1e-9:
        yield (
            f"{supply.workload_class} is not interruptible but has {supply.spot:g} Spot GPUs and only {max(0.0, supply.fallback):g} "
            f"on-demand GPUs to fall back to; raise on-demand max by {supply.spot - max(0.0, supply.fallback):g}"
        )
