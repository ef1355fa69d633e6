"""Queues by replay: whole jobs on whole GPUs of whole nodes, against small traces with answers worked by hand.

Admission reproduces Kueue's default queueing strategy, BestEffortFIFO (kueue apis/kueue/v1beta1
clusterqueue_types.go, QueueingStrategy: "BestEffortFIFO ... an older workload that can't be admitted
will not block admitting newer workloads that fit"), with first-fit placement on nodes.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from gpu_platform.planning import whole_replay
from gpu_platform.planning.replay import Job, nodes_for_wait, replay
from gpu_platform.planning.series import step_series
from tests.planning.helpers import plan_json, row

H = 3600.0
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def three_jobs() -> tuple[Job, ...]:
    """Three 1-GPU jobs of 10 h, all arriving at 0, in a 101 h history (a 1 h job at 100 h ends it)."""
    return (*(Job(0, 10 * H, 1, 1000) for _ in range(3)), Job(100 * H, 1 * H, 1, 1000))


@pytest.mark.parametrize(("nodes", "p99"), [(1, 20 * H), (2, 10 * H), (3, 0.0)])
def test_waits_by_hand(nodes: int, p99: float) -> None:
    """One 1-GPU node runs them one after another: waits 0, 10, 20 h; two nodes: 0, 0, 10 h; three: none."""
    assert replay(three_jobs(), nodes, 1).p99 == p99


def test_a_burst_that_fills_the_whole_history_needs_more_than_its_wait_target() -> None:
    """The same three jobs as the whole history (10 h): 30 GPU-h of work in 10 h is utilisation 3 on one node, 1 on
    three; a queue at utilisation 1 or more does not drain (the backlog of a history that goes on only grows), so
    four nodes, whatever the wait target."""
    burst = tuple(Job(0, 10 * H, 1, 1000) for _ in range(3))
    nodes, waits = nodes_for_wait(burst, 1, 24 * H)
    assert (nodes, waits.utilisation) == (4, 0.75)


@pytest.mark.parametrize(("target_h", "nodes"), [(24, 1), (12, 2), (5, 3)])
def test_fewest_nodes_for_the_wait_target(target_h: float, nodes: int) -> None:
    assert nodes_for_wait(three_jobs(), 1, target_h * H)[0] == nodes


def test_best_effort_fifo_does_not_block_on_the_head() -> None:
    """A 2-GPU node: A (1 GPU, 10 h) at 0; B (2 GPUs, 1 h) at 1 h cannot start until A ends; C (1 GPU) at 2 h fits now."""
    jobs = (Job(0, 10 * H, 1, 1000), Job(1 * H, 1 * H, 2, 1000), Job(2 * H, 1 * H, 1, 1000))
    waits = replay(jobs, 1, 2)
    assert waits.max == 9 * H  # B waited from 1 h to 10 h; C did not wait behind it


def test_fragmentation_the_fluid_bound_misses() -> None:
    """Four tasks of 0.6 GPU for 10 h: 2.4 GPUs of fluid work, but no two share one GPU, so no wait needs 4 GPUs."""
    jobs = tuple(Job(0, 10 * H, 1, 600) for _ in range(4))
    assert nodes_for_wait(jobs, 1, 1 * H)[0] == 4
    fluid = step_series([(0, 10 * H, 2400)], 0, 10 * H).capacity_for_delay(1 * H)
    assert fluid < 4


def test_jobs_larger_than_a_node_are_left_out() -> None:
    jobs = (Job(0, H, 8, 1000), Job(0, H, 1, 1000))
    assert nodes_for_wait(jobs, 4, H)[0] == 1


def test_batch_is_sized_by_replay_from_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three Burstable 1-GPU jobs of 10 h at 0, and one of 1 h at 100 h, against the 24 h batch target: one L40S node,
    99th-percentile wait 20 h, the node busy 31 of the history's 101 h."""
    trace = tmp_path / "pods.csv"
    rows = [f"j{i},4000,16384,1,1000,,Burstable,Running,0,36000,0" for i in range(3)] + [
        "j3,4000,16384,1,1000,,Burstable,Running,360000,363600,360000"
    ]
    trace.write_text("\n".join([HEADER, *rows]) + "\n")
    p = row(plan_json(capsys, "--demand", str(trace)), "plan", "batch")
    assert p["instanceType"] == "g6e.xlarge"
    assert p["target"] == 1
    assert p["replayWaitHours"] == {"p99": 20.0, "max": 20.0, "jobs": 4, "utilisation": 0.307}  # 31 / 101, as _r rounds
    assert p["basis"].startswith("job-level replay: 99 % of jobs wait <= 24 h and the queue drains (utilisation 30.6 % < 100 %)")


