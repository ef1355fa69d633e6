"""The job replay of whole-GPU jobs, one loop that runs as plain Python or compiled by Numba.

A million-job history replays tens of times per plan (each node-count search, each window of the sensitivity
table); the interpreter's per-event work was most of `capacity plan`'s time at that scale. `passes` is written in
the subset of Python Numba compiles (lists, tuples, heapq, integer and float arithmetic) and is the one definition:
small inputs run it as it is (no compiler to load), large ones through `numba.njit` of the same function, cached on
disk after the first compile. Both give the same starts in the same order: every choice is by a total order (ends
by (time, job), first fit by node number, heads by arrival rank), so the results do not depend on how a heap breaks
ties, and float arithmetic is IEEE double in both.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, MutableSequence, Sequence

import numpy as np
import numpy.typing as npt

COMPILED_FROM = 20_000
"""Jobs from which a replay runs compiled: below it, loading the compiler (about a second) costs more than it saves."""
ONCE_LOADED_FROM = 1_000
"""Jobs from which a replay runs compiled once the compiled loop is loaded (a large replay of the same plan loaded it)."""


def passes(
    arrivals: Sequence[float],
    runs: Sequence[float],
    need: Sequence[int],
    nodes: int,
    per: int,
    give_up: float,
    waits: MutableSequence[float],
    started: MutableSequence[int],
) -> int:
    """Replay jobs (in arrival order) that take `need[j]` whole GPUs of one node, on `nodes` nodes of `per` GPUs.

    BestEffortFIFO passes, as replay.replay describes them, on counts of free GPUs: a node is how many of its GPUs are
    free, first fit the least node number in the heap of the job's size whose node has that many free. A pass only
    tries the sizes that fit the most GPUs any node has free (`most`, from the count of nodes by free GPUs): a larger
    one would miss, and within a pass `most` only falls. Waiting jobs of one size queue in arrival order; the queues
    lie in `line`, each size in its own slice (jobs of a size are queued at most once each, in arrival order).

    Every job needs at most `per` GPUs (the caller leaves the others out: they never start). Fills waits[0:k] with
    the waits in start order and started[j] = 1 for each job that started within `give_up`; returns k, or -1 as soon
    as more than 1 % of the jobs have waited past `give_up` (started late or still waiting).
    """
    count = len(arrivals)
    limit = count // 100
    present = [False] * (per + 1)
    for j in range(count):
        present[need[j]] = True
    sizes = [g for g in range(per + 1) if present[g]]
    whole = [per] * nodes  # free GPUs per node
    having = [0] * (per + 1)  # nodes per count of free GPUs
    having[per] = nodes
    # fitting[g]: a heap of the nodes that may hold g GPUs (every node that does, and some that no longer do)
    fitting = [list(range(nodes)) for _ in range(per + 1)]
    listed = [[1] * nodes for _ in range(per + 1)]  # listed[g][n]: n is in fitting[g]
    # queue of size g: line[first[g] + head[g] : first[g] + tail[g]]
    first = [0] * (per + 2)
    for j in range(count):
        first[need[j] + 1] += 1
    for g in range(per + 1):
        first[g + 1] += first[g]
    head = [0] * (per + 1)
    tail = [0] * (per + 1)
    line = [0] * count
    waiting = 0
    running = [(0.0, 0, 0)]  # (end, job, node); seeded for its type, emptied at once
    running.pop()
    k = 0
    nxt = 0
    old = 0
    on_time = 0
    most = per  # the most GPUs any node has free
    inf = math.inf
    tried = [False] * (per + 1)
    fresh = [False] * (per + 1)

    while nxt < count or waiting:
        arrive = arrivals[nxt] if nxt < count else inf
        if running and running[0][0] <= arrive:
            now = running[0][0]
        elif arrive == inf:
            return -1  # jobs that can never start
        else:
            now = arrive
        freed = False
        # with nothing waiting, every end up to the next arrival frees GPUs and starts nothing: take them all
        upto = now if waiting else arrive
        while running and running[0][0] <= upto:
            _, j, n = heapq.heappop(running)
            c = whole[n]
            having[c] -= 1
            c += need[j]
            having[c] += 1
            whole[n] = c
            most = max(most, c)
            for g in sizes:  # list n again for the sizes it holds now
                if g > c:
                    break
                if not listed[g][n]:
                    listed[g][n] = 1
                    heapq.heappush(fitting[g], n)
            freed = True
        if not waiting:
            # the pass is this instant's arrivals in arrival order
            now = arrive
            batch = False
        else:
            # queue this instant's arrivals; fresh: sizes whose queue was empty before them
            for g in sizes:
                fresh[g] = False
            while nxt < count and arrivals[nxt] <= now:
                g = need[nxt]
                if head[g] == tail[g]:
                    fresh[g] = True
                line[first[g] + tail[g]] = nxt
                tail[g] += 1
                waiting += 1
                nxt += 1
            # nothing freed: only the newcomers at the heads of their queues may start
            for g in sizes:
                tried[g] = g <= most and head[g] < tail[g] and (freed or fresh[g])
            batch = True
        while True:
            # the next job to try: this instant's next arrival, or the earliest head of the sizes still tried
            if batch:
                j = -1
                pick = -1
                for g in sizes:
                    if tried[g]:
                        if g > most:
                            tried[g] = False  # this size is done for the pass
                        elif j < 0 or line[first[g] + head[g]] < j:
                            j = line[first[g] + head[g]]
                            pick = g
                if j < 0:
                    break
                head[pick] += 1
                waiting -= 1
                if head[pick] == tail[pick]:
                    tried[pick] = False
            else:
                if not (nxt < count and arrivals[nxt] <= now):
                    break
                j = nxt
                nxt += 1
                g = need[j]
                if g > most:
                    line[first[g] + tail[g]] = j
                    tail[g] += 1
                    waiting += 1
                    continue
            # start job j on the first node with its GPUs free (there is one)
            g = need[j]
            heap = fitting[g]
            flags = listed[g]
            while whole[heap[0]] < g:
                flags[heapq.heappop(heap)] = 0
            n = heap[0]
            c = whole[n]
            having[c] -= 1
            having[c - g] += 1
            whole[n] = c - g
            heapq.heappush(running, (now + runs[j], j, n))
            wait = now - arrivals[j]
            waits[k] = wait
            k += 1
            if not wait > give_up:
                started[j] = 1
            while most and not having[most]:
                most -= 1
        while old < count and now - arrivals[old] > give_up:
            on_time += started[old]
            old += 1
        if old - on_time > limit:
            return -1
    return k


@functools.cache
def compiled() -> Callable[..., int]:
    """`passes` compiled by Numba (imported here: loading it takes about a second), cached on disk."""
    import numba  # noqa: PLC0415 (a second to load: only where a large replay runs)

    return numba.njit(cache=True, nogil=True)(passes)


def runs_compiled(jobs: int) -> bool:
    """Whether a replay of `jobs` jobs is worth running compiled."""
    return jobs >= COMPILED_FROM or (jobs >= ONCE_LOADED_FROM and compiled.cache_info().currsize > 0)


def run_compiled(
    arrivals: npt.NDArray[np.float64], runs: npt.NDArray[np.float64], need: npt.NDArray[np.int64], nodes: int, per: int, give_up: float
) -> npt.NDArray[np.float64] | None:
    """The waits of the replay in start order, or None when it fails (see `passes`), compiled."""
    waits = np.empty(len(arrivals), dtype=np.float64)
    k = compiled()(arrivals, runs, need, nodes, per, float(give_up), waits, np.zeros(len(arrivals), dtype=np.int64))
    return None if k < 0 else waits[:k]


def run_plain(arrivals: list[float], runs: list[float], need: list[int], nodes: int, per: int, give_up: float) -> list[float] | None:
    """The waits of the replay in start order, or None when it fails (see `passes`), interpreted."""
    waits = [0.0] * len(arrivals)
    k = passes(arrivals, runs, need, nodes, per, give_up, waits, [0] * len(arrivals))
    return None if k < 0 else waits[:k]
