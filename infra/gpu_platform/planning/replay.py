"""Queues by replay: whole jobs of a trace on whole GPUs of whole nodes, for the capacity that meets a wait target.

The fluid bound (series.capacity_for_delay) lets work flow into any idle fraction of a GPU; real jobs
wait for whole GPUs in one node. The replay admits jobs the way Kueue's default queueing strategy
does (BestEffortFIFO: kueue v0.9 apis/kueue/v1beta1 clusterqueue_types.go, QueueingStrategy; the head
that does not fit does not block later jobs that do), places each job first-fit on the nodes (a job of
n GPUs needs n GPUs of one node, each with its share free: a GPU-sharing task takes `milli` of one
GPU), and runs it for its own run time. The capacity is the fewest nodes whose 99th-percentile wait
meets the target.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple


class Job(NamedTuple):
    """One job of a trace: when it arrived, how long it ran, and what it holds while it runs."""

    arrival: float
    run: float
    gpus: int
    milli: int
    """Share of each of its GPUs, 1..1000."""


@dataclass(frozen=True)
class Waits:
    """Job waits of one replay, in seconds."""

    p99: float
    max: float
    jobs: int
    utilisation: float = 0.0
    """Demand over the capacity's GPUs (nodes_for_wait says which demand); at 1 or more the queue cannot drain,
    whatever the waits of the jobs that did start say."""


def replay(jobs: tuple[Job, ...], nodes: int, gpus_per_node: int, give_up: float = math.inf) -> Waits:
    """Replay the jobs on `nodes` nodes; stop early (p99 = inf) once more than 1 % of the jobs wait past `give_up`."""
    free = [[1000] * gpus_per_node for _ in range(nodes)]
    # whole[n]: node n's wholly free GPUs; having[c]: how many nodes have c of them (the most any node has, in O(GPUs))
    whole = [gpus_per_node] * nodes
    having = [0] * gpus_per_node + [nodes]

    def recount(n: int) -> None:
        c = sum(1 for left in free[n] if left == 1000)
        having[whole[n]] -= 1
        having[c] += 1
        whole[n] = c

    def most_whole() -> int:
        return next((c for c in range(gpus_per_node, -1, -1) if having[c]), 0)

    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i))
    waiting: list[int] = []
    running: list[tuple[float, int, int, tuple[int, ...]]] = []  # (end, job, node, gpus)
    waits: list[float] = []
    late = 0
    limit = len(jobs) // 100
    nxt = 0

    def place(j: Job) -> tuple[int, tuple[int, ...]] | None:
        if j.gpus > gpus_per_node:
            return None
        for n, gpus in enumerate(free):
            fit = tuple(g for g, left in enumerate(gpus) if left >= j.milli)[: j.gpus]
            if len(fit) == j.gpus:
                return n, fit
        return None

    now = 0.0
    while nxt < len(order) or waiting:
        arrive = jobs[order[nxt]].arrival if nxt < len(order) else math.inf
        finish = running[0][0] if running else math.inf
        if arrive == math.inf and finish == math.inf:
            return Waits(math.inf, math.inf, len(jobs))  # jobs that can never start (too many GPUs for one node)
        now = min(arrive, finish)
        freed = False
        while running and running[0][0] <= now:
            _, j, n, gpus = heapq.heappop(running)
            for g in gpus:
                free[n][g] += jobs[j].milli
            recount(n)
            freed = True
        first_new = len(waiting)
        while nxt < len(order) and jobs[order[nxt]].arrival <= now:
            waiting.append(order[nxt])
            nxt += 1
        still: list[int] = []
        # BestEffortFIFO: every waiting job in arrival order, each that fits starts. Nothing freed: jobs that
        # did not fit before still do not, so only the new arrivals are tried.
        most = most_whole()
        for k, j in enumerate(waiting):
            if (not freed and k < first_new) or (jobs[j].milli == 1000 and jobs[j].gpus > most):
                still.append(j)
                continue
            spot = place(jobs[j])
            if spot is None:
                still.append(j)
                continue
            n, gpus = spot
            for g in gpus:
                free[n][g] -= jobs[j].milli
            recount(n)
            most = most_whole()
            heapq.heappush(running, (now + jobs[j].run, j, n, gpus))
            wait = now - jobs[j].arrival
            waits.append(wait)
            if wait > give_up:
                late += 1
                if late > limit:
                    return Waits(math.inf, math.inf, len(jobs))
        waiting = still
    waits.sort()
    return Waits(waits[min(len(waits) - 1, math.ceil(0.99 * len(waits)) - 1)] if waits else 0.0, waits[-1] if waits else 0.0, len(jobs))


def _own_rate(jobs: tuple[Job, ...]) -> float:
    """The jobs' GPU-time over their own span (first arrival to last end), in GPUs."""
    work = sum(j.gpus * j.milli / 1000 * j.run for j in jobs)
    span = max(j.arrival + j.run for j in jobs) - min(j.arrival for j in jobs)
    return work / span if span > 0 else 0.0


@lru_cache(maxsize=64)
def nodes_for_wait(jobs: tuple[Job, ...], gpus_per_node: int, max_wait_s: float, demand_gpus: float | None = None) -> tuple[int, Waits]:
    """Fewest nodes whose replay keeps the 99th-percentile wait within `max_wait_s` and whose queue drains.

    Doubling from the fewest nodes that can carry the work, then bisection. A queue with utilisation 1 or more never
    drains: its backlog only grows, and the p99 of the jobs that did start says nothing of the ones still queued (an
    8-GPU batch queue with 8.8 GPUs of demand over its 28-day window passed on its p99 while its longest wait was
    543 h). Utilisation is `demand_gpus` (the class's mean demand over the window, tasks running into it from before
    included) over the capacity's GPUs; without it, the jobs' GPU-time over their own span (first arrival to last
    end). Capacity starts where utilisation falls below 1.

    Jobs asking more GPUs than one node has cannot run on this type at all; they are left out (the plan
    reports the share of GPU-hours whose tasks fit a node).
    """
    jobs = tuple(j for j in jobs if j.gpus <= gpus_per_node)
    if not jobs:
        return 0, Waits(0.0, 0.0, 0)
    rate = demand_gpus if demand_gpus is not None else _own_rate(jobs)

    def run(nodes: int) -> Waits:
        used = rate / (nodes * gpus_per_node)
        r = replay(jobs, nodes, gpus_per_node, max_wait_s)
        return Waits(r.p99, r.max, r.jobs, used)

    def meets(r: Waits) -> bool:
        return r.p99 <= max_wait_s and r.utilisation < 1

    floor = max(1, math.floor(rate / gpus_per_node) + 1)
    lo = hi = floor
    result = run(hi)
    while not meets(result):
        lo, hi = hi, hi * 2
        if hi > 100_000:
            return hi, result
        result = run(hi)
    best = (hi, result)
    if lo == hi:
        return best
    while hi - lo > 1:
        mid = (lo + hi) // 2
        r = run(mid)
        if meets(r):
            hi, best = mid, (mid, r)
        else:
            lo = mid
    return best
