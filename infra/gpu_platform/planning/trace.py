"""Alibaba GPU cluster trace (cluster-trace-gpu-v2023 `openb_pod_list_*.csv`) -> demand per class and GPU model.

Reads the pod list format every file of that trace shares: `name, cpu_milli, memory_mib, num_gpu,
gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time`. A task asks for
`num_gpu * gpu_milli / 1000` physical GPUs' worth over `[creation_time, deletion_time)`; the window is
the first GPU task's creation to the last GPU task's deletion, the same for every class.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from gpu_platform.catalog import load_catalog
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.planning.demand import ANY, DEFAULT_SLA, WORKLOAD_CLASSES, Demand, DemandGroup, Options, Shape
from gpu_platform.planning.packing import Pod
from gpu_platform.planning.replay import Job
from gpu_platform.planning.series import StepSeries, step_series

COLUMNS = ("name", "num_gpu", "gpu_milli", "gpu_spec", "qos", "creation_time", "deletion_time")
QOS = ("LS", "Guaranteed", "Burstable", "BE")
DEFAULT_QOS_CLASS = {"LS": "inference", "Guaranteed": "training", "Burstable": "batch", "BE": "batch"}
DEFAULT_INTERRUPTIBLE_QOS = ("BE",)
# Trace GPU models -> the catalog model that takes their work: same model where the catalog has it,
# else the closest in memory and throughput; their work is scaled by the catalog's throughput ratio
# (catalog.yaml `throughput`, substitution_factor). The undisclosed G2/G3 stand for each class's own GPU
# (GPU for GPU), which the output states; --gpu-map G2=<GPU> chooses another.
DEFAULT_GPU_MAP = {"T4": "T4", "A10": "A10G", "P100": "T4", "V100M16": "A10G", "V100M32": "A10G"}
MAX_PROBLEMS = 50
# Bounds that keep a hostile or corrupt file from asking for unbounded work: the published traces hold about
# 8,000 GPU tasks over under a year (times in seconds from the trace's start); a pod list of 5 million rows or a
# span of 10 years is refused with a line naming the bound instead of filling memory with a demand series.
MAX_ROWS = 5_000_000
MAX_SECONDS = 10 * 365 * 86_400


class Task(NamedTuple):
    """One GPU task of the trace (a named tuple: a million of them build in a fraction of a second)."""

    qos: str
    milli: int
    spec: str
    start: int
    end: int
    gpus: int = 1
    cpu_milli: int = 0
    memory_mib: int = 0
    scheduled: int | None = None
    """When the task started running; the time before it is queueing, not work."""


def looks_like_trace(head: str) -> bool:
    """True when the text's first line is the pod-list header (in any column order)."""
    first = head.splitlines()[0] if head else ""
    cols = {c.strip() for c in first.split(",")}
    return set(COLUMNS) <= cols


