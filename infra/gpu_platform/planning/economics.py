"""Commitment economics: the exceedance curve of demand, break-even reserve sizing and the expected bill.

A committed GPU costs (1 - discount) x list every hour of the term; the same GPU-hours bought on
demand cost list only while busy. So the k-th committed GPU pays for itself exactly when it is busy
at least (1 - discount) of the time, and the best reserve is the largest R whose last unit is that
busy. With demand d(t) over a window of length W, the excess above a level y is

    G(y) = (1/W) * integral of max(0, d(t) - y) dt        (mean GPUs above y)

and unit k (from k - 1 to k GPUs) is busy a share u(k) = G(k - 1) - G(k) of the time; a node of g
GPUs sitting on top of R reserved GPUs is busy (G(R) - G(R + g)) / g. G is exact: a history is atoms
(each value of the step function with the share of time spent there), declared quantiles are uniform
pieces between them (the quantile function drawn linearly), whose G is a parabola.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from gpu_platform.planning.series import StepSeries

EPS = 1e-9


@dataclass(frozen=True)
class Exceedance:
    """Demand as (value in GPUs, share of the window's time) pairs, sorted by value, with suffix sums for G(y)."""

    values: tuple[float, ...]
    shares: tuple[float, ...]
    tail_share: tuple[float, ...]
    """tail_share[i]: share of time with demand >= values[i]."""
    tail_mass: tuple[float, ...]
    """tail_mass[i]: sum of value x share over values[i:]."""
    pieces: tuple[tuple[float, float, float], ...] = field(default=())
    """(low, high, share): demand spread uniformly over [low, high) for that share of the time (declared quantiles)."""

    @cached_property
    def _arrays(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Values and shares as float arrays."""
        return np.array(self.values, dtype=np.float64), np.array(self.shares, dtype=np.float64)

    def mean_above(self, y: float) -> float:
        """G(y): the time-weighted mean of max(0, demand - y), in GPUs."""
        i = bisect.bisect_right(self.values, y)
        atoms = self.tail_mass[i] - y * self.tail_share[i] if i < len(self.values) else 0.0
        return atoms + sum(_uniform_above(a, b, m, y) for a, b, m in self.pieces)

    def mean(self) -> float:
        """Time-weighted mean demand."""
        return self.mean_above(0.0)

    def node_busy(self, base: float, gpus: int) -> float:
        """Share of the time a node of `gpus` GPUs stacked on `base` GPUs below it is busy (its GPU-hours used / GPU-hours held)."""
        return (self.mean_above(base) - self.mean_above(base + gpus)) / gpus

    def share_above(self, y: float) -> float:
        """Share of the time demand is above y."""
        i = bisect.bisect_right(self.values, y + EPS)
        atoms = self.tail_share[i] if i < len(self.values) else 0.0
        return atoms + sum(m * min(1.0, max(0.0, (b - y) / (b - a))) for a, b, m in self.pieces)

    def node_up(self, base: float) -> float:
        """Share of the time an elastic node stacked on `base` GPUs is up, and billed: while demand is above `base`.

        Elastic capacity is bought in whole nodes (the expected bill rounds the excess up to nodes), so a node is paid
        for every hour any of its GPUs is needed, however few: an 8-GPU node serving 2 busy GPUs is billed in full.
        """
        return self.share_above(base)

    def used_within(self, reserve: float) -> float:
        """Time-weighted mean of min(demand, reserve): the reserve's GPUs in use."""
        return self.mean() - self.mean_above(reserve)

    def elastic_gpus(self, reserve: float, gpus_per_node: int, ceiling: float = math.inf, cap: float = math.inf) -> float:
        """Mean GPUs billed on elastic nodes above the reserve: the excess rounded up to whole nodes at every instant.

        Demand above `ceiling` (the plan's full size) runs on no node: the plan holds no more, so none is billed.
        With `cap`, the mean of min(those GPUs, cap): the part a pool of `cap` GPUs could take (SpotUse.gpu_hours).
        """
        g = gpus_per_node

        def nodes(v: float) -> int:
            return math.ceil(max(0.0, min(v, ceiling) - reserve) / g - EPS)

        # nodes() and the products for every atom as arrays (the same float operations), added up by Python's sum
        values, shares = self._arrays
        up = np.ceil(np.maximum(0.0, np.minimum(values, ceiling) - reserve) / g - EPS)
        out = sum((shares * np.minimum(g * up, cap)).tolist())
        for a, b, m in self.pieces:
            # j nodes are up while the excess is in ((j - 1) g, j g]: weight by the piece's share of that range
            top = min(b, ceiling)
            j = 1
            while reserve + (j - 1) * g < top:
                lo, hi = max(a, reserve + (j - 1) * g), min(top, reserve + j * g)
                if hi > lo:
                    out += m * (hi - lo) / (b - a) * min(j * g, cap)
                j += 1
            if b > ceiling:  # the piece's share above the ceiling is served at the ceiling
                out += m * (b - max(a, ceiling)) / (b - a) * min(g * nodes(ceiling), cap)
        return out


def _uniform_above(a: float, b: float, share: float, y: float) -> float:
    """Share x E[max(0, U - y)] for U uniform on [a, b)."""
    if y <= a:
        return share * ((a + b) / 2 - y)
    if y >= b:
        return 0.0
    return share * (b - y) ** 2 / (2 * (b - a))


def exceedance(points: list[tuple[float, float]], pieces: tuple[tuple[float, float, float], ...] = ()) -> Exceedance:
    """Build the curve from (GPUs, duration) atoms (durations normalised to shares of their sum) and uniform pieces (shares as given)."""
    durations: dict[float, float] = {}
    for v, d in points:
        if d > 0:
            durations[v] = durations.get(v, 0.0) + d
    return _curve(durations, pieces)


def _curve(durations: dict[float, float], pieces: tuple[tuple[float, float, float], ...] = ()) -> Exceedance:
    """The curve of atoms (GPUs -> positive duration, in the order they were first seen) and pieces.

    The suffix sums run from the top value down, one addition at a time (np.cumsum adds in order, as a loop does).
    """
    total = sum(durations.values())
    values = tuple(sorted(durations))
    shares = tuple(durations[v] / total for v in values) if total > 0 else tuple(0.0 for _ in values)
    share = np.array(shares, dtype=np.float64)[::-1]
    mass = share * np.array(values, dtype=np.float64)[::-1]
    tail_share = tuple(np.cumsum(share)[::-1].tolist())
    tail_mass = tuple(np.cumsum(mass)[::-1].tolist())
    return Exceedance(values, shares, tail_share, tail_mass, pieces)


def from_series(series: StepSeries, factor: float = 1.0) -> Exceedance:
    """The curve of a group's step series (milli-GPUs) scaled by a growth factor, cached with the series.

    Sensitivity rows and the instrument table re-plan one window.
    """
    key = ("curve", factor)
    if key not in series.memo:
        series.memo[key] = curve_of_series(series, factor)
    curve: Exceedance = series.memo[key]
    return curve


def curve_of_series(series: StepSeries, factor: float = 1.0) -> Exceedance:
    """The curve of a step series (milli-GPUs) scaled by a growth factor, uncached (a one-off series, as a plan's served work)."""
    durations = series.durations
    if factor == 1.0 and all(abs(v) < 2**42 for v in durations):
        # v / 1000 differs for every whole v below 2**42: the atoms are the series' own, in the same order
        return _curve({v / 1000: d for v, d in durations.items() if d > 0})
    return exceedance([(v * factor / 1000, d) for v, d in durations.items()])


def from_quantiles(p50: float, p95: float, p99: float, peak: float, factor: float = 1.0) -> Exceedance:
    """A curve for declared demand: the quantile function linear through (0, 0), (0.5, P50), (0.95, P95), (0.99, P99), (1, peak).

    Declared demand gives no time below its median; assuming demand falls linearly to zero there
    makes every reserve look less busy than it may be, so a declared plan never over-commits.
    Between knots demand is uniform; a flat stretch (equal knots) is an atom.
    """
    knots = ((0.0, 0.0), (0.5, p50 * factor), (0.95, p95 * factor), (0.99, p99 * factor), (1.0, peak * factor))
    atoms: list[tuple[float, float]] = []
    pieces: list[tuple[float, float, float]] = []
    for (q0, y0), (q1, y1) in pairwise(knots):
        if y1 > y0:
            pieces.append((y0, y1, q1 - q0))
        else:
            atoms.append((y0, q1 - q0))
    curve = exceedance(atoms)
    # exceedance() normalises atoms to shares of their own sum; scale them back to their true share
    weight = sum(d for _, d in atoms)
    shares = tuple(x * weight for x in curve.shares)
    return Exceedance(curve.values, shares, tuple(x * weight for x in curve.tail_share), tuple(x * weight for x in curve.tail_mass), tuple(pieces))


@dataclass(frozen=True)
class SpotUse:
    """How an interruptible class's elastic hours run on Spot: a `share` of the elastic GPUs at each instant, up to the Spot pool's size.

    Elastic GPUs at an instant are E(t) (the excess above the floor, in whole nodes); Spot takes min(share x E(t), S)
    of them, S the Spot pool's GPUs (the planner's Spot cap): the rest, and the `fallback` share of the Spot
    GPU-hours after reclaims, run on on-demand. A Spot GPU-hour costs (1 - `off`) x list.
    """

    share: float
    off: float
    """The Spot node-hour below the planned type's list price, as a share of it."""
    fallback: float

    def gpu_hours(self, curve: Exceedance, floor: float, gpus_per_node: int, spot_gpus: float, ceiling: float = math.inf) -> float:
        """E[min(share x E(t), spot_gpus)]: mean GPUs on Spot above `floor` committed and kept-up GPUs."""
        if self.share <= 0 or spot_gpus <= 0:
            return 0.0
        return self.share * curve.elastic_gpus(floor, gpus_per_node, ceiling, spot_gpus / self.share)

    @property
    def saving(self) -> float:
        """What one Spot GPU-hour saves against the same hour on demand, as a share of list (after fallback)."""
        return (1 - self.fallback) * self.off


def break_even_nodes(
    curve: Exceedance,
    gpus_per_node: int,
    break_even: float,
    limit: int,
    given: int = 0,
    spot: tuple[SpotUse, Callable[[int], float]] | None = None,
) -> int:
    """Whole nodes to commit on top of `given` already-committed GPUs: the most nodes whose last one is up at least `break_even` of the time.

    Nodes are billed, not GPUs: on demand, node k (stacked on k - 1 nodes) costs its list price for every hour demand
    is above those k - 1 nodes, however few of its GPUs are busy; committed, it costs (1 - discount) x list every hour.
    So it pays exactly when it would be up at least 1 - discount of the time (Exceedance.node_up). That share falls with
    each node stacked higher, so the first node below break-even ends the search; `limit` caps it at the nodes the
    group is planned for.

    With `spot` (its terms and the Spot pool's GPUs when n nodes are committed), node k is weighed against what its
    hours would cost uncommitted: some of them on Spot. Committing it lowers the elastic bill (in list GPU-hours)
    from C(k - 1) to C(k), C(n) = E_n - saving x Spot_n (expected_bill's elastic part), and pays where that drop is at
    least break_even x its GPUs. Up to whole-node rounding the drop per GPU is (1 - share x saving) P(d > b) +
    share x saving x P(d > b + S / share), b the node's base: it falls as b rises, so the first node that does not pay
    still ends the search. Where Spot's cap binds
    (elastic demand far above the Spot pool), the node's hours would be on-demand and it pays as without Spot.
    """
    g = gpus_per_node
    if spot is None:
        n = 0
        while n < limit and curve.node_up(given + n * g) >= break_even - EPS:
            n += 1
        return n
    terms, spot_gpus = spot

    def elastic(n: int) -> float:
        floor = given + n * g
        return curve.elastic_gpus(floor, g) - terms.saving * terms.gpu_hours(curve, floor, g, spot_gpus(n))

    n, cost = 0, elastic(0)
    while n < limit:
        after = elastic(n + 1)
        if (cost - after) / g < break_even - EPS:
            break
        n, cost = n + 1, after
    return n


@dataclass(frozen=True)
class Bill:
    """The expected monthly bill of one group, beside the full-size and all-on-demand bills."""

    committed: float
    """Reserved GPUs x committed price x hours: paid whether used or not."""
    always_on: float
    """On-demand GPUs kept up (the SLA floor and the N+1 spare) x list price x hours."""
    on_demand: float
    """Expected on-demand GPU-hours above the reserve (including Spot's fallback) x list price."""
    spot: float
    """Expected Spot GPU-hours above the reserve x Spot price."""
    on_demand_only: float
    """The same plan with no commitment: the reserve and the kept-up GPUs on on-demand, the rest elastic on-demand."""

    @property
    def expected(self) -> float:
        """Committed + always-on + on-demand + Spot."""
        return self.committed + self.always_on + self.on_demand + self.spot


def expected_bill(
    curve: Exceedance,
    reserve_gpus: int,
    gpus_per_node: int,
    list_gpu_hour: float,
    discount: float,
    spot: SpotUse | None,
    spot_gpus: float,
    hours: float,
    always_on_gpus: int = 0,
    given_gpus: int = 0,
    ceiling_gpus: float = math.inf,
    always_on_discount: float = 0.0,
) -> Bill:
    """Expected monthly cost: R x (1 - discount) x price + A x price + elastic GPU-hours above R + A, some of them on Spot.

    A is on-demand kept up whatever the demand (an SLA floor, the N+1 spare). Elastic GPUs are
    billed in whole nodes at each instant (the excess rounded up to nodes); Spot takes its share of them at each
    instant up to the `spot_gpus` the Spot pool holds (SpotUse), and of the Spot GPU-hours a fallback share runs on
    on-demand after reclaims. `given_gpus` of the reserve are existing ODCRs,
    billed at list. Kept-up nodes are up every hour, so a commitment covers them too (`always_on_discount`: the
    instrument's discount where it is a Savings Plan or Reserved Instance). No instant bills more than
    `ceiling_gpus` (the plan's full size), so the expected bill never exceeds the full-size bill.
    """
    floor = reserve_gpus + always_on_gpus
    above = curve.elastic_gpus(floor, gpus_per_node, ceiling_gpus)
    spot_hours = spot.gpu_hours(curve, floor, gpus_per_node, spot_gpus, ceiling_gpus) if spot is not None else 0.0
    fallback = spot.fallback if spot is not None else 0.0
    committed = ((reserve_gpus - given_gpus) * (1 - discount) + given_gpus) * list_gpu_hour * hours
    always_on = always_on_gpus * list_gpu_hour * (1 - always_on_discount) * hours
    on_demand = (above - spot_hours + spot_hours * fallback) * list_gpu_hour * hours
    spot_cost = spot_hours * (1 - fallback) * list_gpu_hour * (1 - spot.off) * hours if spot is not None else 0.0
    baseline = (floor + curve.elastic_gpus(floor, gpus_per_node, ceiling_gpus)) * list_gpu_hour * hours
    return Bill(committed=committed, always_on=always_on, on_demand=on_demand, spot=spot_cost, on_demand_only=baseline)
