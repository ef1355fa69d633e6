"""Step-function arithmetic: quantiles, peak, growth and the queueing-delay capacity, against hand-worked values."""

from __future__ import annotations

import pytest

from gpu_platform.planning.series import SECONDS_PER_MONTH, step_series, sum_series

H = 3600


def test_quantiles_are_time_weighted_not_sample_weighted() -> None:
    """Demand 1 GPU for 90 s then 10 GPUs for 10 s: P50 is 1, P95 is 10; counting steps instead would give P50 = 10."""
    s = step_series([(0, 100, 1000), (90, 100, 9000)], 0, 100)
    assert s.quantile(0.5) == 1
    assert s.quantile(0.9) == 1  # exactly 90 % of the time at or below 1
    assert s.quantile(0.95) == 10
    assert s.peak() == 10
    assert s.mean() == pytest.approx((90 * 1 + 10 * 10) / 100)


def test_window_is_shared_and_idle_time_counts_as_zero() -> None:
    """A class with nothing running for most of the window has low quantiles (docs/capacity-planning.md: demand 0 then)."""
    s = step_series([(80, 100, 2000)], 0, 100)
    assert s.quantile(0.5) == 0
    assert s.quantile(0.8) == 0
    assert s.quantile(0.81) == 2


def test_intervals_are_half_open() -> None:
    """A task ending at t and one starting at t never overlap: [creation, deletion)."""
    s = step_series([(0, 10, 1000), (10, 20, 1000)], 0, 20)
    assert s.peak() == 1


def test_sum_series_adds_pointwise() -> None:
    a = step_series([(0, 50, 1000)], 0, 100)
    b = step_series([(25, 75, 2000)], 0, 100)
    total = sum_series([a, b], 0, 100)
    assert total.peak() == 3
    assert total.quantile(0.25) == 0 and total.quantile(0.5) == 1 and total.quantile(0.75) == 2


def test_growth_of_a_linear_ramp() -> None:
    """Demand stepping up 1 GPU per month from 1 to 12 (mean 6.5). The staircase is t + 1 - frac(t) (t in months);
    frac(t) adds covariance 1/12 against Var(t) = 12^2/12, so the exact least-squares slope is 1 - 1/144 GPU/month."""
    m = SECONDS_PER_MONTH
    s = step_series([(i * m, 12 * m, 1000) for i in range(12)], 0, 12 * m)
    assert s.mean() == pytest.approx(6.5)
    assert s.growth_per_month() == pytest.approx((1 - 1 / 144) / 6.5, rel=1e-9)
    falling = step_series([(0, (12 - i) * m, 1000) for i in range(12)], 0, 12 * m)
    assert falling.growth_per_month() == pytest.approx(-(1 - 1 / 144) / 6.5, rel=1e-9)


def test_capacity_for_delay_matches_the_fluid_queue_by_hand() -> None:
    """10 GPUs for an hour then idle for an hour: with capacity C the backlog after the hour is (10 - C) h,
    its wait (10 - C) / C h; a 30-minute target needs C >= 20/3 GPUs."""
    s = step_series([(0, H, 10000)], 0, 2 * H)
    cap = s.capacity_for_delay(0.5 * H)
    assert cap == pytest.approx(20 / 3, abs=0.001)
    assert s.capacity_for_delay(10 * H) == pytest.approx(5.0)  # everything can wait: the mean suffices
    assert s.capacity_for_delay(1) == pytest.approx(10.0, abs=0.01)  # nothing may wait: the peak


def test_served_work_queues_above_capacity_and_drains_after() -> None:
    """Capacity 2 GPUs: 4 GPUs of demand on [0, 10) leave a backlog of 20 GPU-s, drained at (2 - 1) GPUs on [10, 40):
    the whole capacity works until t = 30, then only the 1 GPU of demand; turned away instead, 2 then 1."""
    demand = step_series([(0, 10, 4000), (10, 40, 1000)], 0, 40)
    queued = demand.served(2000, queue=True)
    assert list(queued.segments()) == [(0, 30, 2000), (30, 40, 1000)]
    assert queued.mean() == pytest.approx(demand.mean())  # all work is done inside the window
    dropped = demand.served(2000, queue=False)
    assert list(dropped.segments()) == [(0, 10, 2000), (10, 40, 1000)]
    # backlog left at the end of the window is not served inside it
    assert list(step_series([(0, 10, 4000)], 0, 12).served(2000, queue=True).segments()) == [(0, 12, 2000)]


def test_the_sweep_matches_a_dict_of_changes_and_keeps_huge_values_exact() -> None:
    """step_series sorts and sweeps with numpy; on random intervals it equals the plain dict-of-changes sum, and values
    past int64 (a hostile export's 1e30 GPUs) stay exact Python integers for the bounds to refuse."""
    import random

    from gpu_platform.planning.series import _step_series_big

    rng = random.Random(7)
    for _ in range(200):
        rows = [(rng.randrange(0, 50), rng.randrange(0, 60), rng.choice([250, 500, 1000, 8000])) for _ in range(rng.randrange(1, 30))]
        clipped = [(max(a, 5), min(b, 45), v) for a, b, v in rows if min(b, 45) > max(a, 5)]
        assert step_series(rows, 5, 45) == (_step_series_big(clipped, 5, 45) if clipped else step_series([], 5, 45))
    assert step_series([(0, 10, 10**30)], 0, 10).values == (10**30,)
