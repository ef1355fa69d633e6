"""Regimes: each class's history is planned from its last change of level, found on concurrent demand and arrivals.

The trace's own figures are recomputed here from the file: daily mean demand and daily arrivals by a sweep of
its rows, and every cut of each signal tried by brute force (no prefix sums, no planner code).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpu_platform.planning.regimes import MIN_DAYS, changes
from gpu_platform.planning.windows import DAY
from tests.planning.helpers import TRACE_FILES, plan_json, require_trace, row, run_cli
from tests.planning.test_trace import DEFAULT_QOS_CLASS
from tests.planning.test_windows import ramp_trace


def test_a_step_in_level_is_a_change_and_noise_or_a_small_step_is_not() -> None:
    step = [1.0] * 30 + [5.0] * 30
    (c,) = changes("concurrent demand", step)
    assert (c.day, c.before, c.after) == (30, 1.0, 5.0) and c.explained == pytest.approx(1.0)
    assert changes("x", [1.0, 1.2] * 30) == []  # noise around one level
    assert changes("x", [2.0] * 30 + [3.0] * 30) == []  # 1.5 x: under the 2 x a regime needs
    # a step in the last days: the regime still spans MIN_DAYS, never less (too short to plan a term on)
    assert [c.day for c in changes("x", [1.0] * 50 + [9.0] * (MIN_DAYS - 1))] == [50 + (MIN_DAYS - 1) - MIN_DAYS]
    # two steps: the current regime starts at the later one (the earlier one is history either way)
    assert [c.day for c in changes("x", [1.0] * 30 + [4.0] * 30 + [16.0] * 30)] == [60]


def _brute_cut(x: list[float]) -> tuple[int, float, float, float]:
    """The least-squares cut of x (both sides >= MIN_DAYS), tried one by one."""
    mean = sum(x) / len(x)
    total = sum((v - mean) ** 2 for v in x)
    best = None
    for k in range(MIN_DAYS, len(x) - MIN_DAYS + 1):
        a, b = x[:k], x[k:]
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        sse = sum((v - ma) ** 2 for v in a) + sum((v - mb) ** 2 for v in b)
        if best is None or sse < best[0] - 1e-9:
            best = (sse, k, ma, mb)
    assert best is not None
    return best[1], best[2], best[3], 1 - best[0] / total


def _signals(path: Path, cls: str) -> tuple[list[float], list[float], int]:
    """(daily mean demand in GPUs, daily arrivals, history start) of one class, from the file."""
    with path.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if int(r["num_gpu"]) > 0 and int(r["gpu_milli"]) > 0]
    start = min(int(r["creation_time"]) for r in rows)
    end = max(int(r["deletion_time"]) for r in rows)
    days = (end - start) // int(DAY)
    demand = [0.0] * days
    arrivals = [0.0] * days
    for r in rows:
        if DEFAULT_QOS_CLASS[r["qos"]] != cls:
            continue
        a, b = int(r["creation_time"]), int(r["deletion_time"])
        gpus = int(r["num_gpu"]) * int(r["gpu_milli"]) / 1000
        d = (a - start) // int(DAY)
        if d < days:
            arrivals[d] += 1
        for day in range(max(0, d), min(days, (b - start) // int(DAY) + 1)):
            lo, hi = start + day * DAY, start + (day + 1) * DAY
            demand[day] += gpus * max(0.0, min(b, hi) - max(a, lo)) / DAY
    return demand, arrivals, start


@pytest.mark.parametrize("cls", ["training", "inference", "batch"])
def test_the_trace_regimes_are_its_least_squares_cuts(cls: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = require_trace(TRACE_FILES[0])
    doc = plan_json(capsys, "--demand", str(path))
    got = doc["demand"]["regimes"][cls]
    demand, arrivals, _ = _signals(path, cls)
    starts = []
    for signal, x in (("concurrent demand", demand), ("arrivals", arrivals)):
        k, before, after, explained = _brute_cut(x)
        mine = [c for c in got["changes"] if c["signal"] == signal]
        if explained >= 0.5 and max(before, after) >= 2 * min(before, after):
            assert mine and mine[0]["day"] == k, (cls, signal)
            assert (mine[0]["before"], mine[0]["after"]) == (pytest.approx(before, abs=1e-3), pytest.approx(after, abs=1e-3))
            starts.append(max(c["day"] for c in mine))
        else:
            assert not mine, (cls, signal)
    assert got["fromDay"] == max(starts, default=0)  # the latest change any signal shows
    assert 109 <= got["fromDay"] <= 121  # the trace's step: 99.7 % of its tasks arrive in the last 35 of 149 days


def test_the_headline_is_the_regime_and_the_full_window_stands_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    path = require_trace(TRACE_FILES[0])
    doc = plan_json(capsys, "--demand", str(path))
    full = plan_json(capsys, "--demand", str(path), "--window", "full")
    assert doc["plan"]["fullWindow"]["expectedMonthlyCost"] == full["plan"]["expectedMonthlyCost"]
    assert doc["plan"]["fullWindow"]["reserved"] == {c: row(full, "plan", c)["reserved"] for c in ("training", "inference", "batch")}
    # today's run rate: the regime's bill is over twice the full window's
    assert doc["plan"]["expectedMonthlyCost"] > 2 * full["plan"]["expectedMonthlyCost"]
    # inference's regime: its P95 over its own days (recomputed by sweeping the daily-free way: the step function's times)
    start = doc["demand"]["regimes"]["inference"]["fromDay"] * DAY
    regime = plan_json(capsys, "--demand", str(path), "--window-days", str(149 - doc["demand"]["regimes"]["inference"]["fromDay"]))
    assert start > 0 and row(doc, "demand", "inference")["p95"] == row(regime, "demand", "inference")["p95"]
    code, out, _ = run_cli(capsys, "capacity", "plan", "--demand", str(path))
    assert code == 0
    assert "Window: each class's current regime (training from day " in out and "--window full plans on it" in out
    # growth is printed as a trend only where its interval excludes 0
    for cls, r in doc["demand"]["regimes"].items():
        g = r["growthPerMonth"]
        line = next(n for n in doc["assumptions"]["notes"] if n.startswith(f"{cls}: current regime"))
        assert g["trend"] == (g["low"] > 0 or g["high"] < 0)
        assert ("no growth trend" in line) == (not g["trend"])
        assert row(doc, "demand", cls)["growthPerMonth"] == (pytest.approx(g["value"], abs=1e-4) if g["trend"] else 0)


def test_a_ramp_trace_is_planned_from_its_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1 GPU now and then for 80 days, 10 GPUs for the last 20: the plan rests on the last 20 days."""
    doc = plan_json(capsys, "--demand", str(ramp_trace(tmp_path)))
    assert doc["demand"]["window"] == {"start": 80 * DAY, "end": 100 * DAY}
    assert doc["demand"]["regimes"]["inference"]["fromDay"] == 80
    # all 10 are up every hour of the regime, so all 10 are committed: the N+1 spare (kept up every hour, bought with
    # the commitment) carries the first, and 9 are reserved above it
    p = row(doc, "plan", "inference")
    assert (p["reserved"], p["alwaysOn"]) == (9, 1)
    assert plan_json(capsys, "--demand", str(ramp_trace(tmp_path)), "--window", "full")["demand"]["window"]["start"] == 0


