"""Honest windows: which part of a history a plan rests on, ramps in it, and how the plan moves with the window.

A commitment pays only if the demand it was sized on goes on for its term. A history whose GPU-hours
sit mostly at its end (a ramp, a new regime) overstates growth and understates the demand the next
year starts from; one shorter than the term says nothing about seasonality. So the planner finds the
trailing stretch that holds most GPU-hours, fits growth there with an interval, warns when the
history is shorter than the term, and shows the plan re-run over other windows and instruments.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from gpu_platform.catalog import Catalog
from gpu_platform.planning.demand import Demand, DemandGroup
from gpu_platform.planning.planner import Plan, plan
from gpu_platform.planning.replay import Job
from gpu_platform.planning.series import EXACT, SECONDS_PER_MONTH, Columns, Ints, StepSeries, slice_series
from gpu_platform.pricing import load_commitments

DAY = 86400.0
RAMP_SHARE = 0.9
"""A ramp: this share of the GPU-hours falls in a trailing stretch shorter than RAMP_SPAN of the window."""
RAMP_SPAN = 0.5
SENSITIVITY_DAYS = (None, 90, 28)
SENSITIVITY_INSTRUMENTS = ("savings-plan-1y", "savings-plan-3y")


def regroup(g: DemandGroup, start: float, end: float) -> DemandGroup:
    """The group read over [start, end): its series, quantiles, growth and jobs arriving there."""
    if g.series is None:
        return g
    s = slice_series(g.series, start, end)
    spot = slice_series(g.spot_series, start, end) if g.spot_series is not None else None
    return dataclasses.replace(
        g,
        series=s,
        spot_series=spot,
        p50=s.quantile(0.5),
        p95=s.quantile(0.95),
        p99=s.quantile(0.99),
        peak=s.peak(),
        interruptible=spot is not None and spot.peak() > 0,
        interruptible_p95=spot.quantile(0.95) if spot is not None else 0.0,
        interruptible_share=(spot.mean() / s.mean() if spot is not None and s.mean() > 0 else 0.0),
        growth_per_month=s.growth_per_month(),
        jobs=_arriving(g.jobs, start, end),
    )


def _arriving(jobs: tuple[Job, ...], start: float, end: float) -> tuple[Job, ...]:
    """The jobs arriving in [start, end), in their order (times are whole seconds or floats: exact as float64)."""
    at = np.fromiter(map(itemgetter(0), jobs), dtype=np.float64, count=len(jobs))
    return tuple(itertools.compress(jobs, ((start <= at) & (at < end)).tolist()))


def windowed(demand: Demand, days: float) -> Demand:
    """The demand over the last `days` of its history (the whole history when shorter)."""
    if demand.window is None:
        return demand
    end = demand.window[1]
    start = max(demand.window[0], end - days * DAY)
    return dataclasses.replace(
        demand,
        groups=tuple(regroup(g, start, end) for g in demand.groups),
        totals=tuple(regroup(g, start, end) for g in demand.totals),
        window=(start, end),
    )


def ramp_start(s: StepSeries, share: float = RAMP_SHARE) -> float | None:
    """Start of the shortest trailing stretch holding `share` of the GPU-hours, when it is under RAMP_SPAN of the window."""
    c = _exact_columns(s)
    if c is not None:
        # the loop below on columns: its sums are whole numbers under 2**53, so integer suffix sums are the same
        parts = c.v * (c.t1 - c.t0).astype(np.int64)
        tail = np.cumsum(parts[::-1])[::-1]  # tail[k]: GPU-seconds of steps k and after
        total_i = int(tail[0]) if len(tail) else 0
        if total_i <= 0 or s.window <= 0:
            return None
        need_i = share * total_i
        reach = np.flatnonzero(tail >= need_i)
        if not len(reach):
            return None
        k = int(reach[-1])
        acc = float(tail[k + 1]) if k + 1 < len(tail) else 0.0
        v, t0, t1 = int(c.v[k]), _num(c.t0[k]), _num(c.t1[k])
        at = t1 - (need_i - acc) / v if v else t0
        return at if s.end - at < RAMP_SPAN * s.window else None
    segs = list(s.segments())
    total = sum((t1 - t0) * v for t0, t1, v in segs)
    if total <= 0 or s.window <= 0:
        return None
    need = share * total
    acc = 0.0
    for t0, t1, v in reversed(segs):
        part = (t1 - t0) * v
        if acc + part >= need:
            at = t1 - (need - acc) / v if v else t0
            return at if s.end - at < RAMP_SPAN * s.window else None
        acc += part
    return None


@dataclass(frozen=True)
class Growth:
    """Growth per month fitted to daily means, with a 95 % interval."""

    per_month: float
    low: float
    high: float
    days: int


def _exact_columns(s: StepSeries) -> Columns | None:
    """The series' columns where they are contiguous whole seconds from its start and every sum of milli-GPU-seconds is exact."""
    c = s.cols
    if c is None or not c.whole or float(s.start) != float(np.floor(s.start)) or not len(c.v):
        return None
    if float(c.t0[0]) < s.start or not np.array_equal(c.t0[1:], c.t1[:-1]):
        return None
    if float(np.abs(c.v).max()) * (float(c.t1[-1]) - float(c.t0[0])) >= EXACT:
        return None
    return c


def _num(t: np.float64) -> float:
    """A column's time as the series holds it: whole seconds as an int."""
    f = float(t)
    return int(f) if f.is_integer() else f


