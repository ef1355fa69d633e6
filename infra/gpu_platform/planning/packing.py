"""Nodes from pod shapes: first-fit decreasing packing of the running tasks into whole nodes at each event.

GPU-hours over GPUs per node undercount nodes: a task holds its GPUs, vCPU and memory on one node, so
a node whose GPUs are free can still be full on CPU or memory, and a 0.6-GPU share leaves 0.4 of a GPU
no other 0.6 task can use. At every instant the set of running tasks changes (a creation or a
deletion), the tasks are packed first-fit decreasing (largest GPU share first, then vCPU, then
memory) into nodes of the instance type: a task of n GPUs at share m needs n GPUs of one node each
with m free, and its vCPU and memory. The number of nodes over time is a step function whose
time-weighted P95 sizes the tier. A task larger than an empty node fits no node of the type: it is
counted apart (reported) and, so that the plan does not shrink by leaving it out, takes the whole
nodes its GPUs, vCPU and memory would fill if it could be split (9 GPUs on 1-GPU nodes: 9 nodes).
A history of more than MAX_EXACT_EVENTS creations and deletions is packed at SAMPLES evenly spaced
instants instead of at each event.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple, overload

import numpy as np
import numpy.typing as npt

from gpu_platform.planning.memo import by_first_identity
from gpu_platform.planning.series import Column, StepSeries, as_list

MAX_EXACT_EVENTS = 10_000
"""Up to this many creations and deletions (a class of the published traces has at most about 8,000) the pods are packed
at every one."""
SAMPLES = 2_000
"""Past it, at this many evenly spaced instants: the time-weighted quantiles of the packed nodes are read from them."""


class Pod(NamedTuple):
    """One task as it holds a node: [start, end), GPUs at `milli` each, vCPU in millicores, memory in MiB."""

    start: float
    end: float
    gpus: int
    milli: int
    cpu_milli: int = 0
    memory_mib: int = 0


class Pods(Sequence[Pod]):
    """A trace's pods held as columns: the packing reads the arrays; a Pod tuple is made only for a caller that asks.

    A million pods as tuples are about 160 MB and a second to build, and only the classes sized on packed nodes
    (inference) read them at all, by columns.
    """

    def __init__(self, start: Column, end: Column, gpus: Column, milli: Column, cpu_milli: Column, memory_mib: Column) -> None:
        self.columns = (start, end, gpus, milli, cpu_milli, memory_mib)

    def __len__(self) -> int:
        return len(self.columns[0])

    @overload
    def __getitem__(self, i: int) -> Pod: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Pod]: ...

    def __getitem__(self, i: int | slice) -> Pod | Sequence[Pod]:
        if isinstance(i, slice):
            return tuple(self)[i]
        return Pod(*(c[i].item() if isinstance(c, np.ndarray) else c[i] for c in self.columns))

    def __iter__(self) -> Iterator[Pod]:
        return map(Pod._make, zip(*map(as_list, self.columns), strict=True))

    def span(self) -> tuple[float, float]:
        """The first creation and the last deletion, as the pods give them (Python numbers)."""
        start, end = self.columns[0], self.columns[1]
        if not len(start):
            return 0.0, 0.0
        if isinstance(start, np.ndarray) and isinstance(end, np.ndarray):
            return _number(start.min()), _number(end.max())
        return min(start), max(end)


def _number(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


@dataclass(frozen=True)
class NodeShape:
    """What one node of an instance type offers."""

    gpus: int
    vcpu: int
    memory_gib: int

    def spans(self, pod: Pod) -> int:
        """Whole nodes a pod too large for one node would fill if split over several."""
        need = (pod.gpus / self.gpus, pod.cpu_milli / (self.vcpu * 1000), pod.memory_mib / (self.memory_gib * 1024))
        return max(1, math.ceil(max(need) - 1e-9))

    def holds(self, pod: Pod) -> bool:
        """True when an empty node holds the pod."""
        return pod.gpus <= self.gpus and pod.cpu_milli <= self.vcpu * 1000 and pod.memory_mib <= self.memory_gib * 1024


@dataclass(frozen=True)
class Packing:
    """Nodes over time, and the tasks no node of the type holds."""

    nodes: StepSeries
    """Nodes in use over the window, as a step series in milli-nodes (quantile() reads nodes)."""
    unplaceable: int
    sampled: int = 0
    """Instants packed when the history has more than MAX_EXACT_EVENTS events (0: packed at every event)."""


Shape = tuple[int, int, int, int]
"""(GPUs, milli per GPU, vCPU milli, MiB) of a pod: identical pods pack alike."""


class _Run(NamedTuple):
    """`nodes` consecutive nodes in the same state: each GPU's free milli, vCPU milli and MiB left."""

    free: tuple[int, ...]
    cpu: int
    memory: int
    nodes: int