def read_tasks(text: str, file: str) -> list[Task]:
    """Every GPU task (num_gpu > 0) of a pod list; ConfigError with one line per bad row.

    Rows are read by column position (csv.reader, not a dict per row): a million-row pod list parses in seconds.
    """
    reader = csv.reader(io.StringIO(text))
    header = [c.strip() for c in next(reader, [])]
    col = {name: i for i, name in enumerate(header)}
    i_num, i_milli, i_start, i_end, i_qos = (col[c] for c in ("num_gpu", "gpu_milli", "creation_time", "deletion_time", "qos"))
    width = len(header)
    # an absent optional column reads as the empty cell appended at `width`
    i_cpu, i_mem, i_spec, i_ran = (col.get(c, width) for c in ("cpu_milli", "memory_mib", "gpu_spec", "scheduled_time"))
    problems: list[Problem] = []
    tasks: list[Task] = []
    for line, row in enumerate(reader, start=2):
        if line - 1 > MAX_ROWS:
            problems.append(Problem(file, f"line {line}", f"more than {MAX_ROWS:,} rows", f"allowed: at most {MAX_ROWS:,} pods per pod list"))
            break
        cells = row if len(row) > width else row + [""] * (width + 1 - len(row))
        qos = cells[i_qos]
        try:
            num = int(cells[i_num])
            milli = int(cells[i_milli] or 0)
            start = int(cells[i_start])
            end = int(cells[i_end])
        except ValueError:
            named = {"num_gpu": cells[i_num], "gpu_milli": cells[i_milli] or "0", "creation_time": cells[i_start], "deletion_time": cells[i_end]}
            bad = next(k for k, v in named.items() if not _is_int(v))
            problems.append(Problem(file, f"line {line}.{bad}", f"{named[bad]!r} is not an integer", "allowed: a whole number"))
            continue
        if qos not in QOS:
            problems.append(Problem(file, f"line {line}.qos", f"unknown QoS {qos!r}", f"allowed: {', '.join(QOS)}"))
            continue
        if num < 0 or milli < 0 or milli > 1000:
            problems.append(
                Problem(file, f"line {line}.gpu_milli", f"num_gpu {num}, gpu_milli {milli} out of range", "allowed: num_gpu >= 0, gpu_milli 0..1000")
            )
            continue
        if not (0 <= start <= MAX_SECONDS and 0 <= end <= MAX_SECONDS):
            bad_key = "creation_time" if not 0 <= start <= MAX_SECONDS else "deletion_time"
            value = start if bad_key == "creation_time" else end
            problems.append(
                Problem(
                    file,
                    f"line {line}.{bad_key}",
                    f"{value} is out of range",
                    f"allowed: seconds from the trace's start, 0..{MAX_SECONDS:,} (10 years)",
                )
            )
            continue
        if end < start:
            problems.append(
                Problem(file, f"line {line}.deletion_time", f"{end} is before creation_time {start}", "allowed: deletion_time >= creation_time")
            )
            continue
        if num == 0 or milli == 0:
            continue
        ran = _int_or_zero(cells[i_ran])
        tasks.append(
            Task(
                qos,
                num * milli,
                cells[i_spec].strip(),
                start,
                end,
                num,
                _int_or_zero(cells[i_cpu]),
                _int_or_zero(cells[i_mem]),
                ran if start <= ran <= end else None,
            )
        )
    if problems:
        raise ConfigError(_capped(problems, file))
    if not tasks:
        raise ConfigError([Problem(file, "", "the trace has no GPU task (num_gpu > 0)", "allowed: a pod list with at least one GPU task")])
    return tasks


def _int_or_zero(value: str) -> int:
    """A CPU or memory request; an empty cell is no request."""
    try:
        return max(0, int(value))
    except ValueError:
        return 0


def _is_int(value: object) -> bool:
    try:
        int(str(value))
    except ValueError:
        return False
    return True


def _capped(problems: list[Problem], file: str) -> list[Problem]:
    if len(problems) <= MAX_PROBLEMS:
        return problems
    rest = len(problems) - MAX_PROBLEMS
    return [*problems[:MAX_PROBLEMS], Problem(file, "", f"{rest} more bad rows not shown", "fix the rows above and run again")]


