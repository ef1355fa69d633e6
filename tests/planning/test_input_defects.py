"""Input defects of issue 19, one test each: fixed, or one line `<file>: <key.path>: <what>; <allowed>` and exit 2.

Prometheus semantics reproduced (prometheus v2 web/api/v1/api.go queryRange and promql/engine.go
rangeEval): a range query evaluates the expression at start, start + step, ...; a series appears in the
`matrix` result only at the steps where the expression has a value, so with the platform's rule
`sum by (tenant, resource)` over running pods' requests, a tenant with no GPU pod has no sample then.
So a gap in one series is zero demand, while a stretch where no series has any sample is missing data.
Each series carries its own resolution: offset or mixed-step series must not shrink each other's steps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.k8s.alerts import TENANT_ALLOCATED
from tests.conftest import stack_path
from tests.planning.helpers import plan_json, row, write_demand
from tests.planning.test_inputs import problems

T0 = 1_700_000_000


def series(tenant: str, resource: str, points: list[tuple[float, Any]]) -> dict[str, Any]:
    """One series of the per-tenant allocation rule with explicit (time, value) samples."""
    return {"metric": {"__name__": TENANT_ALLOCATED, "tenant": tenant, "resource": resource}, "values": [[T0 + t, str(v)] for t, v in points]}


def export(tmp_path: Path, *result: dict[str, Any]) -> Path:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": list(result)}}))
    return path


def test_offset_series_keep_their_own_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """serving at :00 and data-platform at :30 of every minute (60 s step each): before, the step was the 30 s between
    the two series and every sample held half a step, so half the window read as zero demand."""
    path = export(
        tmp_path,
        series("serving", "nvidia_com_gpu", [(i * 60, 2) for i in range(20)]),
        series("data-platform", "nvidia_com_gpu", [(30 + i * 60, 4) for i in range(20)]),
    )
    doc = plan_json(capsys, "--demand", str(path), "--stack", "prod")
    assert (row(doc, "demand", "inference")["p50"], row(doc, "demand", "batch")["p50"]) == (2, 4)


def test_mixed_resolution_series_hold_for_their_own_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 5-minute series next to a 1-minute one: each 5-minute sample holds 300 s, not 60 s."""
    path = export(
        tmp_path,
        series("serving", "nvidia_com_gpu", [(i * 60, 1) for i in range(30)]),
        series("data-platform", "nvidia_com_gpu", [(i * 300, 8) for i in range(6)]),
    )
    doc = plan_json(capsys, "--demand", str(path), "--stack", "prod")
    assert row(doc, "demand", "batch")["p50"] == 8 and row(doc, "demand", "batch")["p95"] == 8


def test_a_series_absent_for_a_while_is_zero_demand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """data-platform has samples for the first quarter only (its pods then ended): zero afterwards, P50 0, peak 8."""
    path = export(
        tmp_path,
        series("serving", "nvidia_com_gpu", [(i * 60, 1) for i in range(40)]),
        series("data-platform", "nvidia_com_gpu", [(i * 60, 8) for i in range(10)]),
    )
    batch = row(plan_json(capsys, "--demand", str(path), "--stack", "prod"), "demand", "batch")
    assert (batch["p50"], batch["peak"]) == (0, 8)


def test_reversed_samples_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = export(tmp_path, series("serving", "nvidia_com_gpu", [(0, 1), (120, 2), (60, 3)]))
    assert problems(capsys, path, "--stack", "prod") == [
        f"{path}: data.result[0].values[2]: time {T0 + 60} is not after the previous sample's ({T0 + 120}); "
        "allowed: samples in time order, as query_range returns them"
    ]


def test_a_gap_in_every_series_is_missing_data_not_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Samples for 10 minutes, nothing at all for an hour, samples again: Prometheus was down, demand was not zero."""
    points = [(i * 60, 3) for i in range(10)] + [(4200 + i * 60, 3) for i in range(10)]
    path = export(tmp_path, series("serving", "nvidia_com_gpu", points))
    (line,) = problems(capsys, path, "--stack", "prod")
    assert line == (
        f"{path}: data.result: no series has a sample from {T0 + 600} to {T0 + 4200} (1.0 h): missing data is not zero demand; "
        "allowed: an export without gaps (query the missing range again, or plan on the part after the gap)"
    )


@pytest.mark.parametrize("bad", ["NaN", "+Inf", "-1"])
def test_non_finite_or_negative_values_are_an_error(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NaN and Inf used to reach the planner and exit 70; now one line, exit 2."""
    path = export(tmp_path, series("serving", "nvidia_com_gpu", [(0, 1), (60, bad), (120, 1)]))
    assert problems(capsys, path, "--stack", "prod") == [
        f"{path}: data.result[0].values[1]: value '{bad}' is not a finite, non-negative number of GPUs; allowed: 0 or more"
    ]


