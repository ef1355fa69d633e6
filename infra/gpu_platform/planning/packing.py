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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from gpu_platform.planning.series import StepSeries


@dataclass(frozen=True)
class Pod:
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


def ffd(pods: list[Pod], shape: NodeShape) -> int:
    """Nodes first-fit decreasing needs for `pods` (already sorted largest first); each must fit an empty node.

    A pod identical to an earlier one starts its search at the node that one took: nodes only lose room while
    packing, so every node before it still cannot hold the pod (the same result, without rescanning them).
    """
    nodes: list[tuple[list[int], list[int]]] = []  # (free milli per GPU, [free cpu milli, free MiB])
    resume: dict[tuple[int, int, int, int], int] = {}
    for p in pods:
        key = (p.gpus, p.milli, p.cpu_milli, p.memory_mib)
        first = resume.get(key, 0)
        for k in range(first, len(nodes)):
            gpus_free, rest = nodes[k]
            if rest[0] < p.cpu_milli or rest[1] < p.memory_mib:
                continue
            fit = []
            for i, f in enumerate(gpus_free):
                if f >= p.milli:
                    fit.append(i)
                    if len(fit) == p.gpus:
                        break
            if len(fit) == p.gpus:
                for i in fit:
                    gpus_free[i] -= p.milli
                rest[0] -= p.cpu_milli
                rest[1] -= p.memory_mib
                resume[key] = k
                break
        else:
            free = [1000] * shape.gpus
            for i in range(p.gpus):
                free[i] -= p.milli
            resume[key] = len(nodes)
            nodes.append((free, [shape.vcpu * 1000 - p.cpu_milli, shape.memory_gib * 1024 - p.memory_mib]))
    return len(nodes)


def _order(p: Pod) -> tuple[int, int, int]:
    return (-p.gpus * p.milli, -p.cpu_milli, -p.memory_mib)


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
    return Packing(StepSeries(start=start, end=end, times=tuple(times), values=tuple(values)), unplaceable)


@lru_cache(maxsize=32)
def pack(pods: tuple[Pod, ...], shape: NodeShape) -> Packing:
    """Nodes in use at each event of the pods' span when the running pods are packed first-fit decreasing."""
    start = min((p.start for p in pods), default=0.0)
    end = max((p.end for p in pods), default=0.0)
    placeable = sorted((p for p in pods if shape.holds(p)), key=_order)
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
    spanned = 0
    running: set[int] = set()
    times: list[float] = []
    values: list[int] = []
    for t in sorted(changes):
        for i, on in changes[t]:
            if on:
                running.add(i)
            else:
                running.discard(i)
        spanned += extra.get(t, 0)
        # indices follow the largest-first order, so sorting them keeps it
        n = (ffd([placeable[i] for i in sorted(running)], shape) + spanned) * 1000
        if values and values[-1] == n:
            continue
        times.append(t)
        values.append(n)
    return Packing(StepSeries(start=start, end=end, times=tuple(times), values=tuple(values)), unplaceable)
