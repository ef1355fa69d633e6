"""Inference from request data: Erlang C (M/M/c) servers for a wait target, against hand-computed cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.planning.queueing import Requests, erlang_c, gpus_for, servers_for
from tests.planning.helpers import plan_json, row, run_cli, write_demand


def test_erlang_c_matches_the_hand_computed_probability_of_waiting() -> None:
    # a = 1 erlang. C(c, a) = (a^c/c! * c/(c-a)) / (sum_{k<c} a^k/k! + a^c/c! * c/(c-a)):
    # c = 2: 1 / (2 + 1) = 1/3; c = 3: 0.25 / (2.5 + 0.25) = 1/11; c = 4: (1/18) / (8/3 + 1/18) = 1/49
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert erlang_c(3, 1.0) == pytest.approx(1 / 11)
    assert erlang_c(4, 1.0) == pytest.approx(1 / 49)
    assert erlang_c(1, 1.0) == 1.0  # unstable: every request waits


def test_servers_for_a_wait_target() -> None:
    # lambda = 1/s, S = 1 s, 95 % must not wait at all: P(W > 0) = C(c, 1) <= 5 %: 1/11 > 5 % >= 1/49 -> 4
    assert servers_for(Requests(1.0, 1.0, 0.0)) == 4
    # may wait 1 s: P(W > 1) = C * exp(-(c - 1)): c = 2: e^-1 / 3 = 12.3 %; c = 3: e^-2 / 11 = 1.2 % -> 3
    assert servers_for(Requests(1.0, 1.0, 1.0)) == 3
    # two requests per GPU: 4 slots -> 2 GPUs
    assert gpus_for(Requests(1.0, 1.0, 0.0, concurrency=2)) == 2


def test_declared_inference_with_request_data_is_sized_by_erlang_c(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entry = {"team": "chat", "class": "inference", "gpuModel": "L4", "p50": 2, "p95": 4, "sla": "inference"}
    plain = row(plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [entry]}, "plain.yaml"))), "plan", "inference", "L4")
    assert plain["target"] == pytest.approx(4.6) and plain["basis"].startswith("rule of thumb")  # 4 x 1.15
    queued = {**entry, "requests": {"arrivalRate": 1, "serviceTime": 1, "targetWait": 1}}
    doc = plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [queued]}, "queued.yaml")))
    plan = row(doc, "plan", "inference", "L4")
    # 3 slots (above), one request per L4: 3 GPUs, not P95 + 15 %; + the N+1 spare on 1-GPU nodes: 4 nodes
    assert plan["target"] == 3 and plan["basis"].startswith("Erlang C (M/M/c)")
    assert sum(plan["nodes"].values()) == 4
    # a second team without request data keeps the rule of thumb for its part: 3 + 2 x 1.15 = 5.3
    other = {"team": "search", "class": "inference", "gpuModel": "L4", "p50": 1, "p95": 2, "sla": "inference"}
    mixed = row(plan_json(capsys, "--demand", str(write_demand(tmp_path, {"demand": [queued, other]}, "mixed.yaml"))), "plan", "inference", "L4")
    assert mixed["target"] == pytest.approx(5.3) and "the rest by rule of thumb" in mixed["basis"]


def test_request_data_on_a_job_queue_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = {"team": "ml", "class": "training", "p50": 1, "p95": 2, "requests": {"arrivalRate": 1, "serviceTime": 1, "targetWait": 1}}
    path = write_demand(tmp_path, {"demand": [bad]})
    code, out, err = run_cli(capsys, "capacity", "plan", "--demand", str(path))
    assert code == 2 and out == ""
    assert err.strip() == (
        f"{path}: demand[0].requests: request data given for training demand with sla training; "
        "allowed: only with sla online or inference (queues of jobs are sized by their wait target)"
    )
