"""Alibaba GPU cluster trace (cluster-trace-gpu-v2023 `openb_pod_list_*.csv`) -> demand per class and GPU model.

Reads the pod list format every file of that trace shares: `name, cpu_milli, memory_mib, num_gpu,
gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time`. A task asks for
`num_gpu * gpu_milli / 1000` physical GPUs' worth over `[creation_time, deletion_time)`; the window is
the first GPU task's creation to the last GPU task's deletion, the same for every class.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_platform.errors import ConfigError, Problem
from gpu_platform.planning.demand import ANY, DEFAULT_SLA, WORKLOAD_CLASSES, Demand, DemandGroup, Options
from gpu_platform.planning.series import StepSeries, step_series

COLUMNS = ("name", "num_gpu", "gpu_milli", "gpu_spec", "qos", "creation_time", "deletion_time")
QOS = ("LS", "Guaranteed", "Burstable", "BE")
DEFAULT_QOS_CLASS = {"LS": "inference", "Guaranteed": "training", "Burstable": "batch", "BE": "batch"}
DEFAULT_INTERRUPTIBLE_QOS = ("BE",)
# Trace GPU models -> the catalog model that takes their work: same model where the catalog has it,
# else the closest in memory and FP16 throughput; the undisclosed G2/G3 go to the class's default.
DEFAULT_GPU_MAP = {"T4": "T4", "A10": "A10G", "P100": "T4", "V100M16": "A10G", "V100M32": "A10G"}
UNCONSTRAINED = "unconstrained"
MAX_PROBLEMS = 50


@dataclass(frozen=True)
class Task:
    """One GPU task of the trace."""

    qos: str
    milli: int
    spec: str
    start: int
    end: int


def looks_like_trace(head: str) -> bool:
    """True when the text's first line is the pod-list header (in any column order)."""
    first = head.splitlines()[0] if head else ""
    cols = {c.strip() for c in first.split(",")}
    return set(COLUMNS) <= cols


def read_tasks(text: str, file: str) -> list[Task]:
    """Every GPU task (num_gpu > 0) of a pod list; ConfigError with one line per bad row."""
    reader = csv.DictReader(io.StringIO(text))
    problems: list[Problem] = []
    tasks: list[Task] = []
    for line, row in enumerate(reader, start=2):
        try:
            num = int(row["num_gpu"])
            milli = int(row["gpu_milli"] or 0)
            start = int(row["creation_time"])
            end = int(row["deletion_time"])
        except (TypeError, ValueError):
            bad = next(k for k in ("num_gpu", "gpu_milli", "creation_time", "deletion_time") if not _is_int(row.get(k)))
            problems.append(Problem(file, f"line {line}.{bad}", f"{row.get(bad)!r} is not an integer", "allowed: a whole number"))
            continue
        qos = row["qos"]
        if qos not in QOS:
            problems.append(Problem(file, f"line {line}.qos", f"unknown QoS {qos!r}", f"allowed: {', '.join(QOS)}"))
            continue
        if num < 0 or milli < 0 or milli > 1000:
            problems.append(
                Problem(file, f"line {line}.gpu_milli", f"num_gpu {num}, gpu_milli {milli} out of range", "allowed: num_gpu >= 0, gpu_milli 0..1000")
            )
            continue
        if end < start:
            problems.append(
                Problem(file, f"line {line}.deletion_time", f"{end} is before creation_time {start}", "allowed: deletion_time >= creation_time")
            )
            continue
        if num == 0 or milli == 0:
            continue
        tasks.append(Task(qos=qos, milli=num * milli, spec=(row.get("gpu_spec") or "").strip(), start=start, end=end))
    if problems:
        raise ConfigError(_capped(problems, file))
    if not tasks:
        raise ConfigError([Problem(file, "", "the trace has no GPU task (num_gpu > 0)", "allowed: a pod list with at least one GPU task")])
    return tasks


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
    """Demand per class (QoS mapped to a workload class) and per `gpu_spec`, from one pod list."""
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

    by_class: dict[str, list[Task]] = {}
    for t in tasks:
        by_class.setdefault(classes[t.qos], []).append(t)
    groups: list[DemandGroup] = []
    totals: list[DemandGroup] = []
    for cls in sorted(by_class, key=WORKLOAD_CLASSES.index):
        members = by_class[cls]
        total = step_series(((t.start, t.end, t.milli) for t in members), start, end)
        spot_part = step_series(((t.start, t.end, t.milli) for t in members if t.qos in interruptible_qos), start, end)
        totals.append(_group(cls, ANY, total, spot_part, opts.gpu_models.get(cls, ""), opts))
        specs = sorted({t.spec for t in members})
        for spec in specs:
            part = [t for t in members if t.spec == spec]
            series = total if specs == [""] else step_series(((t.start, t.end, t.milli) for t in part), start, end)
            spot = step_series(((t.start, t.end, t.milli) for t in part if t.qos in interruptible_qos), start, end)
            first = spec.split("|")[0]
            gpu = models.get(first) or opts.gpu_models.get(cls, "")
            label = spec or (ANY if specs == [""] else UNCONSTRAINED)
            groups.append(_group(cls, label, series, spot, gpu, opts))
    return Demand(source=file, kind="alibaba-trace", groups=tuple(groups), totals=tuple(totals), options=opts, window=(start, end))


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
