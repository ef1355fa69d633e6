"""Windows: the plan states the window it uses, finds ramps, fits growth on the stable part, and shows its sensitivity."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.planning.series import SECONDS_PER_MONTH, step_series
from gpu_platform.planning.windows import DAY, daily_growth, ramp_start, slice_series
from tests.planning.helpers import TRACE_FILES, plan_json, require_trace, row, run_cli, write_demand
from tests.planning.test_inputs import problems

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def test_slice_keeps_the_level_at_the_cut() -> None:
    s = step_series([(0, 100, 2000), (50, 150, 1000)], 0, 200)  # 2 GPUs 0-50, 3 GPUs 50-100, 1 GPU 100-150, 0 after
    cut = slice_series(s, 75, 125)
    assert (cut.start, cut.end) == (75, 125)
    assert list(cut.segments()) == [(75, 100, 3000), (100, 125, 1000)]
    assert cut.mean() == pytest.approx(2.0)


def test_ramp_is_the_short_trailing_stretch_holding_most_gpu_hours() -> None:
    """1 GPU for 90 days, then 100 GPUs for 10 days: 90 % of 1,090 GPU-days is 981, held by the last 9.81 days."""
    s = step_series([(0, 90 * DAY, 1000), (90 * DAY, 100 * DAY, 100000)], 0, 100 * DAY)
    assert ramp_start(s) == pytest.approx(90.19 * DAY)
    slow = step_series([(0, 90 * DAY, 1000), (90 * DAY, 100 * DAY, 20000)], 0, 100 * DAY)
    assert ramp_start(slow) is None  # 90 % of 290 GPU-days takes the last 71 days: more than half the window
    flat = step_series([(0, 100 * DAY, 1000)], 0, 100 * DAY)
    assert ramp_start(flat) is None  # 90 % of a flat history takes 90 % of its time


def test_growth_on_daily_means_with_an_interval() -> None:
    """Demand rising by 10 milli-GPUs a day from 1 GPU over 30 days: slope 0.01 GPU/day over a mean of 1.145 GPUs."""
    s = step_series([(d * DAY, (d + 1) * DAY, 1000 + 10 * d) for d in range(30)], 0, 30 * DAY)
    fit = daily_growth(s)
    assert fit is not None and fit.days == 30
    assert fit.per_month == pytest.approx(0.01 * SECONDS_PER_MONTH / DAY / 1.145)
    assert fit.low == pytest.approx(fit.per_month) and fit.high == pytest.approx(fit.per_month)  # a perfect line: no spread
    assert daily_growth(step_series([(0, 3 * DAY, 1000)], 0, 3 * DAY)) is None  # under a week: no fit


def ramp_trace(tmp_path: Path) -> Path:
    """Inference: 1 GPU on day 0, 1 GPU from day 60, and 9 more for the last 20 of 100 days (221 GPU-days, 90 % after day 80.1)."""
    path = tmp_path / "pods.csv"
    rows = [
        HEADER,
        f"a,1000,1024,1,1000,,LS,Running,0,{int(DAY)},0",
        f"b,1000,1024,1,1000,,LS,Running,{int(60 * DAY)},{int(100 * DAY)},0",
        f"c,1000,1024,9,1000,,LS,Running,{int(80 * DAY)},{int(100 * DAY)},0",
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_plan_states_its_window_and_window_days_moves_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = ramp_trace(tmp_path)
    full = plan_json(capsys, "--demand", str(trace), "--window", "full")
    assert full["demand"]["window"] == {"start": 0, "end": 100 * DAY}
    notes = full["assumptions"]["notes"]
    assert any(n.startswith("the history covers 100 days, less than the 12-month commitment term") for n in notes)
    assert any(n.startswith("inference: 90% of its GPU-hours fall in the last") for n in notes)
    assert full["demand"]["history"]["inference"]["rampStart"] is not None
    last = plan_json(capsys, "--demand", str(trace), "--window-days", "20")
    assert last["demand"]["window"] == {"start": 80 * DAY, "end": 100 * DAY}
    assert row(last, "demand", "inference")["p50"] == 10
    # over 100 days even the first GPU is busy only 41 % of the time; over the last 20 days all 10 are always busy:
    # the N+1 spare kept up every hour carries the first, 9 are reserved above it
    assert (row(full, "plan", "inference")["reserved"], row(last, "plan", "inference")["reserved"]) == (0, 9)
    assert row(last, "plan", "inference")["alwaysOn"] == 1


def test_sensitivity_table_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", str(ramp_trace(tmp_path)), "--window", "full")
    rows = [(r["window"], r["instrument"], r["spotDiscount"]) for r in doc["sensitivity"]]
    assert rows == [
        ("full", "savings-plan-1y", 0.6),
        ("full", "savings-plan-3y", 0.6),
        ("last 90 d", "savings-plan-1y", 0.6),
        ("last 90 d", "savings-plan-3y", 0.6),
        ("last 28 d", "savings-plan-1y", 0.6),
        ("last 28 d", "savings-plan-3y", 0.6),
        ("full", "savings-plan-1y", 0.5),
        ("full", "savings-plan-1y", 0.7),
    ]
    first = doc["sensitivity"][0]
    assert first["expectedMonthlyCost"] == doc["plan"]["expectedMonthlyCost"]  # the first row is the plan itself
    # at 55 % off (3 years) the break-even falls to 45 %: the first GPU, busy 41 %, still does not pay
    assert doc["sensitivity"][1]["reserved"]["inference"] == 0
    # on the last 28 days the 10 GPUs of the last 20 days are busy 20/28 = 71 %: above both break-evens; the first is
    # the N+1 spare, kept up and committed anyway, so 9 are reserved
    assert doc["sensitivity"][4]["reserved"]["inference"] == doc["sensitivity"][5]["reserved"]["inference"] == 9
    code, out, _ = run_cli(capsys, "capacity", "plan", "--demand", str(ramp_trace(tmp_path)))
    assert code == 0 and "Sensitivity (the same plan over other windows, instruments and Spot discounts):" in out


def test_window_days_needs_a_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demand = write_demand(tmp_path, {"demand": [{"team": "a", "class": "batch", "p50": 1, "p95": 2}]})
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(demand), "--window-days", "28")
    assert code == 2
    assert err.strip() == "--window-days: 28.0: needs a history (a trace or an export); allowed: days > 0, with a trace CSV or a Prometheus export"
    assert problems(capsys, ramp_trace(tmp_path), "--window-days", "0")[0].startswith("--window-days: 0.0: 0 is not a positive number of days")


def test_full_trace_flags_its_ramp(capsys: pytest.CaptureFixture[str]) -> None:
    """openb_pod_list_default: 149 days, most batch and training GPU-hours in the last five weeks."""
    doc = plan_json(capsys, "--demand", str(require_trace(TRACE_FILES[0])), "--window", "full")
    notes = doc["assumptions"]["notes"]
    assert any(n.startswith("the history covers 149 days") for n in notes)
    assert any(n.startswith("batch: 90% of its GPU-hours fall in the last") for n in notes)
    assert {r["window"] for r in doc["sensitivity"]} == {"full", "last 90 d", "last 28 d"}
