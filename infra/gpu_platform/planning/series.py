"""Step functions of concurrent GPU demand: build them from intervals, and read quantiles, peak, trend, queueing.

Demand is kept in integer milli-GPUs (1000 = one physical GPU's worth) so that sums over thousands of
tasks stay exact and a quantile is exactly one of the step function's values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

SECONDS_PER_MONTH = 30.4375 * 86400  # a mean Gregorian month


@dataclass(frozen=True)
class StepSeries:
    """Demand over [start, end): `times[i]` starts a step of `values[i]` milli-GPUs that lasts until `times[i+1]` (or `end`)."""

    start: float
    end: float
    times: tuple[float, ...]
    values: tuple[int, ...]

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
        """segments(), computed once: quantiles, the peak and the fluid queue all walk them."""
        return tuple(self.segments())

    @cached_property
    def durations(self) -> dict[int, float]:
        """Milli-GPU value -> seconds spent at it."""
        durations: dict[int, float] = {}
        for t0, t1, v in self._segs:
            durations[v] = durations.get(v, 0.0) + (t1 - t0)
        return durations

    def quantile(self, q: float) -> float:
        """Time-weighted quantile in GPUs: the least value v with share(time with demand <= v) >= q."""
        total = self.window
        if total <= 0:
            return 0.0
        durations = self.durations
        need = q * total
        seen = 0.0
        for v in sorted(durations):
            seen += durations[v]
            # a relative tolerance: durations are sums of float seconds
            if seen >= need * (1 - 1e-12):
                return v / 1000
        return max(durations) / 1000

    def peak(self) -> float:
        """Highest concurrent demand in GPUs."""
        return max(self.durations, default=0) / 1000

    def mean(self) -> float:
        """Time-weighted mean demand in GPUs."""
        if self.window <= 0:
            return 0.0
        return sum(d * v for v, d in self.durations.items()) / self.window / 1000

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
        cov = sum(v * ((t1 - mid) ** 2 - (t0 - mid) ** 2) / 2 for t0, t1, v in self._segs) / w
        var = w * w / 12
        slope = cov / var  # milli-GPUs per second
        return slope * SECONDS_PER_MONTH / mean

    def capacity_for_delay(self, max_delay_s: float) -> float:
        """Fewest GPUs whose queue never holds more than `max_delay_s` of the pool's work (fluid model); cached per series and delay."""
        return _capacity_for_delay(self, max_delay_s)

    def _capacity_for_delay(self, max_delay_s: float) -> float:
        """Fewest GPUs whose queue never holds more than `max_delay_s` of the pool's work (fluid model).

        Work above capacity waits in a backlog B that grows at (demand - C) and drains at (C - demand);
        the wait it implies is B / C (the whole pool working the backlog off). Bisection over whole
        milli-GPUs between the mean (less can never drain) and the peak (never queues).
        """
        lo = max(1, math.ceil(self.mean() * 1000))
        hi = max(lo, math.ceil(self.peak() * 1000))
        segs = self._segs

        def ok(cap: int) -> bool:
            backlog = 0.0
            for t0, t1, v in segs:
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
        times: list[float] = []
        values: list[int] = []

        def emit(t: float, v: int) -> None:
            if values and values[-1] == v:
                return
            times.append(t)
            values.append(v)

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
        if not times:
            times, values = [self.start], [0]
        return StepSeries(self.start, self.end, tuple(times), tuple(values))


@lru_cache(maxsize=32)
def _capacity_for_delay(series: StepSeries, max_delay_s: float) -> float:
    # the sensitivity table re-plans one window under several prices: the queueing capacity does not change
    return series._capacity_for_delay(max_delay_s)


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
    times = np.concatenate((np.array([start], dtype=np.float64), cols[:, 0], cols[:, 1]))
    values = np.concatenate((np.zeros(1, dtype=np.int64), milli, -milli))
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(values[order])
    last = np.append(times[1:] != times[:-1], True)  # the level after every change at one time
    times, level = times[last], level[last]
    keep = times < end
    times, level = times[keep], level[keep]
    changed = np.append(True, level[1:] != level[:-1])
    times, level = times[changed], level[changed]
    return StepSeries(start=start, end=end, times=tuple(_plain(times.tolist())), values=tuple(int(v) for v in level.tolist()))


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


def _plain(times: list[float]) -> list[float]:
    """Whole seconds as ints (a trace's times are), so the series reads as it did before the sweep."""
    return [int(t) if t.is_integer() else t for t in times]


def sum_series(series: Iterable[StepSeries], start: float, end: float) -> StepSeries:
    """Pointwise sum of step functions over one window."""
    intervals = []
    for s in series:
        intervals += [(t0, t1, v) for t0, t1, v in s.segments()]
    return step_series(intervals, start, end)


def scaled(series: StepSeries, factor: float) -> StepSeries:
    """The series times a factor (growth to a horizon), rounded to whole milli-GPUs."""
    return StepSeries(series.start, series.end, series.times, tuple(round(v * factor) for v in series.values))
