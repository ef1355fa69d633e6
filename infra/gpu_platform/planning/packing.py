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
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from gpu_platform.planning.series import StepSeries

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


def ffd_counts(counts: dict[Shape, int], shape: NodeShape) -> int:
    """Nodes first-fit decreasing needs for `counts` pods of each shape, many pods at a time.

    Shapes go largest first (GPU share, then vCPU, then memory); each shape's pods are placed node by node, as many at
    a time as the node takes: the nodes pod-by-pod first fit decreasing needs (tests/planning/test_packing.py checks).
    Identical pods fill a node the way one-by-one first fit does: a 1-GPU share goes to the first GPU with room, so the
    GPUs fill in order; whole-GPU pods take the first free GPUs; other multi-GPU shares are placed one at a time.
    """
    nodes: list[tuple[list[int], list[int]]] = []
    first = 0  # nodes before it have no GPU room left: no pod fits them any more
    for key in sorted(counts, key=lambda k: (-k[0] * k[1], -k[2], -k[3], k)):
        gpus, milli, cpu, mem = key
        left = counts[key]
        while first < len(nodes) and not any(nodes[first][0]):
            first += 1
        k = first
        while left > 0:
            if k == len(nodes):
                nodes.append(([1000] * shape.gpus, [shape.vcpu * 1000, shape.memory_gib * 1024]))
            free, rest = nodes[k]
            room = min(rest[0] // cpu if cpu else left, rest[1] // mem if mem else left, left)
            if room > 0:
                placed = _fill(free, gpus, milli, room)
                rest[0] -= placed * cpu
                rest[1] -= placed * mem
                left -= placed
            k += 1
    return len(nodes)


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


def nodes_over(pods: tuple[Pod, ...], shape: NodeShape, start: float, end: float) -> Packing:
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
    unplaceable = sum(1 for p in pods if not shape.holds(p) and p.end > start and p.start < end)
    return Packing(StepSeries(start=start, end=end, times=tuple(times), values=tuple(values)), unplaceable, whole.sampled)


@lru_cache(maxsize=16)
def pack(pods: tuple[Pod, ...], shape: NodeShape) -> Packing:
    """Nodes in use over the pods' span when the running pods are packed first-fit decreasing (at each event, or sampled)."""
    start = min((p.start for p in pods), default=0.0)
    end = max((p.end for p in pods), default=0.0)
    placeable = [p for p in pods if shape.holds(p)]
    oversize = [p for p in pods if not shape.holds(p)]
    unplaceable = sum(1 for p in pods if not shape.holds(p) and p.end > start and p.start < end)
    changes: dict[float, list[tuple[int, bool]]] = {start: []}
    for i, p in enumerate(placeable):
        if p.end <= start or p.start >= end or p.end <= p.start:
            continue
        changes.setdefault(max(p.start, start), []).append((i, True))
        if p.end < end:
            changes.setdefault(p.end, []).append((i, False))
    extra: dict[float, int] = {}
    for p in oversize:
        if p.end > p.start:
            changes.setdefault(p.start, [])
            extra[p.start] = extra.get(p.start, 0) + shape.spans(p)
            if p.end < end:
                changes.setdefault(p.end, [])
                extra[p.end] = extra.get(p.end, 0) - shape.spans(p)
    at = sorted(changes)
    sampled = len(at) > MAX_EXACT_EVENTS
    if sampled:
        # too many events to pack at each: pack at SAMPLES evenly spaced instants, each read over its own slice
        step = (end - start) / SAMPLES
        instants = [start + (k + 0.5) * step for k in range(SAMPLES)]
        holds = [start + k * step for k in range(SAMPLES)]
    else:
        instants = holds = at
    spanned = 0
    running: dict[Shape, int] = {}
    times: list[float] = []
    values: list[int] = []
    e = 0
    for t, hold in zip(instants, holds, strict=True):
        while e < len(at) and at[e] <= t:
            for i, on in changes[at[e]]:
                p = placeable[i]
                key = (p.gpus, p.milli, p.cpu_milli, p.memory_mib)
                running[key] = running.get(key, 0) + (1 if on else -1)
                if not running[key]:
                    del running[key]
            spanned += extra.get(at[e], 0)
            e += 1
        n = (ffd_counts(running, shape) + spanned) * 1000
        if values and values[-1] == n:
            continue
        times.append(hold)
        values.append(n)
    return Packing(StepSeries(start=start, end=end, times=tuple(times), values=tuple(values)), unplaceable, SAMPLES if sampled else 0)
