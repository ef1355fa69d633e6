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
from itertools import repeat
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from gpu_platform.catalog import load_catalog
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.planning.demand import ANY, DEFAULT_SLA, WORKLOAD_CLASSES, Demand, DemandGroup, Options, Shape
from gpu_platform.planning.packing import Pods
from gpu_platform.planning.replay import Job
from gpu_platform.planning.series import StepSeries, step_series, step_series_columns

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

T = TypeVar("T")


class Tasks(NamedTuple):
    """The GPU tasks of a pod list as columns, in file order: a million rows group and sum as arrays, not objects.

    Numbers are int64 arrays where every sum and product the demand takes of them fits; past that (a hostile file's
    1e30 GPUs) object arrays of Python integers, which the same expressions handle exactly, more slowly.
    """

    qos: npt.NDArray[np.int8]
    """Index into QOS."""
    spec: npt.NDArray[np.int32]
    """Index into `specs`."""
    specs: list[str]
    """The stripped gpu_spec cells."""
    gpus: npt.NDArray[Any]
    share: npt.NDArray[Any]
    """gpu_milli: each GPU's share, 1..1000."""
    start: npt.NDArray[Any]
    end: npt.NDArray[Any]
    cpu_milli: npt.NDArray[Any]
    memory_mib: npt.NDArray[Any]
    ran_from: npt.NDArray[Any]
    """When the task started running (scheduled_time where it lies in [creation, deletion], else creation); the time
    before it is queueing, not work."""

    @property
    def milli(self) -> npt.NDArray[Any]:
        """num_gpu x gpu_milli: physical GPUs' worth in milli-GPUs."""
        return self.gpus * self.share

    def take(self, idx: npt.NDArray[np.intp]) -> Tasks:
        """The tasks at positions `idx`, in that order."""
        return Tasks(self.qos[idx], self.spec[idx], self.specs, *(c[idx] for c in self[3:]))


def looks_like_trace(head: str) -> bool:
    """True when the text's first line is the pod-list header (in any column order)."""
    first = head.splitlines()[0] if head else ""
    cols = {c.strip() for c in first.split(",")}
    return set(COLUMNS) <= cols


SMALL = {"gpus": 2**24, "cpu_milli": 2**53, "memory_mib": 2**53}
"""Above these, a column is kept as Python integers: GPU-milli-seconds of a task (gpus x 1000 x MAX_SECONDS) stay within
int64, vCPU and memory convert to floats exactly."""
CSV_FIELD_LIMIT = 131072  # the csv module's default field size limit: longer lines take the csv reader


def read_tasks(text: str, file: str) -> Tasks:
    """Every GPU task (num_gpu > 0) of a pod list; ConfigError with one line per bad row.

    A plain file (no quotes, carriage returns or NULs, every row as wide as the header, every cell valid) is split and
    checked column by column; anything else is read row by row with the csv module, which names each bad row.
    """
    return _read_plain(text) or _read_rows(text, file)


def _header(first: list[str]) -> tuple[int, dict[str, int]]:
    header = [c.strip() for c in first]
    return len(header), {name: i for i, name in enumerate(header)}


