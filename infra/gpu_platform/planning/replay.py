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

import functools
import heapq
import itertools
import math
from collections import OrderedDict, deque
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from gpu_platform.planning import whole_replay
from gpu_platform.planning.memo import by_first_identity
from gpu_platform.planning.series import Column, as_list

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


Shape = tuple[int, int]
"""(GPUs, share of each) of a job: jobs of one shape queue together."""
Spot = tuple[int, tuple[int, ...]]
"""A node and the GPUs of it a job takes."""


class _Nodes:
    """The nodes' free GPU shares, and first fit without scanning them.

    Per shape, a min-heap of node numbers holds every node the shape fits (and some it no longer fits, dropped when
    they reach the top). A node fits a shape less only when a job starts on it, and more only when one ends, which is
    when it is listed again: the top that fits is the first node that does.
    """

    def __init__(self, nodes: int, per: int, shapes: list[Shape]) -> None:
        self.per = per
        self.free = [[1000] * per for _ in range(nodes)]
        self.fitting: dict[Shape, list[int]] = {s: list(range(nodes)) for s in shapes}  # a sorted list is a heap
        self.listed: dict[Shape, bytearray] = {s: bytearray(b"\x01") * nodes for s in shapes}
        self.by_share: dict[int, list[Shape]] = {}
        for s in shapes:
            self.by_share.setdefault(s[1], []).append(s)
        # whole[n]: node n's wholly free GPUs; having[c]: how many nodes have c of them (the most any node has, in O(GPUs))
        self.whole = [per] * nodes
        self.having = [0] * per + [nodes]

    def fits(self, n: int, shape: Shape) -> tuple[int, ...] | None:
        """The GPUs a job of `shape` takes on node n (the first with its share free), None if n lacks them."""
        gpus, milli = shape
        left = self.free[n]
        if milli == 1000:
            if self.whole[n] < gpus:
                return None
            return tuple([g for g in range(self.per) if left[g] == 1000][:gpus])
        fit = [g for g in range(self.per) if left[g] >= milli]
        return tuple(fit[:gpus]) if len(fit) >= gpus else None

    def place(self, shape: Shape) -> Spot | None:
        """The first node a job of `shape` fits, and its GPUs there; None where none does (or it has more GPUs than a node)."""
        heap = self.fitting.get(shape)
        if heap is None:
            return None
        while heap:
            n = heap[0]
            taken = self.fits(n, shape)
            if taken is not None:
                return n, taken
            heapq.heappop(heap)
            self.listed[shape][n] = 0
        return None

    def may_fit(self, shape: Shape) -> bool:
        """False when no node holds the shape (whole GPUs: more than any node has wholly free)."""
        if shape[1] == 1000:
            most = self.per
            while most and not self.having[most]:
                most -= 1
            return shape[0] <= most
        return self.place(shape) is not None

    def _recount(self, n: int) -> int:
        c = self.free[n].count(1000)
        self.having[self.whole[n]] -= 1
        self.having[c] += 1
        self.whole[n] = c
        return c

    def take(self, spot: Spot, shape: Shape) -> None:
        """A job of `shape` starts on the spot."""
        n, taken = spot
        left = self.free[n]
        for g in taken:
            left[g] -= shape[1]
        self._recount(n)

    def release(self, spot: Spot, shape: Shape) -> None:
        """A job of `shape` on the spot ends: list its node again for the shapes it fits now."""
        n, taken = spot
        left = self.free[n]
        for g in taken:
            left[g] += shape[1]
        wholly = self._recount(n)
        for share, group in self.by_share.items():
            room = wholly if share == 1000 else sum(1 for f in left if f >= share)
            for s in group:
                if room >= s[0] and not self.listed[s][n]:
                    self.listed[s][n] = 1
                    heapq.heappush(self.fitting[s], n)


class _Queue:
    """The jobs in arrival order (ties in the order given): when each arrived, its run time, GPUs and share.

    Held as columns: float64 arrays where every time is exact as a float (a trace's are), else Python lists. The
    interpreted replays read lists, made when first asked; the compiled one reads the arrays.
    """

    def __init__(self, arrival: Column, run: Column, gpus: Column, milli: Column) -> None:
        self._arrival, self._run, self._gpus, self._milli = arrival, run, gpus, milli
        self.jobs = len(arrival)

    @functools.cached_property
    def arrival(self) -> list[float]:
        """When each job arrived."""
        return as_list(self._arrival)

    @functools.cached_property
    def run(self) -> list[float]:
        """How long each job runs."""
        return as_list(self._run)

    @functools.cached_property
    def need(self) -> list[int]:
        """GPUs per job."""
        return as_list(self._gpus)

    @functools.cached_property
    def shape(self) -> list[Shape]:
        """(GPUs, share) per job, one tuple per distinct shape."""
        shapes: dict[Shape, Shape] = {}
        return [shapes.setdefault(s, s) for s in zip(self.need, as_list(self._milli), strict=True)]

    @functools.cached_property
    def whole(self) -> bool:
        """Every job takes whole GPUs."""
        return all(m == 1000 for m in self._milli) if isinstance(self._milli, list) else bool(np.all(self._milli == 1000))

    @functools.cached_property
    def most_gpus(self) -> int:
        """The most GPUs a job takes."""
        return max(self._gpus, default=0) if isinstance(self._gpus, list) else int(self._gpus.max(initial=0))

    @property
    def columns(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]] | None:
        """Arrivals, run times and GPUs as arrays for the compiled replay; None where they are Python values."""
        if isinstance(self._arrival, list) or isinstance(self._gpus, list):
            return None
        return self._arrival, self._run, self._gpus  # type: ignore[return-value]