def test_a_queue_that_cannot_drain_fails_whatever_its_p99_says() -> None:
    """990 short jobs that never wait, then 10 jobs of 100 h at the end: on one 1-GPU node the p99 wait is 0 but the
    last job waits 900 h and the work (1,495 GPU-h over a 1,090 h history) is 137 % of the node's time. The queue never
    drains, so one node is no answer: two carry it (69 %)."""
    jobs = tuple(Job(arrival=i * 3600.0, run=1800.0, gpus=1, milli=1000) for i in range(990))
    jobs += tuple(Job(arrival=990 * 3600.0, run=100 * 3600.0, gpus=1, milli=1000) for _ in range(10))
    alone = replay(jobs, 1, 1)
    assert alone.p99 == 0 and alone.max == 900 * 3600
    nodes, waits = nodes_for_wait(jobs, 1, 24 * 3600)
    assert nodes == 2
    assert abs(waits.utilisation - 1495 / (2 * 1090)) < 1e-9


def reference(jobs: tuple[Job, ...], nodes: int, per: int) -> list[float]:
    """BestEffortFIFO by its definition, slowly: at every instant something ends or arrives, every waiting job in
    arrival order starts if `gpus` GPUs of one node (first fit) each have its share free. The sorted waits."""
    free = [[1000] * per for _ in range(nodes)]
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i))
    running: list[tuple[float, int, int, tuple[int, ...]]] = []
    waiting: list[int] = []
    waits: list[float] = []
    instants = sorted({j.arrival for j in jobs})
    nxt = 0
    while instants or running:
        now = min([*instants[:1], *(r[0] for r in running)])
        if instants and instants[0] == now:
            instants.pop(0)
        for r in [r for r in running if r[0] <= now]:
            running.remove(r)
            for g in r[3]:
                free[r[2]][g] += jobs[r[1]].milli
        while nxt < len(order) and jobs[order[nxt]].arrival <= now:
            waiting.append(order[nxt])
            nxt += 1
        for j in list(waiting):
            job = jobs[j]
            for n in range(nodes):
                fit = [g for g in range(per) if free[n][g] >= job.milli][: job.gpus]
                if len(fit) == job.gpus:
                    for g in fit:
                        free[n][g] -= job.milli
                    running.append((now + job.run, j, n, tuple(fit)))
                    waiting.remove(j)
                    waits.append(now - job.arrival)
                    break
        if not instants and not running:
            break
    return sorted(waits) + [math.inf] * len(waiting)


@pytest.mark.parametrize("seed", range(40))
def test_the_replay_is_best_effort_fifo_by_its_definition(seed: int) -> None:
    """Random jobs of few shapes (whole and shared GPUs, up to a node's worth), on 1 to 4 nodes of 1, 2 or 8 GPUs."""
    rng = random.Random(seed)
    per = rng.choice([1, 2, 8])
    jobs = tuple(
        Job(float(rng.randrange(0, 200)), float(rng.randrange(1, 60)), rng.choice([1, 1, 2, per]), rng.choice([1000, 1000, 500, 300]))
        for _ in range(rng.randrange(5, 120))
    )
    nodes = rng.randrange(1, 5)
    want = reference(jobs, nodes, per)
    got = replay(jobs, nodes, per)
    if want[-1] == math.inf:  # a job asks more GPUs than a node has: it never starts
        assert (got.p99, got.max) == (math.inf, math.inf)
    else:
        assert got.max == want[-1]
        assert got.p99 == want[min(len(want) - 1, math.ceil(0.99 * len(want)) - 1)]