def ffd_counts(counts: dict[Shape, int], shape: NodeShape) -> int:
    """Nodes first-fit decreasing needs for `counts` pods of each shape, many pods at a time.

    Shapes go largest first (GPU share, then vCPU, then memory); each shape's pods are placed node by node, as many at
    a time as the node takes: the nodes pod-by-pod first fit decreasing needs (tests/planning/test_packing.py checks).
    Identical pods fill a node the way one-by-one first fit does: a 1-GPU share goes to the first GPU with room, so the
    GPUs fill in order; whole-GPU pods take the first free GPUs; other multi-GPU shares are placed one at a time.

    The nodes are kept as runs of identical nodes, in node order: identical nodes take identical pods, so a shape's
    pods turn a run into at most three (the nodes it fills, the one it fills partly, the ones it leaves), and the work
    per shape grows with the runs, not the nodes. A node with no GPU room left takes no pod again and only counts.
    """
    runs: list[_Run] = []
    done = 0  # nodes no pod still to place fits
    empty = _Run(tuple([1000] * shape.gpus), shape.vcpu * 1000, shape.memory_gib * 1024, 0)
    keys = sorted(counts, key=lambda k: (-k[0] * k[1], -k[2], -k[3], k))
    # after keys[i]: the least share, vCPU and memory any pod still to place asks (a node below one of them is done)
    least = [(1001, 2**62, 2**62)] * len(keys)  # after the last key no pod is left: every node is done
    for i in range(len(keys) - 2, -1, -1):
        after, below = keys[i + 1], least[i + 1]
        least[i] = (min(after[1], below[0]), min(after[2], below[1]), min(after[3], below[2]))
    for key, (share, vcpu, memory) in zip(keys, least, strict=True):
        left = counts[key]
        out: list[_Run] = []
        _, milli, cpu, mem = key
        for run in runs:
            # a node short of vCPU, memory or a GPU with the share free takes none: no need to try
            if not left or run.cpu < cpu or run.memory < mem or max(run.free) < milli:
                out.append(run)
                continue
            taken, left = _take(run, key, left, out)
            if not taken:
                out.append(run)
        if left > 0:  # new nodes, as many as the pods left need
            taken, left = _take(_Run(empty.free, empty.cpu, empty.memory, left), key, left, out, fresh=True)
            if not taken:
                raise ValueError(f"a pod of shape {key} fits no empty node of {shape}")
        runs = []
        for run in out:
            if max(run.free) < share or run.cpu < vcpu or run.memory < memory:
                done += run.nodes
            elif runs and runs[-1][:3] == run[:3]:
                last = runs[-1]
                runs[-1] = _Run(last.free, last.cpu, last.memory, last.nodes + run.nodes)
            else:
                runs.append(run)
    return done + sum(r.nodes for r in runs)