def trace_demand(
    text: str,
    file: str,
    qos_class: Mapping[str, str] | None = None,
    interruptible_qos: tuple[str, ...] = DEFAULT_INTERRUPTIBLE_QOS,
    gpu_map: Mapping[str, str] | None = None,
    options: Options | None = None,
) -> Demand:
    """Demand per class (QoS mapped to a workload class) and per catalog GPU model (a pool), from one pod list.

    A task's `gpu_spec` filters the pools it may run on: each listed trace model stands for the catalog GPU
    the map gives it (an undisclosed model, G2 or G3, for the class's own GPU); the task goes to the cheapest
    of them per unit of its work (on-demand $/GPU-hour x throughput factor), the class's GPU on a tie. A task
    with no `gpu_spec` runs on the class's GPU. So a class has one group per catalog GPU that gets work, not
    one per spec string.
    """
    opts = options or Options()
    classes = {**DEFAULT_QOS_CLASS, **(qos_class or {})}
    models = {**DEFAULT_GPU_MAP, **(gpu_map or {})}
    tasks = read_tasks(text, file)
    start = min(t.start for t in tasks)
    end = max(t.end for t in tasks)
    if end <= start:
        raise ConfigError(
            [
                Problem(
                    file,
                    "deletion_time",
                    f"every GPU task ends when it starts ({start}): the trace spans no time",
                    "allowed: a window of positive length",
                )
            ]
        )
    choose = _Placement(models, opts.gpu_models)
    by_class: dict[str, list[Task]] = {}
    for t in tasks:
        by_class.setdefault(classes[t.qos], []).append(t)
    groups: list[DemandGroup] = []
    totals: list[DemandGroup] = []
    for cls in sorted(by_class, key=WORKLOAD_CLASSES.index):
        members = by_class[cls]
        placed = [(t, *choose(t.spec, cls)) for t in members]
        work = [(t.start, t.end, round(t.milli * f)) for t, _, f in placed]
        total = step_series(work, start, end)
        spot_part = step_series((w for w, (t, _, _) in zip(work, placed, strict=True) if t.qos in interruptible_qos), start, end)
        totals.append(
            dataclasses.replace(
                _group(cls, ANY, total, spot_part, opts.gpu_models.get(cls, ""), opts), shape=shape_of(members), shape_fit=fit_table(members)
            )
        )
        pools: dict[str, list[int]] = {}
        for i, (_, gpu, _) in enumerate(placed):
            pools.setdefault(gpu, []).append(i)
        for gpu in sorted(pools, key=lambda g: (g != opts.gpu_models.get(cls), g)):
            idx = pools[gpu]
            part = [members[i] for i in idx]
            single = len(pools) == 1
            series = total if single else step_series((work[i] for i in idx), start, end)
            spot = spot_part if single else step_series((work[i] for i in idx if members[i].qos in interruptible_qos), start, end)
            groups.append(
                dataclasses.replace(
                    _group(cls, ANY if single else gpu, series, spot, gpu, opts),
                    shape=shape_of(part),
                    shape_fit=fit_table(part),
                    jobs=jobs_of(part, [placed[i][2] for i in idx]),
                    pods=pods_of(part),
                )
            )
    used = sorted({m for t in tasks if t.spec for m in t.spec.split("|") if m})
    subs = tuple(choose.substitution(m) for m in used)
    return Demand(
        source=file, kind="alibaba-trace", groups=tuple(groups), totals=tuple(totals), options=opts, window=(start, end), substitutions=subs
    )


class _Placement:
    """Where a task's work goes: the catalog GPU (pool) of its class it runs on, and its throughput factor there."""

    def __init__(self, models: Mapping[str, str], class_gpus: Mapping[str, str]) -> None:
        self.models = models
        self.class_gpus = class_gpus
        catalog = load_catalog()
        self.tp = catalog.throughput
        self.price: dict[str, float] = {}
        for it in catalog.instance_types.values():
            if it.price_per_hour is not None:
                per = it.price_per_hour / it.gpus
                self.price[it.gpu.name] = min(self.price.get(it.gpu.name, per), per)
        self.cache: dict[tuple[str, str], tuple[str, float]] = {}

    def factor(self, model: str, gpu: str) -> float:
        """Catalog GPUs per GPU of a trace model on `gpu` (1 without throughput data for both)."""
        f = self.tp.factor(model, gpu) if self.tp else None
        return 1.0 if f is None else f

    def __call__(self, spec: str, cls: str) -> tuple[str, float]:
        key = (spec, cls)
        if key not in self.cache:
            own = self.class_gpus.get(cls, "")
            listed = [x for x in dict.fromkeys(spec.split("|")) if x]
            if not listed:  # no gpu_spec (or only separators, "||"): any GPU, the class's own
                self.cache[key] = (own, 1.0)
            else:
                options = []
                for m in listed:
                    gpu = self.models.get(m, own)
                    f = self.factor(m, gpu)
                    options.append((self.price.get(gpu, math.inf) * f, gpu != own, gpu, f))
                _, _, gpu, f = min(options)
                self.cache[key] = (gpu, f)
        return self.cache[key]

    def substitution(self, model: str) -> tuple[str, str, float, str]:
        """(trace model, catalog GPU standing for it, factor, basis) as the output states it."""
        if model not in self.models:
            own = ", ".join(f"{c} {g}" for c, g in self.class_gpus.items())
            return (
                model,
                "the class's GPU",
                1.0,
                f"undisclosed in the trace: counted on each class's own GPU ({own}), GPU for GPU (assumed 1); choose with --gpu-map {model}=<GPU>",
            )
        return (model, self.models[model], *substitution_factor(model, self.models))


