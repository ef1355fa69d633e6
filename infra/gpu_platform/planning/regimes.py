"""The current regime of each class: where its history last changed level, found on concurrent demand and on arrivals.

A history that grew in steps (the Alibaba trace: 99.7 % of its tasks arrive in the last 35 of 149 days) is
not one population: a plan sized on the whole window sizes next year on a past that is gone. Per class, two
daily signals are read: the mean concurrent demand of each day (GPUs' worth) and the number of jobs that
arrived that day (where the history has jobs). Each signal is split where one cut into two stretches of at
least MIN_DAYS leaves the least squared error around the two means (binary segmentation, the classic
least-squares change point); the cut is a regime change when it explains at least MIN_EXPLAINED of the
signal's variance and one side's mean is at least MIN_RATIO times the other's. The search repeats on the
stretch after each change, so the last change found is the start of the current regime. A class's regime
starts at the latest change any of its signals shows: from there on, every signal is settled.

Growth is then fitted on the regime's daily means (least squares, 95 % interval from the slope's standard
error); it is a trend only when that interval excludes zero, otherwise the plan says there is none and
assumes flat demand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpu_platform.planning.demand import Demand, DemandGroup
from gpu_platform.planning.windows import DAY, Growth, daily_growth, daily_means, regroup, slice_series

MIN_DAYS = 14
"""Shortest stretch on either side of a change: two weeks hold both weekdays and a weekend twice."""
MIN_EXPLAINED = 0.5
MIN_RATIO = 2.0
DEMAND = "concurrent demand"
ARRIVALS = "arrivals"
UNITS = {DEMAND: "GPUs (daily mean)", ARRIVALS: "jobs a day"}


@dataclass(frozen=True)
class Change:
    """One regime change of one signal: the day it starts (from the history's start) and the means around it."""

    signal: str
    day: int
    before: float
    after: float
    explained: float


@dataclass(frozen=True)
class Regime:
    """A class's current regime: from `start` (seconds) to the history's end, and the changes that put it there."""

    workload_class: str
    start: float
    days: float
    changes: tuple[Change, ...]
    growth: Growth | None

    @property
    def trend(self) -> bool:
        """True when the regime's growth interval excludes zero."""
        return self.growth is not None and (self.growth.low > 0 or self.growth.high < 0)


def daily_counts(times: list[float], start: float, days: int) -> list[float]:
    """How many of `times` fall on each day."""
    out = [0.0] * days
    for t in times:
        d = int((t - start) // DAY)
        if 0 <= d < days:
            out[d] += 1
    return out


def changes(signal: str, x: list[float]) -> list[Change]:
    """The signal's regime changes in order: each the best least-squares cut of the stretch after the previous one."""
    found: list[Change] = []
    lo = 0
    while len(x) - lo >= 2 * MIN_DAYS:
        cut = _best_cut(x, lo)
        if cut is None:
            break
        k, before, after, explained = cut
        low, high = sorted((before, after))
        if explained < MIN_EXPLAINED or high < MIN_RATIO * low:
            break
        found.append(Change(signal, k, before, after, explained))
        lo = k
    return found


def _best_cut(x: list[float], lo: int) -> tuple[int, float, float, float] | None:
    """(day, mean before, mean after, share of variance explained) of the least-squares cut of x[lo:], by prefix sums."""
    part = x[lo:]
    n = len(part)
    s1 = [0.0]
    s2 = [0.0]
    for v in part:
        s1.append(s1[-1] + v)
        s2.append(s2[-1] + v * v)
    total = s2[n] - s1[n] ** 2 / n
    if total <= 0:
        return None
    best: tuple[float, int] | None = None
    for k in range(MIN_DAYS, n - MIN_DAYS + 1):
        left = s2[k] - s1[k] ** 2 / k
        right = (s2[n] - s2[k]) - (s1[n] - s1[k]) ** 2 / (n - k)
        if best is None or left + right < best[0]:
            best = (left + right, k)
    if best is None:
        return None
    sse, k = best
    return lo + k, s1[k] / k, (s1[n] - s1[k]) / (n - k), 1 - sse / total


def find_regimes(demand: Demand) -> dict[str, Regime]:
    """Per class with a history: its current regime (the whole window when no signal changed level)."""
    if demand.window is None:
        return {}
    start, end = demand.window
    out: dict[str, Regime] = {}
    for total in demand.totals:
        if total.series is None:
            continue
        days = int((end - start) // DAY)
        signals = [changes(DEMAND, daily_means(total.series))]
        arrivals = [j.arrival for g in demand.groups_of(total.workload_class) for j in g.jobs]
        if arrivals:
            signals.append(changes(ARRIVALS, daily_counts(arrivals, start, days)))
        found = [c for cs in signals for c in cs]
        last = max((c.day for c in found), default=0)
        begin = start + last * DAY
        ordered = tuple(sorted(found, key=lambda c: (c.day, c.signal)))
        out[total.workload_class] = Regime(
            total.workload_class, begin, (end - begin) / DAY, ordered, daily_growth(slice_series(total.series, begin, end))
        )
    return out


def in_regime(demand: Demand, regimes: dict[str, Regime]) -> Demand:
    """The demand with each class read over its own current regime, its growth kept only where it is a trend."""
    if demand.window is None or not regimes:
        return demand
    end = demand.window[1]

    def one(g: DemandGroup) -> DemandGroup:
        r = regimes.get(g.workload_class)
        if r is None:
            return g
        out = regroup(g, r.start, end)
        return dataclasses.replace(out, growth_per_month=r.growth.per_month if r.trend and r.growth is not None else 0.0)

    first = min((r.start for r in regimes.values()), default=demand.window[0])
    return dataclasses.replace(demand, groups=tuple(one(g) for g in demand.groups), totals=tuple(one(g) for g in demand.totals), window=(first, end))


def regime_line(r: Regime, history_days: float) -> str:
    """What the output says of one class's regime."""
    if not r.changes:
        head = f"{r.workload_class}: one regime over the whole {history_days:.0f} days (no signal changed level)"
    else:
        moves = "; ".join(f"{c.signal} {c.before:.3g} -> {c.after:.3g} {UNITS[c.signal]} from day {c.day}" for c in r.changes)
        day = max(c.day for c in r.changes)
        head = f"{r.workload_class}: current regime from day {day} ({r.days:.0f} of {history_days:.0f} days; {moves})"
    if r.growth is None:
        return head + "; too short for a growth fit"
    interval = f"95 % interval {r.growth.low:+.0%} to {r.growth.high:+.0%} a month"
    if r.trend:
        return head + f"; growth {r.growth.per_month:+.0%} a month ({interval})"
    return head + f"; no growth trend ({interval} includes 0): planned flat"


def regimes_json(regimes: dict[str, Regime], history_start: float) -> dict[str, object]:
    """`demand.regimes` of the JSON output."""
    return {
        cls: {
            "fromDay": round((r.start - history_start) / DAY, 3),
            "days": round(r.days, 3),
            "changes": [
                {"signal": c.signal, "day": c.day, "before": round(c.before, 4), "after": round(c.after, 4), "explained": round(c.explained, 4)}
                for c in r.changes
            ],
            "growthPerMonth": None
            if r.growth is None
            else {"value": round(r.growth.per_month, 4), "low": round(r.growth.low, 4), "high": round(r.growth.high, 4), "trend": r.trend},
        }
        for cls, r in regimes.items()
    }