def _read_plain(text: str) -> Tasks | None:
    """read_tasks for a plain, valid file, a few megabytes of rows at a time, by columns; None where the row-by-row reader must read it."""
    if '"' in text or "\r" in text or "\x00" in text:
        return None
    first = text.find("\n")
    if first < 0:
        return None
    width, col = _header(text[:first].split(","))
    if not {"num_gpu", "gpu_milli", "creation_time", "deletion_time", "qos"} <= col.keys():
        return None
    numeric = [c for c in (*INTEGER_COLUMNS, "cpu_milli", "memory_mib", "scheduled_time") if c in col]
    parts: dict[str, list[npt.NDArray[np.int64]]] = {c: [] for c in (*numeric, "qos", "gpu_spec")}
    specs: dict[str, int] = {}
    rows = 0
    pos = first + 1
    while pos < len(text):
        cut = text.find("\n", pos + PLAIN_CHUNK)
        cut = len(text) if cut < 0 else cut + 1
        lines = text[pos:cut].split("\n")
        pos = cut
        if lines[-1] == "":
            lines.pop()  # the newline ending the chunk's last row
        rows += len(lines)
        if not lines or rows > MAX_ROWS or max(map(len, lines)) >= CSV_FIELD_LIMIT:
            return None
        if set(map(str.count, lines, repeat(",", len(lines)))) != {width - 1}:
            return None  # a row wider or narrower than the header
        cells = ",".join(lines).split(",")
        for name in numeric:
            values = _plain_ints(cells[col[name] :: width], name)
            if values is None:
                return None
            parts[name].append(values)
        qos = cells[col["qos"] :: width]
        if not set(qos) <= QOS_CODE.keys():
            return None
        parts["qos"].append(np.array(list(map(QOS_CODE.__getitem__, qos)), dtype=np.int64))
        spec_cells = cells[col["gpu_spec"] :: width] if "gpu_spec" in col else [""] * len(lines)
        # each distinct cell, in the order it first occurs, numbers its stripped spec as a row-by-row setdefault would
        code = {raw: specs.setdefault(raw.strip(), len(specs)) for raw in dict.fromkeys(spec_cells)}
        parts["gpu_spec"].append(np.array(list(map(code.__getitem__, spec_cells)), dtype=np.int64))
    if not rows:
        return None
    column = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    zeros = np.zeros(rows, dtype=np.int64)
    num, share, start, end = (column[c] for c in INTEGER_COLUMNS)
    cpu, memory, ran = (column.get(c, zeros) for c in ("cpu_milli", "memory_mib", "scheduled_time"))
    if any(int(c.max()) >= SMALL[name] for c, name in ((num, "gpus"), (cpu, "cpu_milli"), (memory, "memory_mib"))):
        return None
    if np.any(num < 0) or np.any((share < 0) | (share > 1000)) or np.any((start < 0) | (start > MAX_SECONDS) | (end < 0) | (end > MAX_SECONDS)):
        return None
    if np.any(end < start):
        return None
    ran_from = np.where((start <= ran) & (ran <= end), ran, start)
    gpu = (num != 0) & (share != 0)
    if not np.any(gpu):
        return None
    qos_c, spec_c = column["qos"][gpu].astype(np.int8), column["gpu_spec"][gpu].astype(np.int32)
    return Tasks(qos_c, spec_c, list(specs), *(c[gpu] for c in (num, share, start, end, cpu, memory, ran_from)))


INTEGER_COLUMNS = ("num_gpu", "gpu_milli", "creation_time", "deletion_time")
QOS_CODE = {q: i for i, q in enumerate(QOS)}
PLAIN_CHUNK = 1 << 22
"""Characters of rows split at a time: their cells are short-lived."""


def _plain_ints(cells: list[str], column: str) -> npt.NDArray[np.int64] | None:
    """A column's cells as read_tasks reads them (int(); gpu_milli's empty cell 0; the optional numbers _int_or_zero), as int64.

    Cells of ASCII digits only, every value below 10^18, parse in one numpy call; else each cell takes Python's int(). None
    where a cell is not a whole number (the row-by-row reader names it) or the value overflows int64.
    """
    joined = ",".join(cells)
    digits = joined.replace(",", "")
    # no empty cell (none leads, ends or sits between two commas; one empty cell alone is no digit), digits only
    if digits.isascii() and digits.isdigit() and not (joined[0] == "," or joined[-1] == "," or ",," in joined):
        out: npt.NDArray[np.int64] = np.fromstring(joined, sep=",", dtype=np.int64)
        # numpy saturates past int64: a value from 10^18 takes the exact path below (a longer cell of leading zeros parses alike)
        if len(out) == len(cells) and (not len(out) or int(out.max()) < 10**18):
            return out
    try:
        if column in INTEGER_COLUMNS:
            values = [int(x or 0) for x in cells] if column == "gpu_milli" else [int(x) for x in cells]
        else:
            values = _ints_or_zero(cells)
        return np.array(values, dtype=np.int64)
    except (ValueError, OverflowError):
        return None


def _ints_or_zero(cells: list[str]) -> list[int]:
    """_int_or_zero of every cell."""
    try:
        return [max(0, v) for v in map(int, cells)]
    except ValueError:
        return [_int_or_zero(c) for c in cells]