@by_first_identity(maxsize=2)
def _in_arrival_order(jobs: tuple[Job, ...]) -> _Queue:
    """The jobs sorted by arrival, once per jobs tuple (a search replays the same jobs on several node counts)."""
    arrivals, runs, gpus, milli = (list(map(itemgetter(k), jobs)) for k in range(4))  # by columns: a million jobs in milliseconds
    arrival, run = np.array(arrivals, dtype=np.float64), np.array(runs, dtype=np.float64)
    if len(arrival) and float(np.abs(arrival).max()) < 2**53 and float(np.abs(run).max()) < 2**53:
        # a stable sort by the arrivals as floats is the sort by (arrival, i), and the floats are the values
        order = np.argsort(arrival, kind="stable")
        counts: tuple[Column, Column]
        try:
            counts = np.array(gpus, dtype=np.int64)[order], np.array(milli, dtype=np.int64)[order]
        except OverflowError:
            counts = [gpus[i] for i in order.tolist()], [milli[i] for i in order.tolist()]
        return _Queue(arrival[order], run[order], *counts)
    ranked = sorted(range(len(jobs)), key=lambda i: (arrivals[i], i))
    return _Queue(*([column[i] for i in ranked] for column in (arrivals, runs, gpus, milli)))


def replay(jobs: tuple[Job, ...], nodes: int, gpus_per_node: int, give_up: float = math.inf) -> Waits:
    """Replay the jobs on `nodes` nodes; stop early (p99 = inf) once more than 1 % of the jobs wait past `give_up`.

    BestEffortFIFO tries every waiting job in arrival order and starts each that fits. Within one such pass
    capacity only shrinks, so once a job of some shape (GPUs, share) does not fit, no later job of that shape
    does: the waiting jobs are kept in one queue per shape, and a pass merges the queues' heads by arrival,
    dropping a shape at its first miss. The jobs started, and when, are the same as trying every waiting job.
    A job that has waited past `give_up` is late whenever it starts: the replay fails as soon as the late jobs,
    started or still waiting, are more than 1 % (running on would fail the same way).

    Jobs that all take whole GPUs replay on _replay_whole, the same steps on counts of free GPUs.
    """
    queue = _in_arrival_order(jobs)
    if queue.whole:
        return _replay_whole(queue, nodes, gpus_per_node, give_up)
    shapes = sorted({s for s in queue.shape if s[0] <= gpus_per_node})
    cluster = _Nodes(nodes, gpus_per_node, shapes)
    place, take, release = cluster.place, cluster.take, cluster.release
    heappush, heappop = heapq.heappush, heapq.heappop
    arrivals, shape_of = queue.arrival, queue.shape
    queues: dict[Shape, deque[int]] = {}  # shape -> waiting jobs (arrival ranks), in arrival order
    waiting = 0
    running: list[tuple[float, int, Spot]] = []  # (end, job, where)
    waits: list[float] = []
    count = len(arrivals)
    limit = count // 100
    failed = Waits(math.inf, math.inf, count)
    nxt = 0
    # old: jobs (by arrival) that have waited past give_up by now or started after doing so; on_time: of them, the
    # ones that started within it. The others will all be late when they start.
    old = on_time = 0
    started = bytearray(count)

    def start(j: int, now: float, spot: Spot) -> None:
        take(spot, shape_of[j])
        heappush(running, (now + queue.run[j], j, spot))
        wait = now - arrivals[j]
        waits.append(wait)
        if not wait > give_up:
            started[j] = 1

    while nxt < count or waiting:
        arrive = arrivals[nxt] if nxt < count else math.inf
        finish = running[0][0] if running else math.inf
        if arrive == math.inf and finish == math.inf:
            return failed  # jobs that can never start (too many GPUs for one node)
        now = min(arrive, finish)
        freed = False
        while running and running[0][0] <= now:
            _, j, where = heappop(running)
            release(where, shape_of[j])
            freed = True
        if not waiting:
            # Nothing waited: the pass is this instant's arrivals in arrival order, a shape done at its first miss.
            missed: list[Shape] = []
            while nxt < count and arrivals[nxt] <= now:
                shape = shape_of[nxt]
                spot = None if shape in missed else place(shape)
                if spot is None:
                    missed.append(shape)
                    queues.setdefault(shape, deque()).append(nxt)
                    waiting += 1
                else:
                    start(nxt, now, spot)
                nxt += 1
        else:
            fresh: list[Shape] = []  # shapes whose queue was empty before this instant's arrivals
            while nxt < count and arrivals[nxt] <= now:
                shape = shape_of[nxt]
                line = queues.setdefault(shape, deque())
                if not line:
                    fresh.append(shape)
                line.append(nxt)
                waiting += 1
                nxt += 1
            # Nothing freed: every job that waited before still does not fit, nor does a newcomer queued behind one.
            # Freed with no arrival: a pass where no waiting shape fits anywhere now starts nothing.
            every = freed and (fresh or any(cluster.may_fit(s) for s, q in queues.items() if q))
            tried = [s for s, q in queues.items() if q] if every else fresh
            heads = [(queues[s][0], s) for s in tried]
            heapq.heapify(heads)
            while heads:
                _, shape = heappop(heads)
                spot = place(shape)
                if spot is None:
                    continue  # this shape is done for the pass
                line = queues[shape]
                j = line.popleft()
                waiting -= 1
                if line:
                    heappush(heads, (line[0], shape))
                start(j, now, spot)
        while old < count and now - arrivals[old] > give_up:
            on_time += started[old]
            old += 1
        if old - on_time > limit:
            return failed
    return _waits(waits, count)


