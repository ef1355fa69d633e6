"""Honest windows: which part of a history a plan rests on, ramps in it, and how the plan moves with the window.

A commitment pays only if the demand it was sized on goes on for its term. A history whose GPU-hours
sit mostly at its end (a ramp, a new regime) overstates growth and understates the demand the next
year starts from; one shorter than the term says nothing about seasonality. So the planner finds the
trailing stretch that holds most GPU-hours, fits growth there with an interval, warns when the
history is shorter than the term, and shows the plan re-run over other windows and instruments.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_platform.catalog import Catalog
from gpu_platform.planning.demand import Demand, DemandGroup
from gpu_platform.planning.planner import Plan, plan
from gpu_platform.planning.series import SECONDS_PER_MONTH, StepSeries
from gpu_platform.pricing import load_commitments

DAY = 86400.0
RAMP_SHARE = 0.9
"""A ramp: this share of the GPU-hours falls in a trailing stretch shorter than RAMP_SPAN of the window."""
RAMP_SPAN = 0.5
SENSITIVITY_DAYS = (None, 90, 28)
SENSITIVITY_INSTRUMENTS = ("savings-plan-1y", "savings-plan-3y")


def slice_series(s: StepSeries, start: float, end: float) -> StepSeries:
    """The series over [start, end) (clipped to its own window)."""
    a, b = max(start, s.start), min(end, s.end)
    times: list[float] = []
    values: list[int] = []
    for t0, t1, v in s.segments():
        if t1 <= a or t0 >= b:
            continue
        times.append(max(t0, a))
        values.append(v)
    if not times or times[0] > a:
        times.insert(0, a)
        values.insert(0, 0)
    return StepSeries(start=a, end=b, times=tuple(times), values=tuple(values))


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
        jobs=tuple(j for j in g.jobs if start <= j.arrival < end),
    )


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


def daily_means(s: StepSeries) -> list[float]:
    """Mean concurrent demand (GPUs' worth) of each whole day of the series' window."""
    days = int(s.window // DAY)
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
