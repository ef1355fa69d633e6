"""Step functions of concurrent GPU demand: build them from intervals, and read quantiles, peak, trend, queueing.

Demand is kept in integer milli-GPUs (1000 = one physical GPU's worth) so that sums over thousands of
tasks stay exact and a quantile is exactly one of the step function's values.

A series keeps its steps as numpy columns too (StepSeries.cols), so the passes over a million-step history run
as array operations. Each of them computes the same floats as a plain loop over the steps would: element-wise
arithmetic is the same IEEE operation either way, per-value sums go through np.bincount (which adds in order, as the
loop does), other float sums through Python's sum, and running sums (the fluid queue's backlog) are taken in int64
only where every partial sum is a whole number below 2**53, where float and integer sums agree; elsewhere the loop runs.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

SECONDS_PER_MONTH = 30.4375 * 86400  # a mean Gregorian month
EXACT = 2**53
"""Whole numbers below this are exact as floats: sums that stay under it are the same in any order and type."""

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Column = list[Any] | npt.NDArray[Any]
"""A column of a million-row history: an array, or Python values where numbers leave int64 or exact floats."""


def as_list(column: Column) -> list[Any]:
    """The column's values as Python numbers."""
    return column if isinstance(column, list) else column.tolist()


class Columns(NamedTuple):
    """The steps of positive length as arrays: from, to (seconds) and milli-GPUs."""

    t0: Floats
    t1: Floats
    v: Ints
    whole: bool
    """Every time is a whole number of seconds (a trace's are): sums of durations and backlogs are exact integers."""