def test_zero_length_windows_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "pods.csv"
    header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
    trace.write_text(f"{header}\na,1000,1024,1,1000,,LS,Running,50,50,50\n")
    assert problems(capsys, trace) == [
        f"{trace}: deletion_time: every GPU task ends when it starts (50): the trace spans no time; allowed: a window of positive length"
    ]
    path = export(tmp_path, series("serving", "nvidia_com_gpu", [(0, 1)]))
    assert problems(capsys, path, "--stack", "prod") == [
        f"{path}: data.result: no series has two samples, so the query's step is unknown; allowed: an export over at least two steps"
    ]


def test_growth_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """growthPerMonth 10 (read as 10 %, meant 0.10) over 36 months planned 10^37 GPUs; now one line, exit 2."""
    demand = write_demand(tmp_path, {"demand": [{"team": "a", "class": "batch", "p50": 1, "p95": 2, "growthPerMonth": 10, "leadTimeMonths": 36}]})
    assert problems(capsys, demand) == [
        f"{demand}: demand[0].growthPerMonth: 10 a month over 36 months multiplies demand by 3.09e+37; "
        "allowed: at most x10 to the horizon (a fraction: 0.05 is 5 % a month)"
    ]


def test_non_finite_declared_values_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML `.nan` is a number to JSON Schema (every comparison with NaN is false, so minimum: 0 passes it)."""
    demand = tmp_path / "demand.yaml"
    demand.write_text("demand:\n  - {team: a, class: batch, p50: 1, p95: .nan}\n")
    assert problems(capsys, demand) == [f"{demand}: demand[0].p95: nan is not a finite number; allowed: a finite number"]


def small_stack(tmp_path: Path, pools: list[dict[str, Any]], tenants: list[dict[str, Any]]) -> Path:
    """dev with its GPU pools and tenants replaced."""
    stack = yaml.safe_load(stack_path("dev").read_text())
    stack["config"]["gpu-platform:nodePools"] = pools
    stack["config"]["gpu-platform:tenants"] = tenants
    path = tmp_path / "Pulumi.small.yaml"
    path.write_text(yaml.safe_dump(stack))
    return path


def test_shortfall_does_not_count_spot_for_non_interruptible_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """50 GPUs of non-interruptible batch work against a stack of 100 Spot L4s and 10 on-demand: Spot cannot hold it,
    so the gap is 40 (before: 0, the Spot pool counted as room)."""
    pools = [
        {
            "name": "b-spot",
            "workloadClass": "batch",
            "capacity": "spot",
            "instanceTypes": ["g6.xlarge"],
            "scaling": {"min": 0, "desired": 0, "max": 100},
        },
        {
            "name": "b-od",
            "workloadClass": "batch",
            "capacity": "on-demand",
            "instanceTypes": ["g6.xlarge"],
            "scaling": {"min": 0, "desired": 0, "max": 10},
        },
    ]
    stack = small_stack(tmp_path, pools, [])
    demand = write_demand(tmp_path, {"demand": [{"team": "a", "class": "batch", "gpuModel": "L4", "p50": 50, "p95": 50}]})
    doc = plan_json(capsys, "--demand", str(demand), "--config", str(stack))
    (short,) = doc["plan"]["shortfall"]
    assert (short["needed"], short["available"], short["nonSpotNeeded"], short["nonSpotAvailable"], short["gap"]) == (50, 110, 50, 10, 40)


def test_mig_slices_count_on_the_tenants_own_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1g.10gb: 4 per A100-40GB (all-1g.10gb), 7 per A100-80GB or H100. A tenant on an A100-40GB MIG pool asking 8 slices
    holds 2 GPUs, not 8/7 (the most slices of that profile on any catalog GPU)."""
    pools = [
        {
            "name": "infer-a100-40",
            "workloadClass": "inference",
            "capacity": "on-demand",
            "instanceTypes": ["p4d.24xlarge"],
            "scaling": {"min": 1, "desired": 1, "max": 2},
            "sharing": {"mode": "mig", "migConfig": "all-1g.10gb"},
        }
    ]
    tenants = [
        {"name": "serving", "groups": ["serving"], "cohort": "serving", "priority": "inference", "quotas": [{"pool": "infer-a100-40", "gpus": 16}]}
    ]
    stack = small_stack(tmp_path, pools, tenants)
    path = export(tmp_path, series("serving", "nvidia_com_mig_1g_10gb", [(i * 60, 8) for i in range(10)]))
    doc = plan_json(capsys, "--demand", str(path), "--config", str(stack))
    assert row(doc, "demand", "inference")["p50"] == 2