def _read_rows(text: str, file: str) -> Tasks:
    """read_tasks row by row: csv.reader and each row's checks, naming every bad row."""
    reader = csv.reader(io.StringIO(text))
    width, col = _header(next(reader, []))
    i_num, i_milli, i_start, i_end, i_qos = (col[c] for c in ("num_gpu", "gpu_milli", "creation_time", "deletion_time", "qos"))
    # an absent optional column reads as the empty cell appended at `width`
    i_cpu, i_mem, i_spec, i_ran = (col.get(c, width) for c in ("cpu_milli", "memory_mib", "gpu_spec", "scheduled_time"))
    problems: list[Problem] = []
    rows: list[tuple[int, ...]] = []
    specs: dict[str, int] = {}
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
        spec = specs.setdefault(cells[i_spec].strip(), len(specs))
        cpu, memory = _int_or_zero(cells[i_cpu]), _int_or_zero(cells[i_mem])
        rows.append((QOS.index(qos), spec, num, milli, start, end, cpu, memory, ran if start <= ran <= end else start))
    if problems:
        raise ConfigError(_capped(problems, file))
    if not rows:
        raise ConfigError([Problem(file, "", "the trace has no GPU task (num_gpu > 0)", "allowed: a pod list with at least one GPU task")])
    qos_c, spec_c, *numbers = (list(c) for c in zip(*rows, strict=True))
    small = all(max(numbers[i]) < SMALL[name] for i, name in ((0, "gpus"), (4, "cpu_milli"), (5, "memory_mib")))
    kind: type = np.int64 if small else object
    return Tasks(np.array(qos_c, dtype=np.int8), np.array(spec_c, dtype=np.int32), list(specs), *(np.array(c, dtype=kind) for c in numbers))


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
    start = int(tasks.start.min())
    end = int(tasks.end.max())
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
    task_class = np.array([WORKLOAD_CLASSES.index(classes[q]) for q in QOS], dtype=np.int8)[tasks.qos]
    spot_qos = np.isin(tasks.qos, [QOS.index(q) for q in interruptible_qos if q in QOS])
    groups: list[DemandGroup] = []
    totals: list[DemandGroup] = []
    for code in sorted(set(task_class.tolist())):
        cls = WORKLOAD_CLASSES[code]
        idx = np.flatnonzero(task_class == code)
        members = tasks.take(idx)
        spot_m = spot_qos[idx]
        # each task's pool (catalog GPU) and throughput factor there, decided once per distinct gpu_spec
        specs = np.unique(members.spec)
        chosen = [choose(tasks.specs[k], cls) for k in specs.tolist()]
        at = np.searchsorted(specs, members.spec)
        factor = np.array([f for _, f in chosen], dtype=np.float64)[at]
        names = sorted({gpu for gpu, _ in chosen})
        pool = np.array([names.index(gpu) for gpu, _ in chosen], dtype=np.int64)[at]
        work = _rounded(members.milli * factor)
        total = _series(members, work, start, end)
        spot_part = _series(members, work, start, end, spot_m)
        totals.append(
            dataclasses.replace(
                _group(cls, ANY, total, spot_part, opts.gpu_models.get(cls, ""), opts), shape=shape_of(members), shape_fit=fit_table(members)
            )
        )
        single = len(names) == 1
        for gpu in sorted(names, key=lambda g: (g != opts.gpu_models.get(cls), g)):
            mine = pool == names.index(gpu)
            part = members.take(np.flatnonzero(mine))
            series = total if single else _series(members, work, start, end, mine)
            spot = spot_part if single else _series(members, work, start, end, mine & spot_m)
            groups.append(
                dataclasses.replace(
                    _group(cls, ANY if single else gpu, series, spot, gpu, opts),
                    shape=shape_of(part),
                    shape_fit=fit_table(part),
                    jobs=jobs_of(part, factor[mine]),
                    pods=pods_of(part),
                )
            )
    present = np.unique(tasks.spec).tolist()
    used = sorted({m for k in present for m in tasks.specs[k].split("|") if m})
    subs = tuple(choose.substitution(m) for m in used)
    return Demand(
        source=file, kind="alibaba-trace", groups=tuple(groups), totals=tuple(totals), options=opts, window=(start, end), substitutions=subs
    )