def test_a_class_whose_current_regime_is_idle_plans_no_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Training ran for the first 40 of 100 days and stopped; inference started on day 60. The regime plan gives
    training nothing (it used to keep one 8-GPU node for 0 GPUs of demand) and inference its one GPU, committed as the
    N+1 spare it keeps up every hour anyway (a reserved node on top of it would be bought twice)."""
    head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
    day = int(DAY)
    rows = [f"t{i},1000,1024,8,1000,,Guaranteed,Running,{i * day},{i * day + day // 2},{i * day}" for i in range(40)]
    rows += [f"i{i},1000,1024,1,1000,,LS,Running,{i * day},{(i + 1) * day},{i * day}" for i in range(60, 100)]
    path = tmp_path / "pods.csv"
    path.write_text("\n".join([head, *rows]) + "\n")
    doc = plan_json(capsys, "--demand", str(path))
    assert doc["demand"]["regimes"]["training"]["fromDay"] == 40 and doc["demand"]["regimes"]["inference"]["fromDay"] == 60
    training = row(doc, "plan", "training")
    assert (training["reserved"], training["onDemand"], training["spot"], training["monthlyCost"]) == (0, 0, 0, 0)
    inference = row(doc, "plan", "inference")
    assert (inference["reserved"], inference["alwaysOn"]) == (0, 1)  # its one GPU, always busy, is the spare kept up
