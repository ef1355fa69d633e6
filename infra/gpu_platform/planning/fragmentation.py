"""How many GPUs GPU-sharing pods leave unallocatable: the trace paper's experiment, on a node list and a pod list.

The experiment of Weng et al., "Beware of Fragmentation" (USENIX ATC '23), as its simulator runs it
(hkust-adsl/kubernetes-scheduler-simulator at 8f3d6417353c5083c6d56617f255fadd8dc306bc; the placement itself is
behaviour.gpu_share):

- the workload (pkg/simulator/core.go `Simulate`, simulator.go `SortClusterPods`, `tuneUpPods`): the pod list,
  shuffled, then random copies of its pods (drawn with replacement) appended until the next copy's per-GPU milli
  would take the requested GPU milli past 130 % of the cluster's GPUs (the loop stops at the first copy that does
  not fit); each pod is placed once, in that order, and never leaves;
- tie-breaks between equal scores follow a random permutation of the nodes (core.go `syncClusterResourceList`);
- the measure (experiments/analysis/merge_alloc_discrete.py): after every pod, the allocated GPU milli and the
  GPU milli arrived so far (failed pods included), both as a percentage of the cluster's GPUs; the allocated
  share at X % arrived is the mean over the pods whose arrived percentage rounds to X (rounded to 2 decimals).

Random numbers come from Python's generator seeded with each seed, not Go's `math/rand`: the simulator's own node
permutation depends on goroutines drawing from the shared generator (client-go reflector.go), so even Go does not
replay a seed exactly; the results are compared on their spread over seeds 42 to 51.
"""

from __future__ import annotations

import csv
import io
import os
import random
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from gpu_platform.behaviour import gpu_share
from gpu_platform.behaviour.gpu_share import WHOLE, BoolArray, IntArray, PodShape, Typical
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.planning.demand import Allocatable

INFLATION = 1.3  # workloadTuningConfig.ratio
ARRIVED_MARKS = (90, 100, 130)
UNALLOCATED_MARKS = (100, 130)
POD_LIMIT = 1001  # the node YAML's `pods: '1001'` (NodeResourcesFit)
MAX_NODES = 100_000
MAX_PODS = 1_000_000  # after inflation
MAX_GPUS_PER_NODE = 16
MAX_VALUE = 2**40  # milli-CPU, MiB and GPU milli past this are no machine's (and would overflow the int64 arrays)
MAX_PROBLEMS = 20
MAX_CACHED_SHAPES = 256  # FGD scores kept per pod shape (the default trace has 91 shapes)
# Node-pod evaluations one run may take (pods after inflation x nodes): about 8 times the Alibaba trace's
# (10,800 pods on 1,213 nodes), which takes a few seconds per run; more is refused, not left to run for hours.
MAX_WORK = 100_000_000
# FGD weighs every typical pod shape on every GPU of every candidate: elements of the arrays one placement builds
# (the Alibaba trace: 35 shapes x 1,213 nodes x 8 x 8 GPUs = 2.7 M, about 22 MB).
MAX_FGD_ELEMENTS = 50_000_000
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec")


@dataclass(frozen=True)
class Node:
    """One row of the node list."""

    name: str
    cpu: int
    memory: int
    gpus: int
    model: str


@dataclass(frozen=True)
class Pod:
    """One row of the pod list."""

    name: str
    memory: int
    shape: PodShape


# --- inputs ------------------------------------------------------------------------------------------------------