@dataclass(frozen=True)
class StepSeries:
    """Demand over [start, end): `times[i]` starts a step of `values[i]` milli-GPUs that lasts until `times[i+1]` (or `end`)."""

    start: float
    end: float
    times: tuple[float, ...]
    values: tuple[int, ...]

    def __hash__(self) -> int:
        """The fields' hash, computed once (caches key on million-step series)."""
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash((self.start, self.end, self.times, self.values))

    @property
    def window(self) -> float:
        """Length of the window in seconds."""
        return self.end - self.start

    def segments(self) -> Iterable[tuple[float, float, int]]:
        """(from, to, milli-GPUs) of every step with a positive length."""
        bounds = (*self.times[1:], self.end)
        for t0, t1, v in zip(self.times, bounds, self.values, strict=True):
            if t1 > t0:
                yield t0, t1, v

    @cached_property
    def _segs(self) -> tuple[tuple[float, float, int], ...]:
        """segments(), computed once: the loops that cannot run on columns walk them."""
        return tuple(self.segments())

    @cached_property
    def cols(self) -> Columns | None:
        """segments() as numpy columns; None where a value overflows int64 or a time is not exact as a float."""
        try:
            values = np.array(self.values, dtype=np.int64)
        except OverflowError:
            return None
        return _columns(np.array(self.times, dtype=np.float64), values, self.end)

    def _exact_sums(self, bound: float) -> bool:
        """True when the columns hold whole seconds and sums of |milli-GPU| x seconds below `bound` x the span stay exact."""
        c = self.cols
        return c is not None and c.whole and (not len(c.v) or bound * (float(c.t1[-1]) - float(c.t0[0])) < EXACT)

    @cached_property
    def _by_value(self) -> tuple[Ints, npt.NDArray[Any], npt.NDArray[Any]] | None:
        """The distinct values ascending, the step where each first occurs and the seconds at each; None without columns.

        The seconds are added in step order (bincount adds its weights in order).
        """
        c = self.cols
        if c is None:
            return None
        keys, first, inverse = np.unique(c.v, return_index=True, return_inverse=True)
        return keys, first, np.bincount(inverse.reshape(-1), weights=c.t1 - c.t0, minlength=len(keys))

    @cached_property
    def durations(self) -> dict[int, float]:
        """Milli-GPU value -> seconds spent at it (in the order the values first occur)."""
        by_value = self._by_value
        if by_value is None:
            durations: dict[int, float] = {}
            for t0, t1, v in self._segs:
                durations[v] = durations.get(v, 0.0) + (t1 - t0)
            return durations
        keys, first, sums = by_value
        order = np.argsort(first, kind="stable")
        return dict(zip(keys[order].tolist(), sums[order].tolist(), strict=True))

    def quantile(self, q: float) -> float:
        """Time-weighted quantile in GPUs: the least value v with share(time with demand <= v) >= q."""
        total = self.window
        if total <= 0:
            return 0.0
        values, seen = self._ascending
        # a relative tolerance: durations are sums of float seconds
        at = bisect.bisect_left(seen, q * total * (1 - 1e-12))
        return values[at] / 1000 if at < len(values) else max(self.durations) / 1000

    @cached_property
    def _ascending(self) -> tuple[list[int], list[float]]:
        """The values ascending, and the seconds spent at or below each, added up in that order (quantile reads them)."""
        by_value = self._by_value
        if by_value is not None:  # a running sum (numpy's accumulate) adds in order, as the loop below does
            keys, _, sums = by_value
            return keys.tolist(), np.cumsum(sums).tolist()
        durations = self.durations
        values = sorted(durations)
        seen: list[float] = []
        total = 0.0
        for v in values:
            total += durations[v]
            seen.append(total)
        return values, seen

    def peak(self) -> float:
        """Highest concurrent demand in GPUs."""
        return max(self.durations, default=0) / 1000

    def mean(self) -> float:
        """Time-weighted mean demand in GPUs."""
        return self._mean

    @cached_property
    def _mean(self) -> float:
        if self.window <= 0:
            return 0.0
        return sum(d * v for v, d in self.durations.items()) / self.window / 1000

    @cached_property
    def memo(self) -> dict[Hashable, Any]:
        """What plans derive from this series (a curve, a queueing capacity), kept with it.

        A plan's sensitivity rows and instrument table re-read one window several times; the results go with the series.
        """
        return {}

    def growth_per_month(self) -> float:
        """Relative growth per month: the time-weighted least-squares slope of demand, over its mean.

        For a step function the regression integrals are exact: over a step [a, b) of value v,
        the integral of t*d(t) is v (b^2 - a^2) / 2, and t is uniform over the window.
        """
        w = self.window
        mean = self.mean() * 1000
        if w <= 0 or mean <= 0:
            return 0.0
        mid = (self.start + self.end) / 2
        # integral of (t - mid) * d(t) dt over the window, shifted to keep the floats small
        c = self.cols
        if c is not None and c.whole and 2 * mid == math.floor(2 * mid) and _within(c, mid, 2**25):
            # (t - mid) is a multiple of 1/2 under 2**25: its square is exact, so x * x equals the loop's x ** 2
            terms = c.v * ((c.t1 - mid) * (c.t1 - mid) - (c.t0 - mid) * (c.t0 - mid)) / 2
            cov = sum(terms.tolist()) / w
        else:
            cov = sum(v * ((t1 - mid) ** 2 - (t0 - mid) ** 2) / 2 for t0, t1, v in self._segs) / w
        var = w * w / 12
        slope = cov / var  # milli-GPUs per second
        return slope * SECONDS_PER_MONTH / mean

    def capacity_for_delay(self, max_delay_s: float) -> float:
        """Fewest GPUs whose queue never holds more than `max_delay_s` of the pool's work (fluid model); cached per series and delay."""
        key = ("capacity_for_delay", max_delay_s)
        if key not in self.memo:
            self.memo[key] = self._capacity_for_delay(max_delay_s)
        out: float = self.memo[key]
        return out

    def _capacity_for_delay(self, max_delay_s: float) -> float:
        """Fewest GPUs whose queue never holds more than `max_delay_s` of the pool's work (fluid model).

        Work above capacity waits in a backlog B that grows at (demand - C) and drains at (C - demand);
        the wait it implies is B / C (the whole pool working the backlog off). Bisection over whole
        milli-GPUs between the mean (less can never drain) and the peak (never queues).
        """
        lo = max(1, math.ceil(self.mean() * 1000))
        hi = max(lo, math.ceil(self.peak() * 1000))
        c = self.cols if self._exact_sums(hi + max(map(abs, self.durations), default=0)) else None

        def ok(cap: int) -> bool:
            if c is not None:
                return not bool(np.any(_backlog(c, cap) / cap > max_delay_s))
            backlog = 0.0
            for t0, t1, v in self._segs:
                backlog = max(0.0, backlog + (v - cap) * (t1 - t0))
                if backlog / cap > max_delay_s:
                    return False
            return True

        if ok(lo):
            return lo / 1000
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi / 1000

    def served(self, capacity: int, queue: bool) -> StepSeries:
        """The work in service on `capacity` milli-GPUs: demand above it waits in a fluid queue (`queue`) or is turned away.

        A queue's backlog grows at (demand - capacity) and drains at (capacity - demand); while it is not empty the
        whole capacity works. The step where the backlog empties mid-segment is split there, so the result is exact.
        Backlog left at the window's end is not served inside the window.
        """
        c = self.cols
        if c is not None and self._exact_sums(abs(capacity) + max(map(abs, self.durations), default=0)):
            fast = _served_columns(c, capacity, queue)
            if fast is not None:
                times, values = fast
                if not len(times):
                    return StepSeries(self.start, self.end, (self.start,), (0,))
                return StepSeries(self.start, self.end, tuple(_plain(times)), _levels(values))
        times_l: list[float] = []
        values_l: list[int] = []

        def emit(t: float, v: int) -> None:
            if values_l and values_l[-1] == v:
                return
            times_l.append(t)
            values_l.append(v)

        backlog = 0.0
        for t0, t1, v in self._segs:
            if v >= capacity:
                emit(t0, capacity)
                if queue:
                    backlog += (v - capacity) * (t1 - t0)
            elif backlog <= 0:
                emit(t0, v)
            else:
                drain = backlog / (capacity - v)
                emit(t0, capacity)
                if drain >= t1 - t0:
                    backlog -= (capacity - v) * (t1 - t0)
                else:
                    backlog = 0.0
                    emit(t0 + drain, v)
        if not times_l:
            times_l, values_l = [self.start], [0]
        return StepSeries(self.start, self.end, tuple(times_l), tuple(values_l))