def whole_jobs(rng: random.Random, per: int, count: int, span: int = 200) -> tuple[Job, ...]:
    """Random whole-GPU jobs, up to a node's worth each."""
    return tuple(Job(float(rng.randrange(0, span)), float(rng.randrange(1, 60)), rng.choice([1, 1, 2, per]), 1000) for _ in range(count))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_the_whole_gpu_replay_is_best_effort_fifo_by_its_definition(seed: int, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs that all take whole GPUs replay on whole_replay.passes (interpreted, and compiled by Numba as a million-job
    history runs it): the waits are the definition's, to the last digit."""
    if compiled:
        monkeypatch.setattr(whole_replay, "COMPILED_FROM", 0)
    rng = random.Random(500 + seed)
    per = rng.choice([1, 2, 4, 8])
    jobs = whole_jobs(rng, per, rng.randrange(5, 150))
    nodes = rng.randrange(1, 5)
    want = reference(jobs, nodes, per)
    got = replay(jobs, nodes, per)
    assert got.max == want[-1]
    assert got.p99 == want[min(len(want) - 1, math.ceil(0.99 * len(want)) - 1)]


@pytest.mark.parametrize("seed", range(8))
def test_the_compiled_replay_starts_every_job_when_the_interpreted_one_does(seed: int) -> None:
    """Both runs of whole_replay.passes give the same waits in the same start order, and fail (late jobs past 1 %)
    at the same point, on thousands of jobs under a tight and a loose wait bound."""
    rng = random.Random(900 + seed)
    per = rng.choice([2, 4, 8])
    jobs = whole_jobs(rng, per, 4000, span=20_000)
    arrival = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i))
    columns = ([jobs[i].arrival for i in arrival], [jobs[i].run for i in arrival], [jobs[i].gpus for i in arrival])
    arrays = (np.array(columns[0]), np.array(columns[1]), np.array(columns[2], dtype=np.int64))
    for nodes in (rng.randrange(3, 8), rng.randrange(10, 40)):
        for give_up in (math.inf, 120.0, 5.0):
            plain = whole_replay.run_plain(*columns, nodes, per, give_up)
            fast = whole_replay.run_compiled(*arrays, nodes, per, give_up)
            assert (plain is None) == (fast is None), (nodes, give_up)
            if plain is not None and fast is not None:
                assert plain == fast.tolist(), (nodes, give_up)


@pytest.mark.parametrize("seed", range(12))
def test_the_search_finds_the_fewest_nodes_from_any_starting_hint(seed: int) -> None:
    """The answer is the first node count, counting up from one, whose replay meets the wait and drains; the
    galloping search gives it whether the fluid hint is low, high, exact or absent."""
    rng = random.Random(100 + seed)
    per = rng.choice([1, 2, 8])
    jobs = tuple(
        Job(float(rng.randrange(0, 400)), float(rng.randrange(1, 80)), rng.choice([1, 1, 2, per]), rng.choice([1000, 1000, 500]))
        for _ in range(rng.randrange(20, 150))
    )
    fitting = tuple(j for j in jobs if j.gpus <= per)
    rate = sum(j.gpus * j.milli / 1000 * j.run for j in fitting) / 500.0
    wait = float(rng.choice([0, 5, 30]))
    first = next(n for n in range(1, 400) if replay(fitting, n, per, wait).p99 <= wait and rate / (n * per) < 1)
    for hint in (None, 0.0, first * per * 0.5, float(first * per), first * per * 3.0, 10_000.0):
        nodes, waits = nodes_for_wait(jobs, per, wait, rate, hint)
        assert nodes == first, (hint, nodes, first)
        assert waits.p99 <= wait