def _integral_to(c: Columns, at: Ints) -> Ints:
    """Milli-GPU-seconds of demand before each time of `at` (whole seconds), exact."""
    before = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(c.v * (c.t1 - c.t0).astype(np.int64))))
    idx = np.searchsorted(c.t0, at, side="right") - 1
    k = np.clip(idx, 0, len(c.v) - 1)
    inside = (np.minimum(at, c.t1[k]) - c.t0[k]).astype(np.int64)
    out: Ints = np.where(idx < 0, 0, before[k] + c.v[k] * inside)
    return out


def daily_means(s: StepSeries) -> list[float]:
    """Mean concurrent demand (GPUs' worth) of each whole day of the series' window."""
    days = int(s.window // DAY)
    c = _exact_columns(s)
    if c is not None and days > 0:
        # each day's work as a difference of the running integral: the whole numbers the loop below adds up
        bounds = np.array([s.start + d * DAY for d in range(days + 1)], dtype=np.float64)
        work_i = np.diff(_integral_to(c, bounds.astype(np.int64)))
        return [w / DAY / 1000 for w in work_i.astype(np.float64).tolist()]
    work = [0.0] * days
    for a, b, v in s.segments():
        d, at = int((a - s.start) // DAY), a
        while d < days and at < b:
            cut = min(b, s.start + (d + 1) * DAY)
            work[d] += (cut - at) * v
            at, d = cut, d + 1
    return [w / DAY / 1000 for w in work]


def daily_growth(s: StepSeries) -> Growth | None:
    """Least-squares slope of daily mean demand over the mean, per month, +- 1.96 standard errors (None under 7 days)."""
    if int(s.window // DAY) < 7:
        return None
    means = daily_means(s)
    n = len(means)
    xbar, ybar = (n - 1) / 2, sum(means) / n
    if ybar <= 0:
        return None
    sxx = sum((x - xbar) ** 2 for x in range(n))
    slope = sum((x - xbar) * (y - ybar) for x, y in enumerate(means)) / sxx
    resid = sum((y - ybar - slope * (x - xbar)) ** 2 for x, y in enumerate(means))
    se = math.sqrt(resid / (n - 2) / sxx) if n > 2 else 0.0
    scale = SECONDS_PER_MONTH / DAY / ybar
    return Growth(slope * scale, (slope - 1.96 * se) * scale, (slope + 1.96 * se) * scale, n)


def history_notes(demand: Demand, term_months: int, regimes: bool = False) -> tuple[list[str], dict[str, object]]:
    """Warnings about the window (ramps, a history shorter than the term) and, per class, its ramp and stable growth.

    With `regimes` the plan already rests on each class's current regime (planning/regimes.py), which says more
    than a ramp: the ramp is still reported in the JSON, not as a note.
    """
    if demand.window is None:
        return [], {}
    start, end = demand.window
    days = (end - start) / DAY
    notes = []
    if term_months and days < term_months * SECONDS_PER_MONTH / DAY:
        notes.append(
            f"the history covers {days:.0f} days, less than the {term_months}-month commitment term: the reserve assumes "
            "this window's demand goes on for the whole term (see the sensitivity table)"
        )
    classes: dict[str, object] = {}
    for g in demand.totals:
        if g.series is None:
            continue
        ramp = ramp_start(g.series)
        stable = slice_series(g.series, ramp, end) if ramp is not None else g.series
        fit = daily_growth(stable)
        entry: dict[str, object] = {"rampStart": ramp}
        if fit is not None:
            entry["growthPerMonth"] = {"value": round(fit.per_month, 4), "low": round(fit.low, 4), "high": round(fit.high, 4), "days": fit.days}
        classes[g.workload_class] = entry
        if ramp is not None and not regimes:
            tail = (end - ramp) / DAY
            grown = f"; growth there {fit.per_month:+.0%} a month (95 % interval {fit.low:+.0%} to {fit.high:+.0%})" if fit else ""
            notes.append(
                f"{g.workload_class}: {RAMP_SHARE:.0%} of its GPU-hours fall in the last {tail:.0f} of {days:.0f} days (a ramp or a new "
                f"regime): growth over the whole window ({g.growth_per_month:+.0%} a month) is that ramp; "
                f"plan on --window-days {math.ceil(tail)}{grown}"
            )
    return notes, classes


def sensitivity(demand: Demand, catalog: Catalog, production: bool, existing: Mapping[tuple[str, str], int] | None) -> list[dict[str, object]]:
    """The plan re-run per window (full, last 90 d, last 28 d) and instrument, plus the Spot discount moved 10 points each way."""
    rows: list[dict[str, object]] = []
    c = load_commitments()
    spans = SENSITIVITY_DAYS if demand.window is not None else (None,)
    base_spot = demand.options.spot_discount
    for days in spans:
        d = windowed(demand, days) if days else demand
        for name in SENSITIVITY_INSTRUMENTS:
            opts = dataclasses.replace(d.options, instrument=name, reserved_discount=c.instrument(name).discount)
            rows.append(_row(plan(dataclasses.replace(d, options=opts), catalog, production, existing), days, name, base_spot))
        del d  # a window's series go before the next window's are sliced: a million-row history holds two at most, not three
    for spot in (base_spot - 0.1, base_spot + 0.1):
        opts = dataclasses.replace(demand.options, spot_discount=round(spot, 4))
        rows.append(_row(plan(dataclasses.replace(demand, options=opts), catalog, production, existing), None, demand.options.instrument, spot))
    return rows


def _row(p: Plan, days: int | None, instrument: str, spot: float) -> dict[str, object]:
    return {
        "window": "full" if days is None else f"last {days} d",
        "instrument": instrument,
        "spotDiscount": round(spot, 4),
        "reserved": {t.workload_class: t.reserved for t in p.totals},
        "expectedMonthlyCost": round(p.expected_cost, 2),
        "onDemandOnlyExpectedMonthlyCost": round(p.expected_on_demand_only, 2),
    }