def _rounded(work: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """round() of every element: half to even, as Python's round (object arrays: Python's round itself)."""
    if work.dtype == object:
        return np.array([round(w) for w in work.tolist()], dtype=object)
    return np.rint(work).astype(np.int64)


def _series(tasks: Tasks, work: npt.NDArray[Any], start: int, end: int, where: npt.NDArray[np.bool_] | None = None) -> StepSeries:
    """step_series of the tasks' [creation, deletion) intervals at `work` milli-GPUs, the ones `where` selects."""
    t0, t1, w = (tasks.start, tasks.end, work) if where is None else (tasks.start[where], tasks.end[where], work[where])
    keep = (t1 > t0) & (w != 0)  # the window is the tasks' own span: nothing to clip
    t0, t1, w = t0[keep], t1[keep], w[keep]
    if w.dtype == object or (len(w) and int(np.abs(w).max()) * len(w) >= 2**62):
        return step_series(zip(t0.tolist(), t1.tolist(), w.tolist(), strict=True), start, end)  # sums past int64: Python's integers
    return step_series_columns(t0.astype(np.float64), t1.astype(np.float64), w.astype(np.int64), start, end)


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


def _weighted_p95(values: npt.NDArray[Any], weights: npt.NDArray[Any]) -> Any:
    """The value at 95 % of the weight, values ascending (ties by weight), the weight added up in that order as floats."""
    if weights.dtype != object and len(weights) and int(np.abs(weights).max()) * len(weights) < 2**63:
        total = int(weights.sum())  # exact: no partial sum leaves int64
    else:
        total = sum(weights.tolist())  # exact: Python's integers
    if object in (values.dtype, weights.dtype):
        pairs = list(zip(values.tolist(), weights.tolist(), strict=True))
        acc = 0.0
        for v, w in sorted(pairs):
            acc += w
            if acc >= 0.95 * total * (1 - 1e-12):
                return v
        return max((v for v, _ in pairs), default=0.0)
    order = np.lexsort((weights, values))
    acc_all = np.cumsum(weights[order].astype(np.float64))  # a running sum adds in order, as `acc += w` does
    hit = np.flatnonzero(acc_all >= 0.95 * total * (1 - 1e-12))
    if len(hit):
        return values[order[hit[0]]].item()
    return values.max().item() if len(values) else 0.0


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


def jobs_of(tasks: Tasks, factors: npt.NDArray[np.float64] | None = None) -> tuple[Job, ...]:
    """The tasks as jobs: arrival at creation, run time from scheduling (else creation) to deletion, GPUs and share.

    On a substituted GPU the run time scales by the task's throughput factor (a faster stand-in finishes sooner).
    """
    fs = factors if factors is not None else np.ones(len(tasks.start))
    run = ((tasks.end - tasks.ran_from) * fs).tolist()
    return _records(Job, tasks.start.tolist(), run, _shared(tasks.gpus), _shared(tasks.share))


def _records(kind: type[T], *columns: list[Any]) -> tuple[T, ...]:
    """Named tuples of `kind` from columns: tuple.__new__ on each row, as kind._make does, without a Python call per row."""
    return tuple(map(tuple.__new__, repeat(kind), zip(*columns, strict=True)))  # type: ignore[arg-type]


def pods_of(tasks: Tasks) -> Pods:
    """The tasks as they hold a node from creation to deletion: GPUs at their share, vCPU and memory (held as columns)."""
    return Pods(tasks.start, tasks.end, tasks.gpus, tasks.share, tasks.cpu_milli, tasks.memory_mib)


def _shared(column: npt.NDArray[Any]) -> list[Any]:
    """column.tolist() with one object per distinct value (a million pods hold a handful of shapes)."""
    if column.dtype == object or not len(column):
        out: list[Any] = column.tolist()
        return out
    distinct, at = np.unique(column, return_inverse=True)
    return list(map(distinct.tolist().__getitem__, at.reshape(-1).tolist()))


def shape_of(tasks: Tasks) -> Shape:
    """GPUs per task, vCPU and GiB per GPU's worth, each at the 95th percentile of the tasks' GPU-hours."""
    milli = tasks.milli
    weight = milli * (tasks.end - tasks.start)
    return Shape(
        gpus_per_task=int(_weighted_p95(tasks.gpus, weight)),
        vcpu_per_gpu=_weighted_p95(tasks.cpu_milli / milli, weight),
        memory_gib_per_gpu=_weighted_p95(tasks.memory_mib / 1024 * 1000 / milli, weight),
    )


def fit_table(tasks: Tasks) -> dict[tuple[int, float, float], float]:
    """Per catalog node shape (GPUs, vCPU, GiB) the share of the tasks' GPU-hours that fit one node of it."""
    weight = tasks.milli.astype(np.float64) * (tasks.end - tasks.start).astype(np.float64)
    gpus, cpu, memory = tasks.gpus, tasks.cpu_milli, tasks.memory_mib
    whole = tasks.milli * (tasks.end - tasks.start)  # the same GPU-milli-seconds as integers
    exact = whole.dtype != object and float(weight.max(initial=0.0)) < 2**53 and sum(whole.tolist()) < 2**63
    # exact sums (the GPU-milli-seconds are whole numbers): order-free; fsum of whole floats is the rounded integer sum
    total = (float(int(whole.sum())) if exact else math.fsum(weight)) or 1.0
    out = {}
    for it in load_catalog().instance_types.values():
        key = (it.gpus, float(it.vcpu), float(it.memory_gib))
        if key in out:
            continue
        fits = np.asarray((gpus <= it.gpus) & (cpu <= it.vcpu * 1000) & (memory <= it.memory_gib * 1024), dtype=bool)
        out[key] = (float(int(whole[fits].sum())) if exact else math.fsum(weight[fits])) / total
    return out