def _group(cls: str, model: str, series: StepSeries, spot: StepSeries, gpu: str, opts: Options) -> DemandGroup:
    spot_p95 = spot.quantile(0.95)
    return DemandGroup(
        workload_class=cls,
        gpu_model=model,
        p50=series.quantile(0.5),
        p95=series.quantile(0.95),
        p99=series.quantile(0.99),
        peak=series.peak(),
        interruptible=spot.peak() > 0,
        interruptible_p95=spot_p95,
        interruptible_share=spot.mean() / series.mean() if series.mean() > 0 else 0.0,
        sla=DEFAULT_SLA[cls],
        growth_per_month=series.growth_per_month(),
        catalog_gpu=gpu,
        series=series,
        spot_series=spot,
    )


def _weighted_p95(pairs: list[tuple[float, float]]) -> float:
    """The value at 95 % of the weight, values ascending."""
    total = sum(w for _, w in pairs)
    acc = 0.0
    for v, w in sorted(pairs):
        acc += w
        if acc >= 0.95 * total * (1 - 1e-12):
            return v
    return max((v for v, _ in pairs), default=0.0)


def substitution_factor(spec: str, models: Mapping[str, str]) -> tuple[float, str]:
    """Catalog GPUs per GPU of a spec's (first) trace model, and where the factor comes from.

    The catalog's `throughput` table gives one metric per model: a trace GPU's work takes
    tflops[trace] / tflops[catalog] of the catalog GPU standing for it (P100 on T4: 9.3 / 8.1 = 1.15).
    A model without data there is counted GPU for GPU, and the basis says so.
    """
    first = spec.split("|", maxsplit=1)[0]
    if not first or first not in models:
        return 1.0, "no substitution"
    tp = load_catalog().throughput
    f = tp.factor(first, models[first]) if tp else None
    if f is None or tp is None:
        return 1.0, f"assumed 1: no throughput data for {first} or {models[first]} in the catalog"
    return f, f"{tp.metric}: {tp.tflops[first]:g} / {tp.tflops[models[first]]:g} (catalog throughput, {tp.as_of})"


def jobs_of(tasks: list[Task], factors: list[float] | None = None) -> tuple[Job, ...]:
    """The tasks as jobs: arrival at creation, run time from scheduling (else creation) to deletion, GPUs and share.

    On a substituted GPU the run time scales by the task's throughput factor (a faster stand-in finishes sooner).
    """
    fs = factors or [1.0] * len(tasks)
    return tuple(
        Job(arrival=t.start, run=(t.end - (t.scheduled if t.scheduled is not None else t.start)) * f, gpus=t.gpus, milli=t.milli // t.gpus)
        for t, f in zip(tasks, fs, strict=True)
    )


def pods_of(tasks: list[Task]) -> tuple[Pod, ...]:
    """The tasks as they hold a node from creation to deletion: GPUs at their share, vCPU and memory."""
    return tuple(Pod(t.start, t.end, t.gpus, t.milli // t.gpus, t.cpu_milli, t.memory_mib) for t in tasks)


def shape_of(tasks: list[Task]) -> Shape:
    """GPUs per task, vCPU and GiB per GPU's worth, each at the 95th percentile of the tasks' GPU-hours."""
    weight = [(t, t.milli * (t.end - t.start)) for t in tasks]
    return Shape(
        gpus_per_task=int(_weighted_p95([(t.gpus, w) for t, w in weight])),
        vcpu_per_gpu=_weighted_p95([(t.cpu_milli / t.milli, w) for t, w in weight]),
        memory_gib_per_gpu=_weighted_p95([(t.memory_mib / 1024 * 1000 / t.milli, w) for t, w in weight]),
    )


def fit_table(tasks: list[Task]) -> dict[tuple[int, float, float], float]:
    """Per catalog node shape (GPUs, vCPU, GiB) the share of the tasks' GPU-hours that fit one node of it."""
    weight = np.array([float(t.milli) * (t.end - t.start) for t in tasks])
    gpus = np.array([t.gpus for t in tasks])
    cpu = np.array([t.cpu_milli for t in tasks])
    memory = np.array([t.memory_mib for t in tasks])
    total = math.fsum(weight) or 1.0  # exact sums (the GPU-milli-seconds are whole numbers): order-free
    out = {}
    for it in load_catalog().instance_types.values():
        key = (it.gpus, float(it.vcpu), float(it.memory_gib))
        if key in out:
            continue
        fits = (gpus <= it.gpus) & (cpu <= it.vcpu * 1000) & (memory <= it.memory_gib * 1024)
        out[key] = math.fsum(weight[fits]) / total
    return out