def _within(c: Columns, mid: float, bound: float) -> bool:
    """True when every step's bounds lie less than `bound` seconds from `mid`."""
    return not len(c.t0) or max(abs(float(c.t0.min()) - mid), abs(float(c.t1.max()) - mid)) < bound


def _backlog(c: Columns, capacity: int) -> Ints:
    """The fluid queue's backlog (milli-GPU-seconds) after each step: B = max(0, B + (v - C) dt), as running sums.

    B_k = S_k - min(0, min of S_j for j <= k), S the running sum of (v - C) dt: exact in int64 (whole seconds).
    """
    running = np.cumsum((c.v - capacity) * (c.t1 - c.t0).astype(np.int64))
    return running - np.minimum(np.minimum.accumulate(running), 0)


def _served_columns(c: Columns, capacity: int, queue: bool) -> tuple[Floats, Ints] | None:
    """StepSeries.served on columns of whole seconds: (times, values) of the steps emitted, or None to take the loop.

    Per step, the loop emits (t0, capacity) where demand is at or above it or a backlog is draining, else (t0, v);
    a backlog that empties inside the step adds (t0 + backlog / (C - v), v); a value equal to the one before is not
    emitted. The loop tests `drain >= dt` in floats; where that disagrees with the exact test, None.
    """
    v = c.v
    if queue:
        after = _backlog(c, capacity)
        before = np.concatenate((np.zeros(1, dtype=np.int64), after[:-1]))
    else:
        before = np.zeros(len(v), dtype=np.int64)
    draining = (v < capacity) & (before > 0)
    dt = c.t1 - c.t0
    drain = before[draining] / (capacity - v[draining])
    exact = before[draining] >= (capacity - v[draining]) * dt[draining].astype(np.int64)
    if not np.array_equal(drain >= dt[draining], exact):
        return None
    first = np.where((v >= capacity) | draining, capacity, v)
    split = np.zeros(len(v), dtype=bool)
    split[np.flatnonzero(draining)[~exact]] = True
    second_t = np.zeros(len(v), dtype=np.float64)
    second_t[np.flatnonzero(draining)[~exact]] = c.t0[draining][~exact] + drain[~exact]
    # interleave: each step's first emission, then its split emission where there is one
    times = np.stack((c.t0, second_t), axis=1).reshape(-1)
    values = np.stack((first, v), axis=1).reshape(-1)
    emitted = np.stack((np.ones(len(v), dtype=bool), split), axis=1).reshape(-1)
    times, values = times[emitted], values[emitted]
    keep = np.append(True, values[1:] != values[:-1]) if len(values) else np.zeros(0, dtype=bool)
    return times[keep], values[keep]


def step_series(intervals: Iterable[tuple[float, float, int]], start: float, end: float) -> StepSeries:
    """The sum of `(from, to, milli-GPUs)` intervals, each counted over [from, to), clipped to [start, end).

    A sort and a sweep (numpy): every interval adds its value at its clipped start and takes it back at its clipped
    end; the running sum at each distinct time is the level from there on. n log n in the intervals.
    """
    rows = [(max(t0, start), min(t1, end), v) for t0, t1, v in intervals]
    rows = [r for r in rows if r[1] > r[0] and r[2] != 0]
    if not rows:
        return StepSeries(start=start, end=end, times=(start,), values=(0,))
    if max(abs(r[2]) for r in rows) * len(rows) >= 2**62:
        return _step_series_big(rows, start, end)  # sums past int64: Python's integers (the caller's bounds refuse them)
    cols = np.array([(a, b) for a, b, _ in rows], dtype=np.float64)
    milli = np.array([v for _, _, v in rows], dtype=np.int64)
    return step_series_columns(cols[:, 0], cols[:, 1], milli, start, end)