def _take(run: _Run, key: Shape, left: int, out: list[_Run], fresh: bool = False) -> tuple[bool, int]:
    """Place up to `left` pods of `key` on the run's nodes in order, appending the runs it becomes to `out`.

    Returns (whether any pod was placed, the pods left); when none was, nothing is appended. `fresh`: the run is new
    empty nodes, as many as needed, and the ones no pod reaches are not appended.
    """
    gpus, milli, cpu, mem = key
    most = min(run.cpu // cpu if cpu else left, run.memory // mem if mem else left, left)
    if most <= 0:
        return False, left
    free, placed = _filled(run.free, gpus, milli, most)
    if placed <= 0:
        return False, left
    if placed == left:  # the first node takes them all
        out.append(_Run(free, run.cpu - placed * cpu, run.memory - placed * mem, 1))
        if run.nodes > 1 and not fresh:
            out.append(_Run(run.free, run.cpu, run.memory, run.nodes - 1))
        return True, 0
    # `placed` is what one node of the run holds: the first `q` nodes take that many each
    q = min(run.nodes, left // placed)
    out.append(_Run(free, run.cpu - placed * cpu, run.memory - placed * mem, q))
    left -= q * placed
    rest = run.nodes - q
    if rest and left:
        out.append(_Run(_filled(run.free, gpus, milli, left)[0], run.cpu - left * cpu, run.memory - left * mem, 1))
        rest -= 1
        left = 0
    if rest and not fresh:
        out.append(_Run(run.free, run.cpu, run.memory, rest))
    return True, left


_FILLED: dict[tuple[tuple[int, ...], int, int, int], tuple[tuple[int, ...], int]] = {}
"""_fill's results by (free shares, GPUs, milli, most): a node state recurs across the packings of one history."""
FILLS_KEPT = 65_536


def _filled(free: tuple[int, ...], gpus: int, milli: int, most: int) -> tuple[tuple[int, ...], int]:
    """_fill on a copy of `free`: the shares left and the pods placed (remembered)."""
    key = (free, gpus, milli, most)
    hit = _FILLED.get(key)
    if hit is None:
        left = list(free)
        placed = _fill(left, gpus, milli, most)
        if len(_FILLED) >= FILLS_KEPT:
            _FILLED.clear()
        hit = _FILLED[key] = (tuple(left), placed)
    return hit


def _fill(free: list[int], gpus: int, milli: int, most: int) -> int:
    """Place up to `most` identical pods on one node's GPUs as one-by-one first fit would; how many were placed."""
    placed = 0
    if gpus == 1:
        for i, f in enumerate(free):
            if placed == most:
                break
            n = min(f // milli, most - placed)
            free[i] -= n * milli
            placed += n
        return placed
    if milli == 1000:
        whole = [i for i, f in enumerate(free) if f == 1000]
        n = min(len(whole) // gpus, most)
        for i in whole[: n * gpus]:
            free[i] = 0
        return n
    while placed < most:
        fit = [i for i, f in enumerate(free) if f >= milli][:gpus]
        if len(fit) < gpus:
            break
        for i in fit:
            free[i] -= milli
        placed += 1
    return placed


def nodes_over(pods: Sequence[Pod], shape: NodeShape, start: float, end: float) -> Packing:
    """The packing over [start, end): the whole history's packing read over that window.

    The nodes at an instant depend only on the tasks running then, so a shorter window (the
    sensitivity table's last 90 or 28 days) reads the same packing instead of packing again.
    """
    whole = pack(pods, shape)
    times: list[float] = [start]
    values: list[int] = [0]
    for t, v in zip(whole.nodes.times, whole.nodes.values, strict=True):
        if t <= start:
            values[0] = v
        elif t < end:
            times.append(t)
            values.append(v)
    last = whole.nodes.end  # the pods' own span ends there: no node is in use after the last pod leaves
    if last <= start:
        times, values = [start], [0]
    elif last < end:
        if last > times[-1]:
            times.append(last)
            values.append(0)
        else:
            values[-1] = 0
    begins, ends = _oversize(pods, shape)
    unplaceable = int(np.count_nonzero((ends > start) & (begins < end)))
    return Packing(StepSeries(start=start, end=end, times=tuple(times), values=tuple(values)), unplaceable, whole.sampled)


@by_first_identity(maxsize=16)
def _oversize(pods: Sequence[Pod], shape: NodeShape) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Creation and deletion times of the pods no node of the shape holds (each window counts its own)."""
    c = _columns(pods)
    if c is not None:
        big = ~c.held_by(shape)
        return c.start[big], c.end[big]
    pairs = [(p.start, p.end) for p in pods if not shape.holds(p)]
    return np.array([a for a, _ in pairs], dtype=np.float64), np.array([b for _, b in pairs], dtype=np.float64)


class _PodColumns(NamedTuple):
    """The pods as arrays: times exact as floats, sizes as int64."""

    start: npt.NDArray[np.float64]
    end: npt.NDArray[np.float64]
    size: npt.NDArray[np.int64]
    """(GPUs, milli, vCPU milli, MiB) per pod, one row each."""

    def held_by(self, shape: NodeShape) -> npt.NDArray[np.bool_]:
        """NodeShape.holds of every pod."""
        limit = np.array([shape.gpus, 1 << 62, shape.vcpu * 1000, shape.memory_gib * 1024], dtype=np.int64)
        return np.all(self.size <= limit, axis=1)


@by_first_identity(maxsize=4)
def _columns(pods: Sequence[Pod]) -> _PodColumns | None:
    """The pods by columns; None where a time is not exact as a float or a size is not an int64 (the loops read those)."""
    if not pods:
        return None
    raw = pods.columns if isinstance(pods, Pods) else tuple(list(map(itemgetter(k), pods)) for k in range(6))
    starts, ends = (np.array(raw[k], dtype=np.float64) for k in (0, 1))
    if max(float(np.abs(starts).max()), float(np.abs(ends).max())) >= 2**53:
        return None
    sizes = [np.asarray(raw[k]) for k in (2, 3, 4, 5)]
    if any(a.dtype.kind != "i" for a in sizes):
        return None  # floats, or integers past int64 (object)
    return _PodColumns(starts, ends, np.stack(sizes, axis=1).astype(np.int64))


def _events(pods: Sequence[Pod], shape: NodeShape, start: float, end: float) -> tuple[dict[Shape, Floats], dict[Shape, Floats], list[Pod]]:
    """Per pod shape, the creations and deletions within (start, end) of the pods a node holds; and the pods none holds.

    A pod of no length, or outside the window, changes nothing. A deletion at `end` is the window's end, not an event.
    """
    c = _columns(pods)
    if c is None:
        created: dict[Shape, list[float]] = {}
        deleted: dict[Shape, list[float]] = {}
        too_big = []
        for p in pods:
            if not shape.holds(p):
                too_big.append(p)
            elif not (p.end <= start or p.start >= end or p.end <= p.start):
                key = (p.gpus, p.milli, p.cpu_milli, p.memory_mib)
                created.setdefault(key, []).append(max(p.start, start))
                if p.end < end:
                    deleted.setdefault(key, []).append(p.end)
        return _arrays(created), _arrays(deleted), too_big
    held = c.held_by(shape)
    live = held & ~((c.end <= start) | (c.start >= end) | (c.end <= c.start))
    distinct, first, group = _distinct_rows(c.size[live])
    starts, ends = np.maximum(c.start[live], start), c.end[live]
    closes = ends < end
    opened: dict[Shape, Floats] = {}
    closed: dict[Shape, Floats] = {}
    for k in np.argsort(first, kind="stable").tolist():  # in the order the pods first show each shape
        g, m, cpu, mem = distinct[k].tolist()
        key = (g, m, cpu, mem)
        mine = group == k
        opened[key] = starts[mine]
        if np.any(mine & closes):
            closed[key] = ends[mine & closes]
    return opened, closed, [pods[i] for i in np.flatnonzero(~held).tolist()]


def _distinct_rows(rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """np.unique(rows, axis=0) with the index of each distinct row's first occurrence and each row's group.

    Rows of a few distinct values per column (a trace's sizes) are numbered by one integer in mixed radix of the
    columns' own ranks: a one-dimensional unique, several times faster than sorting rows.
    """
    ranks, radix = [], 1
    for column in rows.T:
        values, rank = np.unique(column, return_inverse=True)
        ranks.append((values, rank.reshape(-1)))
        radix *= max(len(values), 1)
    if radix >= 2**62:
        distinct, first, group = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        return distinct, first, group.reshape(-1)
    code = np.zeros(len(rows), dtype=np.int64)
    for values, rank in ranks:
        code = code * len(values) + rank
    _, first, group = np.unique(code, return_index=True, return_inverse=True)
    return rows[first], first, group.reshape(-1)


def _arrays(times: dict[Shape, list[float]]) -> dict[Shape, Floats]:
    return {k: np.array(v, dtype=np.float64) for k, v in times.items()}


Floats = npt.NDArray[np.float64]


@by_first_identity(maxsize=16)
def pack(pods: Sequence[Pod], shape: NodeShape) -> Packing:
    """Nodes in use over the pods' span when the running pods are packed first-fit decreasing (at each event, or sampled).

    The pods running at an instant, per shape, are those created at or before it less those deleted at or before it:
    two binary searches per shape over its sorted creations and deletions, for every instant at once.
    """
    if isinstance(pods, Pods):
        start, end = pods.span()
    else:
        start = min(map(itemgetter(0), pods), default=0.0)
        end = max(map(itemgetter(1), pods), default=0.0)
    created, deleted, too_big = _events(pods, shape, start, end)
    unplaceable = 0
    extra: list[tuple[float, int]] = []  # (when, nodes): pods no node holds take the nodes they would fill from then on
    for p in too_big:
        if p.end > start and p.start < end:
            unplaceable += 1
        if p.end > p.start:
            extra.append((p.start, shape.spans(p)))
            if p.end < end:
                extra.append((p.end, -shape.spans(p)))
    # every instant the running pods change
    changes = [np.array([start], dtype=np.float64), *created.values(), *deleted.values(), np.array([t for t, _ in extra], dtype=np.float64)]
    at = np.unique(np.concatenate(changes))
    sampled = len(at) > MAX_EXACT_EVENTS
    if sampled:
        # too many events to pack at each: pack at SAMPLES evenly spaced instants, each read over its own slice
        step = (end - start) / SAMPLES
        instants = np.array([start + (k + 0.5) * step for k in range(SAMPLES)], dtype=np.float64)
        holds: list[float] = [start + k * step for k in range(SAMPLES)]
    else:
        instants = at
        holds = [int(t) if t.is_integer() else t for t in at.tolist()]  # the event times as the pods give them
    keys = list(created)
    running = np.zeros((len(keys), len(instants)), dtype=np.int64)
    for row, key in enumerate(keys):
        running[row] = np.searchsorted(np.sort(created[key]), instants, side="right")
        if key in deleted:
            running[row] -= np.searchsorted(np.sort(deleted[key]), instants, side="right")
    spanned = np.zeros(len(instants), dtype=np.int64)
    if extra:
        extra.sort(key=lambda e: e[0])
        level = np.cumsum([n for _, n in extra])
        upto = np.searchsorted(np.array([t for t, _ in extra], dtype=np.float64), instants, side="right")
        spanned = np.where(upto > 0, level[np.maximum(upto - 1, 0)], 0)
    times: list[float] = []
    values: list[int] = []
    for i, hold in enumerate(holds):
        column = running[:, i].tolist()
        counts = {key: c for key, c in zip(keys, column, strict=True) if c}
        n = (ffd_counts(counts, shape) + int(spanned[i])) * 1000
        if values and values[-1] == n:
            continue
        times.append(hold)
        values.append(n)
    return Packing(StepSeries(start=start, end=end, times=tuple(times), values=tuple(values)), unplaceable, SAMPLES if sampled else 0)
