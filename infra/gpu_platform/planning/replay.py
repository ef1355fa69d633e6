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
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

MAX_NODES = 100_000  # a search past this gives up: the wait target cannot be met on this type


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
    """Replay the jobs on `nodes` nodes; stop early (p99 = inf) once more than 1 % of the jobs wait past `give_up`.

    BestEffortFIFO tries every waiting job in arrival order and starts each that fits. Within one such pass
    capacity only shrinks, so once a job of some shape (GPUs, share) does not fit, no later job of that shape
    does: the waiting jobs are kept in one queue per shape, and a pass merges the queues' heads by arrival,
    dropping a shape at its first miss. The jobs started, and when, are the same as trying every waiting job.
    """
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

    def place(gpus: int, milli: int) -> tuple[int, tuple[int, ...]] | None:
        if gpus > gpus_per_node:
            return None
        for n, left in enumerate(free):
            fit = tuple(g for g, f in enumerate(left) if f >= milli)[:gpus]
            if len(fit) == gpus:
                return n, fit
        return None

    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i))
    queues: dict[tuple[int, int], deque[tuple[int, int]]] = {}  # shape -> (arrival rank, job), in arrival order
    waiting = 0
    running: list[tuple[float, int, int, tuple[int, ...]]] = []  # (end, job, node, gpus)
    waits: list[float] = []
    late = 0
    limit = len(jobs) // 100
    nxt = 0
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
        fresh: list[tuple[int, int]] = []  # shapes whose queue was empty before this instant's arrivals
        while nxt < len(order) and jobs[order[nxt]].arrival <= now:
            j = order[nxt]
            shape = (jobs[j].gpus, jobs[j].milli)
            queue = queues.setdefault(shape, deque())
            if not queue:
                fresh.append(shape)
            queue.append((nxt, j))
            waiting += 1
            nxt += 1
        # Nothing freed: every job that waited before still does not fit, nor does a newcomer queued behind one.
        tried = (s for s, q in queues.items() if q) if freed else iter(fresh)
        heads = [(queues[s][0][0], s) for s in tried]
        heapq.heapify(heads)
        most = most_whole()
        while heads:
            _, shape = heapq.heappop(heads)
            need, milli = shape
            if milli == 1000 and need > most:
                continue
            spot = place(need, milli)
            if spot is None:
                continue  # this shape is done for the pass
            queue = queues[shape]
            _, j = queue.popleft()
            waiting -= 1
            if queue:
                heapq.heappush(heads, (queue[0][0], shape))
            n, taken = spot
            for g in taken:
                free[n][g] -= milli
            recount(n)
            most = most_whole()
            heapq.heappush(running, (now + jobs[j].run, j, n, taken))
            wait = now - jobs[j].arrival
            waits.append(wait)
            if wait > give_up:
                late += 1
                if late > limit:
                    return Waits(math.inf, math.inf, len(jobs))
    waits.sort()
    return Waits(waits[min(len(waits) - 1, math.ceil(0.99 * len(waits)) - 1)] if waits else 0.0, waits[-1] if waits else 0.0, len(jobs))


def _own_rate(jobs: tuple[Job, ...]) -> float:
    """The jobs' GPU-time over their own span (first arrival to last end), in GPUs."""
    work = sum(j.gpus * j.milli / 1000 * j.run for j in jobs)
    span = max(j.arrival + j.run for j in jobs) - min(j.arrival for j in jobs)
    return work / span if span > 0 else 0.0


@lru_cache(maxsize=16)
def nodes_for_wait(
    jobs: tuple[Job, ...], gpus_per_node: int, max_wait_s: float, demand_gpus: float | None = None, hint_gpus: float | None = None
) -> tuple[int, Waits]:
    """Fewest nodes whose replay keeps the 99th-percentile wait within `max_wait_s` and whose queue drains.

    A queue with utilisation 1 or more never drains: its backlog only grows, and the p99 of the jobs that did
    start says nothing of the ones still queued (an 8-GPU batch queue with 8.8 GPUs of demand over its 28-day
    window passed on its p99 while its longest wait was 543 h). Utilisation is `demand_gpus` (the class's mean
    demand over the window, tasks running into it from before included) over the capacity's GPUs; without it,
    the jobs' GPU-time over their own span (first arrival to last end). No capacity below utilisation 1 meets.

    The search starts at `hint_gpus` (the fluid queue's capacity for the same wait, usually within a node or
    two of the answer) or at that floor, gallops down or up by 1, 2, 4, ... nodes until the answer is
    bracketed, then bisects: a few replays instead of doubling from the floor.

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
    start = max(floor, math.ceil(hint_gpus / gpus_per_node - 1e-9)) if hint_gpus is not None and math.isfinite(hint_gpus) else floor
    start = min(start, MAX_NODES)
    result = run(start)
    step = 1
    if meets(result):
        lo, hi, best = floor - 1, start, (start, result)  # floor - 1 fails: utilisation >= 1
        while hi - step > lo:
            r = run(hi - step)
            if not meets(r):
                lo = hi - step
                break
            hi, best = hi - step, (hi - step, r)
            step *= 2
    else:
        lo = start
        while True:
            if lo + step > MAX_NODES:
                return lo + step, result
            result = run(lo + step)
            if meets(result):
                hi, best = lo + step, (lo + step, result)
                break
            lo += step
            step *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        r = run(mid)
        if meets(r):
            hi, best = mid, (mid, r)
        else:
            lo = mid
    return best