def _columns(times: Floats, values: Ints, end: float) -> Columns | None:
    """StepSeries.cols of a series with these times (as floats), values and end."""
    if len(times) and (float(np.abs(times).max()) >= EXACT or abs(end) >= EXACT):
        return None
    bounds = np.append(times[1:], np.float64(end))
    keep = bounds > times
    t0, t1 = times[keep], bounds[keep]
    whole = bool(np.all(t0 == np.floor(t0)) and np.all(t1 == np.floor(t1)))
    return Columns(t0, t1, values[keep], whole)


def step_series_columns(t0: Floats, t1: Floats, milli: Ints, start: float, end: float) -> StepSeries:
    """step_series of intervals given as columns (from, to, milli-GPUs), already clipped to [start, end), of positive length and value."""
    if not len(milli):
        return StepSeries(start=start, end=end, times=(start,), values=(0,))
    times = np.concatenate((np.array([start], dtype=np.float64), t0, t1))
    values = np.concatenate((np.zeros(1, dtype=np.int64), milli, -milli))
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(values[order])
    last = np.append(times[1:] != times[:-1], True)  # the level after every change at one time
    times, level = times[last], level[last]
    keep = times < end
    times, level = times[keep], level[keep]
    changed = np.append(True, level[1:] != level[:-1])
    times, level = times[changed], level[changed]
    series = StepSeries(start=start, end=end, times=tuple(_plain(times)), values=_levels(level))
    series.__dict__["cols"] = _columns(times, level, end)  # the columns it would read back from its tuples
    return series


def _step_series_big(rows: list[tuple[float, float, int]], start: float, end: float) -> StepSeries:
    """step_series by a dict of changes, for values too large for int64."""
    delta: dict[float, int] = {start: 0}
    for a, b, v in rows:
        delta[a] = delta.get(a, 0) + v
        delta[b] = delta.get(b, 0) - v
    times: list[float] = []
    values: list[int] = []
    level = 0
    for t in sorted(delta):
        if t >= end:
            break
        level += delta[t]
        if values and values[-1] == level:
            continue
        times.append(t)
        values.append(level)
    return StepSeries(start=start, end=end, times=tuple(times), values=tuple(values))


def _levels(values: Ints) -> tuple[int, ...]:
    """Values as a tuple of ints, one object per distinct level (a million steps take a few thousand levels)."""
    if not len(values):
        return ()
    distinct, at = np.unique(values, return_inverse=True)
    return tuple(map(distinct.tolist().__getitem__, at.reshape(-1).tolist()))


def _plain(times: list[float] | Floats) -> list[float]:
    """Whole seconds as ints (a trace's times are), so the series reads as it did before the sweep."""
    if isinstance(times, np.ndarray):
        if len(times) and float(np.abs(times).max()) < EXACT and bool(np.all(times == np.floor(times))):
            whole: list[float] = times.astype(np.int64).tolist()
            return whole
        times = times.tolist()
    return [int(t) if t.is_integer() else t for t in times]


def sum_series(series: Iterable[StepSeries], start: float, end: float) -> StepSeries:
    """Pointwise sum of step functions over one window."""
    intervals = []
    for s in series:
        intervals += [(t0, t1, v) for t0, t1, v in s.segments()]
    return step_series(intervals, start, end)


def slice_series(s: StepSeries, start: float, end: float) -> StepSeries:
    """The series over [start, end) (clipped to its own window)."""
    a, b = max(start, s.start), min(end, s.end)
    c = s.cols
    if c is not None and c.whole and len(c.v) == len(s.times) and set(map(type, s.times)) <= {int}:
        # every step has a length and the times are whole seconds as ints: the window is a run of steps, and its
        # times and values are the series' own objects (a million-step series is not copied), the first clipped to a
        i0, i1 = int(np.searchsorted(c.t1, a, side="right")), int(np.searchsorted(c.t0, b, side="left"))
        times = list(s.times[i0:i1])
        values = list(s.values[i0:i1])
        if times and times[0] < a:
            times[0] = _plain(np.array([a], dtype=np.float64))[0]
    elif c is not None:
        inside = (c.t1 > a) & (c.t0 < b)
        times = _plain(np.maximum(c.t0[inside], a))
        values = list(_levels(c.v[inside]))
    else:
        times, values = [], []
        for t0, t1, v in s.segments():
            if t1 <= a or t0 >= b:
                continue
            times.append(max(t0, a))
            values.append(v)
    if not times or times[0] > a:
        times.insert(0, a)
        values.insert(0, 0)
    return StepSeries(start=a, end=b, times=tuple(times), values=tuple(values))


def scaled(series: StepSeries, factor: float) -> StepSeries:
    """The series times a factor (growth to a horizon), rounded to whole milli-GPUs."""
    return StepSeries(series.start, series.end, series.times, tuple(round(v * factor) for v in series.values))