def _waits(waits: list[float] | npt.NDArray[np.float64], jobs: int) -> Waits:
    """The 99th-percentile and longest wait of a replay that started every job."""
    if not len(waits):
        return Waits(0.0, 0.0, jobs)
    ordered = np.sort(waits) if isinstance(waits, np.ndarray) else sorted(waits)
    return Waits(float(ordered[min(len(waits) - 1, math.ceil(0.99 * len(waits)) - 1)]), float(ordered[-1]), jobs)


def fitting_jobs(jobs: tuple[Job, ...], gpus_per_node: int) -> tuple[Job, ...]:
    """The jobs a node of `gpus_per_node` GPUs holds; the same tuple when it holds them all (caches know it by identity)."""
    fits = np.fromiter(map(itemgetter(2), jobs), dtype=np.float64, count=len(jobs)) <= gpus_per_node
    return jobs if fits.all() else tuple(itertools.compress(jobs, fits.tolist()))


def _replay_whole(queue: _Queue, nodes: int, per: int, give_up: float) -> Waits:
    """replay() for jobs that all take whole GPUs: the same passes on counts of free GPUs (whole_replay.passes)."""
    count = queue.jobs
    if queue.most_gpus > per:
        return Waits(math.inf, math.inf, count)  # a job that can never start (more GPUs than a node has)
    columns = queue.columns
    waits: list[float] | npt.NDArray[np.float64] | None
    if columns is not None and whole_replay.runs_compiled(count):
        waits = whole_replay.run_compiled(*columns, nodes, per, give_up)
    else:
        waits = whole_replay.run_plain(queue.arrival, queue.run, queue.need, nodes, per, give_up)
    return Waits(math.inf, math.inf, count) if waits is None else _waits(waits, count)


def _own_rate(jobs: tuple[Job, ...]) -> float:
    """The jobs' GPU-time over their own span (first arrival to last end), in GPUs."""
    work = sum(j.gpus * j.milli / 1000 * j.run for j in jobs)
    span = max(j.arrival + j.run for j in jobs) - min(j.arrival for j in jobs)
    return work / span if span > 0 else 0.0


Search = tuple[tuple[Job, ...], int, float, float | None, float | None]
"""nodes_for_wait's arguments: the jobs, GPUs per node, the wait target (s), demand and the fluid hint (GPUs)."""
SEARCHES_KEPT = 64
_searches: OrderedDict[tuple[int, int, float, float | None, float | None], tuple[tuple[Job, ...], tuple[int, Waits]]] = OrderedDict()
"""Searches done, by the identity of their jobs tuple and the other arguments (the entry holds the jobs: the id stays theirs)."""


def _known(search: Search) -> tuple[int, Waits] | None:
    hit = _searches.get((id(search[0]), *search[1:]))
    if hit is None or hit[0] is not search[0]:
        return None
    _searches.move_to_end((id(search[0]), *search[1:]))
    return hit[1]


def _remember(search: Search, result: tuple[int, Waits]) -> None:
    _searches[(id(search[0]), *search[1:])] = (search[0], result)
    if len(_searches) > SEARCHES_KEPT:
        _searches.popitem(last=False)


def nodes_for_wait(
    jobs: tuple[Job, ...], gpus_per_node: int, max_wait_s: float, demand_gpus: float | None = None, hint_gpus: float | None = None
) -> tuple[int, Waits]:
    """_search, cached: the plans of one window under other prices and instruments ask the same searches again."""
    search = (jobs, gpus_per_node, max_wait_s, demand_gpus, hint_gpus)
    known = _known(search)
    if known is None:
        known = _search(*search)
        _remember(search, known)
    return known


def _search(
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
    jobs = fitting_jobs(jobs, gpus_per_node)
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