def _rows(text: str, file: str, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    lines = io.StringIO(text)
    header = next(csv.reader(lines), [])
    reader = csv.DictReader(lines, fieldnames=[c.strip() for c in header])  # "a, b" reads as the trace reader reads it
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise ConfigError([Problem(file, "line 1", f"missing column(s) {', '.join(missing)}", f"allowed: a header with {', '.join(columns)}")])
    yield from enumerate(reader, start=2)


def _ints(row: dict[str, str], keys: Sequence[str], line: int, file: str, problems: list[Problem], optional: Sequence[str] = ()) -> list[int] | None:
    out = []
    for key in keys:
        raw = (row.get(key) or "").strip()
        if not raw and key not in optional:
            problems.append(Problem(file, f"line {line}.{key}", "is empty", "allowed: a whole number >= 0"))
            return None
        try:
            value = int(raw or 0)
        except ValueError:
            problems.append(Problem(file, f"line {line}.{key}", f"{raw!r} is not an integer", "allowed: a whole number >= 0"))
            return None
        if value < 0:
            problems.append(Problem(file, f"line {line}.{key}", f"{value} is negative", "allowed: a whole number >= 0"))
            return None
        if value > MAX_VALUE:
            problems.append(Problem(file, f"line {line}.{key}", f"{value} is out of range", f"allowed: a whole number 0..{MAX_VALUE:,}"))
            return None
        out.append(value)
    return out


def _done(problems: list[Problem], file: str) -> None:
    if problems:
        rest = len(problems) - MAX_PROBLEMS
        shown = problems[:MAX_PROBLEMS] + ([Problem(file, "", f"{rest} more bad rows not shown", "fix the rows above")] if rest > 0 else [])
        raise ConfigError(shown)


def read_nodes(text: str, file: str) -> list[Node]:
    """The trace's node list (`sn, cpu_milli, memory_mib, gpu, model`), sorted by name; ConfigError with one line per bad row."""
    problems: list[Problem] = []
    nodes: list[Node] = []
    names: set[str] = set()
    for line, row in _rows(text, file, NODE_COLUMNS):
        if len(nodes) >= MAX_NODES:
            problems.append(Problem(file, f"line {line}", f"more than {MAX_NODES:,} nodes", f"allowed: at most {MAX_NODES:,}"))
            break
        values = _ints(row, ("cpu_milli", "memory_mib", "gpu"), line, file, problems)
        if values is None:
            continue
        name, model = (row.get("sn") or "").strip(), (row.get("model") or "").strip()
        if not name or name in names:
            problems.append(Problem(file, f"line {line}.sn", f"{name!r} is empty or repeated", "allowed: one row per node name"))
            continue
        if values[2] > MAX_GPUS_PER_NODE:
            problems.append(Problem(file, f"line {line}.gpu", f"{values[2]} GPUs", f"allowed: 0..{MAX_GPUS_PER_NODE}"))
            continue
        names.add(name)
        nodes.append(Node(name, values[0], values[1], values[2], model))
    _done(problems, file)
    if not any(n.gpus for n in nodes):
        raise ConfigError([Problem(file, "", "the node list has no GPU", "allowed: at least one node with gpu > 0")])
    return sorted(nodes, key=lambda n: n.name)


def read_pods(text: str, file: str) -> list[Pod]:
    """Every pod of a pod list, CPU-only ones included, sorted by name.

    pod_csv_to_yaml.py `output_pod`: a GPU pod's per-GPU milli is gpu_milli, capped at 1000; a pod without GPUs asks
    for none.
    """
    problems: list[Problem] = []
    pods: list[Pod] = []
    for line, row in _rows(text, file, POD_COLUMNS):
        if len(pods) >= MAX_PODS:
            problems.append(Problem(file, f"line {line}", f"more than {MAX_PODS:,} pods", f"allowed: at most {MAX_PODS:,}"))
            break
        values = _ints(row, ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"), line, file, problems, optional=("gpu_milli",))
        if values is None:
            continue
        cpu, memory, gpus, milli = values
        if gpus > MAX_GPUS_PER_NODE:
            problems.append(Problem(file, f"line {line}.num_gpu", f"{gpus} GPUs", f"allowed: 0..{MAX_GPUS_PER_NODE}"))
            continue
        if gpus and milli == 0:
            problems.append(Problem(file, f"line {line}.gpu_milli", "0 with num_gpu > 0", "allowed: 1..1000 (the share of each GPU)"))
            continue
        spec = (row.get("gpu_spec") or "").strip() if gpus else ""
        shape = PodShape(cpu, min(milli, WHOLE) if gpus else 0, gpus, spec)
        pods.append(Pod((row.get("name") or "").strip(), memory, shape))
    _done(problems, file)
    if not any(p.shape.gpus for p in pods):
        raise ConfigError([Problem(file, "", "the pod list has no GPU pod", "allowed: at least one pod with num_gpu > 0")])
    return sorted(pods, key=lambda p: p.name)


# --- the workload ------------------------------------------------------------------------------------------------


def workload(pods: Sequence[Pod], cluster_milli: int, rng: random.Random, ratio: float = INFLATION) -> list[Pod]:
    """The pods in arrival order: the list shuffled, then copies appended up to `ratio` of the cluster's GPU milli."""
    order = list(pods)
    rng.shuffle(order)
    requested = sum(p.shape.total_milli for p in pods)
    while len(order) < MAX_PODS:
        pod = pods[rng.randrange(len(pods))]
        if requested + pod.shape.milli > ratio * cluster_milli:  # tuneUpPods compares the per-GPU milli
            return order
        requested += pod.shape.total_milli
        order.append(pod)
    raise ConfigError([_too_many(ratio, "--pods")])


def _too_many(ratio: float, source: str) -> Problem:
    return Problem(
        source,
        "",
        f"inflating the pod list to {ratio:.0%} of the cluster's GPUs takes more than {MAX_PODS:,} pods",
        f"allowed: pods that ask, together, at least {ratio:.0%} of the node list's GPUs / {MAX_PODS:,} (a smaller node list, or more pods)",
    )


# --- the replay --------------------------------------------------------------------------------------------------


@dataclass
class _Scores:
    """FGD scores of one pod shape per node, valid while the node is unchanged."""

    score: IntArray
    gpu: IntArray
    version: IntArray


@dataclass
class Cluster:
    """The nodes' free resources as arrays (GPUs a node lacks are -1)."""

    nodes: Sequence[Node]
    cpu: IntArray = field(init=False)
    memory: IntArray = field(init=False)
    pods: IntArray = field(init=False)
    left: IntArray = field(init=False)
    model: IntArray = field(init=False)
    models: list[str] = field(init=False)

    def __post_init__(self) -> None:
        width = max(n.gpus for n in self.nodes)
        self.cpu = np.array([n.cpu for n in self.nodes], dtype=np.int64)
        self.memory = np.array([n.memory for n in self.nodes], dtype=np.int64)
        self.pods = np.zeros(len(self.nodes), dtype=np.int64)
        self.left = np.array([[WHOLE] * n.gpus + [-1] * (width - n.gpus) for n in self.nodes], dtype=np.int64)
        self.models = sorted({n.model for n in self.nodes})
        self.model = np.array([self.models.index(n.model) for n in self.nodes], dtype=np.int64)

    @property
    def gpus(self) -> int:
        """GPUs in the cluster."""
        return sum(n.gpus for n in self.nodes)

    def feasible(self, pod: Pod) -> BoolArray:
        """open_gpu_share.go Filter after NodeResourcesFit."""
        s = pod.shape
        ok = (self.cpu >= s.cpu) & (self.memory >= pod.memory) & (self.pods < POD_LIMIT)
        if s.gpus == 0:
            return np.asarray(ok)
        accepted = np.array([gpu_share.accepts(s.spec, m) for m in self.models], dtype=np.bool_)[self.model]
        room = (self.left >= s.milli).any(axis=1) if s.gpus == 1 else (self.left == WHOLE).sum(axis=1) >= s.gpus
        return np.asarray(ok & accepted & room)


def _after(cluster: Cluster, idx: IntArray, shape: PodShape) -> tuple[IntArray, IntArray, IntArray]:
    """Node states after a non-sharing pod: its CPU, and its GPUs taken in ascending room (plugin/fgd_score.go)."""
    cpu = cluster.cpu[idx] - shape.cpu
    left = cluster.left[idx].copy()
    if shape.gpus:
        big = np.iinfo(np.int64).max
        order = np.argsort(np.where(left >= shape.milli, left, big), axis=1, kind="stable")[:, : shape.gpus]
        np.subtract.at(left, (np.arange(len(idx))[:, None], order), shape.milli)
    return cpu, left, cluster.model[idx]


class Replay:
    """One policy placing one workload onto a fresh cluster."""

    def __init__(self, nodes: Sequence[Node], policy: str, typical: Typical, rank: IntArray):
        self.cluster = Cluster(nodes)
        self.policy = policy
        self.typical = typical
        self.rank = rank
        self.version = np.zeros(len(nodes), dtype=np.int64)
        self.cache: OrderedDict[PodShape, _Scores] = OrderedDict()
        c = self.cluster
        self.frag = gpu_share.fragmentation(c.cpu, c.left, c.model, typical) if policy == "fgd" else np.zeros(len(nodes))
        self.max_cpu = max(1, int(c.cpu.max()))
        self.max_gpu = int((c.left.clip(0)).sum(axis=1).max()) or WHOLE

    def _fgd(self, pod: Pod, feasible: BoolArray) -> tuple[IntArray, IntArray]:
        s, c = pod.shape, self.cluster
        n = len(c.nodes)
        memo = self.cache.get(s)
        if memo is None:
            memo = self.cache[s] = _Scores(np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64))
            if len(self.cache) > MAX_CACHED_SHAPES:  # a list of all-distinct shapes must not hold N scores per pod
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(s)
        stale = np.flatnonzero(feasible & (memo.version != self.version))
        if len(stale):
            if s.sharing:
                rows, cols = np.nonzero(c.left[stale] >= s.milli)
                nodes = stale[rows]
                left = c.left[nodes].copy()
                left[np.arange(len(nodes)), cols] -= s.milli
                after = gpu_share.fragmentation(c.cpu[nodes] - s.cpu, left, c.model[nodes], self.typical)
                scores = gpu_share.fgd_scores(self.frag[nodes], after)
                starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
                best = np.maximum.reduceat(scores, starts)
                counts = np.diff(np.r_[starts, len(rows)])
                first = np.minimum.reduceat(np.where(scores == np.repeat(best, counts), cols, c.left.shape[1]), starts)
                memo.score[stale], memo.gpu[stale] = best, first
            else:
                cpu, left, model = _after(c, stale, s)
                memo.score[stale] = gpu_share.fgd_scores(self.frag[stale], gpu_share.fragmentation(cpu, left, model, self.typical))
            memo.version[stale] = self.version[stale]
        return memo.score, memo.gpu

    def place(self, pod: Pod) -> bool:
        """Schedule one pod; False when no node fits (the simulator records it failed and goes on)."""
        c, s = self.cluster, pod.shape
        feasible = c.feasible(pod)
        if not feasible.any():
            return False
        idx = np.flatnonzero(feasible)
        if self.policy == "fgd":
            all_scores, gpus = self._fgd(pod, feasible)
            scores = all_scores[idx]
        else:
            gpu_left = c.left[idx].clip(0).sum(axis=1)
            scores = gpu_share.best_fit_scores(c.cpu[idx], gpu_left, s, self.max_cpu, self.max_gpu)
        top = idx[scores == scores.max()]
        node = int(top[np.argmin(self.rank[top])])
        if s.gpus == 0:
            taken: list[int] = []
        elif s.sharing:
            taken = [int(gpus[node])] if self.policy == "fgd" else [gpu_share.best_fit_gpu(c.left[node], s.milli)]
        else:
            taken = gpu_share.exclusive_gpus(c.left[node], s.gpus)
        c.cpu[node] -= s.cpu
        c.memory[node] -= pod.memory
        c.pods[node] += 1
        for g in taken:
            c.left[node, g] -= s.milli
        self.version[node] += 1
        if self.policy == "fgd":
            one = np.array([node])
            self.frag[node] = gpu_share.fragmentation(c.cpu[one], c.left[one], c.model[one], self.typical)[0]
        return True


@dataclass(frozen=True)
class SeedResult:
    """One seed's run: the pods placed (or tried) and the allocated share at each arrived mark."""

    seed: int
    pods: int
    allocated_at: dict[int, float]  # arrived % -> allocated % of the cluster's GPUs, at ARRIVED_MARKS
    curve: dict[int, float]  # the same at every whole arrived percentage some pod's arrival rounds to


def run_seed(nodes: Sequence[Node], pods: Sequence[Pod], policy: str, seed: int, typical: Typical) -> SeedResult:
    """One seed of one policy: the workload placed pod by pod, measured as merge_alloc_discrete.py does."""
    rng = random.Random(seed)
    gpus = sum(n.gpus for n in nodes)
    order = workload(pods, gpus * WHOLE, rng)
    rank = np.array(rng.sample(range(len(nodes)), len(nodes)), dtype=np.int64)
    replay = Replay(nodes, policy, typical, rank)
    arrived = np.zeros(len(order), dtype=np.int64)
    used = np.zeros(len(order), dtype=np.int64)
    a = u = 0
    for i, pod in enumerate(order):
        a += pod.shape.total_milli
        if replay.place(pod):
            u += pod.shape.total_milli
        arrived[i], used[i] = a, u
    arrive_pct = arrived / gpus / 10
    alloc_pct = np.round(used / gpus / 10, 2)
    rounded = np.round(arrive_pct, 0)
    at: dict[int, float] = {}
    for mark in ARRIVED_MARKS:
        rows = rounded == mark
        if rows.any():
            at[mark] = round(float(alloc_pct[rows].mean()), 2)
        else:  # coarse pods jump over the mark: the state when it was passed (pods never leave, so it only grows)
            below = np.flatnonzero(arrive_pct <= mark + 0.5)
            at[mark] = float(alloc_pct[below[-1] if len(below) else 0])
    curve = {int(m): round(float(alloc_pct[rounded == m].mean()), 2) for m in np.unique(rounded)}
    return SeedResult(seed, len(order), at, curve)


@dataclass(frozen=True)
class PolicyResult:
    """One policy over every seed."""

    policy: str
    seeds: tuple[SeedResult, ...]

    def allocated(self, mark: int) -> tuple[float, float, float] | None:
        """Mean, min and max over the seeds of the allocated share at `mark` % arrived."""
        values = [s.allocated_at[mark] for s in self.seeds if mark in s.allocated_at]
        return (round(sum(values) / len(values), 2), min(values), max(values)) if values else None

    def curve(self) -> list[tuple[int, float]]:
        """(arrived %, mean allocated %) at every whole percentage each seed reached."""
        marks = set.intersection(*(set(s.curve) for s in self.seeds))
        return [(m, round(sum(s.curve[m] for s in self.seeds) / len(self.seeds), 2)) for m in sorted(marks)]


def fragmentation_report(
    nodes: Sequence[Node], pods: Sequence[Pod], policies: Sequence[str], seeds: Sequence[int], jobs: int | None = 1, source: str = "--pods"
) -> list[PolicyResult]:
    """Every policy over every seed; `jobs` worker processes (None: one per CPU), each run independent of the others."""
    cluster = Cluster(nodes)
    requested = sum(p.shape.total_milli for p in pods)
    inflated = len(pods) * max(1.0, INFLATION * cluster.gpus * WHOLE / requested)
    typical = gpu_share.typical_pods([p.shape for p in pods], cluster.models)
    width = cluster.left.shape[1]
    if "fgd" in policies and typical.size * len(nodes) * width * width > MAX_FGD_ELEMENTS:
        raise ConfigError(
            [
                Problem(
                    source,
                    "",
                    f"FGD would weigh {typical.size:,} typical pod shapes on every GPU of {len(nodes):,} nodes "
                    f"({typical.size * len(nodes) * width * width:,} array elements per pod)",
                    f"allowed: at most {MAX_FGD_ELEMENTS:,} (pod lists whose common shapes are few, as real traces'; or --policy best-fit)",
                )
            ]
        )
    if inflated * len(nodes) > MAX_WORK:
        raise ConfigError(
            [
                Problem(
                    source,
                    "",
                    f"{len(pods):,} pods inflated to about {inflated:,.0f} on {len(nodes):,} nodes is {inflated * len(nodes):,.0f} node-pod "
                    "evaluations per run",
                    f"allowed: at most {MAX_WORK:,} (a pod list and node list of the trace's size or a few times it)",
                )
            ]
        )
    if inflated > MAX_PODS:
        raise ConfigError([_too_many(INFLATION, source)])
    runs = [(policy, seed) for policy in policies for seed in seeds]
    workers = min(len(runs), jobs or len(os.sched_getaffinity(0)) or 1)
    if workers <= 1:
        done = [run_seed(nodes, pods, policy, seed, typical) for policy, seed in runs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(run_seed, nodes, pods, policy, seed, typical) for policy, seed in runs]
            done = [f.result() for f in futures]
    results = dict(zip(runs, done, strict=True))
    return [PolicyResult(policy, tuple(results[policy, seed] for seed in seeds)) for policy in policies]


def allocatable(
    nodes: Sequence[Node], pods: Sequence[Pod], policy: str, seeds: Sequence[int], nodes_file: str, jobs: int | None = None
) -> Allocatable:
    """The share of arrived GPUs `policy` places at 100 % arrived (the mean over `seeds`): what `capacity plan --nodes` divides by."""
    models = {n.model for n in nodes}
    placeable = [p for p in pods if not (p.shape.gpus and p.shape.spec) or any(gpu_share.accepts(p.shape.spec, m) for m in models)]
    left_out = sum(1 for p in pods if p.shape.gpus) - sum(1 for p in placeable if p.shape.gpus)
    if not any(p.shape.gpus for p in placeable):
        raise ConfigError(
            [Problem(nodes_file, "", "no GPU pod of the demand accepts a GPU model of these nodes", f"allowed: a node list with {_models(pods)}")]
        )
    result = fragmentation_report(nodes, placeable, (policy,), seeds, jobs, source=nodes_file)[0]
    mean, low, high = result.allocated(100) or (100.0, 100.0, 100.0)  # every run passes 100 % (inflated to 130 %)
    if low <= 0:
        raise ConfigError(
            [
                Problem(
                    nodes_file,
                    "",
                    f"{policy} places no GPU pod of the demand on these nodes (their CPU, memory or GPUs are too small for every pod)",
                    "allowed: a node list the demand's pods fit on",
                )
            ]
        )
    gpus = sum(n.gpus for n in nodes)
    return Allocatable(mean / 100, low / 100, high / 100, policy, nodes_file, len(nodes), gpus, tuple(seeds), left_out)


def _models(pods: Sequence[Pod]) -> str:
    named = sorted({m for p in pods if p.shape.gpus and p.shape.spec for m in p.shape.spec.split("|") if m})
    return "GPU models the pods ask for: " + ", ".join(named[:10]) + (" ..." if len(named) > 10 else "")


def unallocated_gpus(share: float, gpus: int) -> int:
    """GPUs' worth left unallocated at an allocated share (percent): idle parts of shared GPUs included."""
    return round((100.0 - share) / 100.0 * gpus)
