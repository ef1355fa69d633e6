"""A Prometheus `query_range` export of the platform's own recording rule -> demand per class.

The rule is `tenant_resource:gpu_platform_gpu_requests:sum` (k8s/alerts.py): GPUs requested by running
pods, by tenant and by resource as kube-state-metrics names it (`nvidia_com_gpu`, `nvidia_com_gpu_shared`,
`nvidia_com_mig_3g_40gb`). Each sample holds until the next one (the query's step); the last holds one step.
"""

from __future__ import annotations

import json
import math
from itertools import pairwise
from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.input_limits import DEMAND, check_json
from gpu_platform.k8s.alerts import TENANT_ALLOCATED
from gpu_platform.planning.demand import ANY, DEFAULT_SLA, WORKLOAD_CLASSES, Demand, DemandGroup, Options
from gpu_platform.planning.series import step_series
from gpu_platform.pools import gpu_of
from gpu_platform.spec.models import PlatformSpec

INTERRUPTIBLE_CLASSES = ("batch", "development")
# A stretch of more than this many steps with no sample from any series is missing data, not zero demand.
MAX_GAP_STEPS = 3


def looks_like_prometheus(doc: Any) -> bool:
    """True for a query_range response: `{"status", "data": {"resultType": "matrix", "result": [...]}}`."""
    return isinstance(doc, dict) and isinstance(doc.get("data"), dict) and doc["data"].get("resultType") == "matrix"


def mig_share(profile: str, catalog: Catalog, gpus: set[str] | None = None) -> float | None:
    """One MIG slice's share of a physical GPU: 1 / the most slices of it one GPU holds in the layouts of `gpus` (default: every catalog GPU).

    The same profile packs differently per GPU (1g.10gb: 4 on an A100-40GB, 7 on an A100-80GB or H100), so
    a tenant's slices are counted on the GPU model of its own MIG pools.
    """
    models = [g for name, g in catalog.gpus.items() if gpus is None or name in gpus]
    most = max((layout.get(profile, 0) for g in models for layout in g.mig_configs.values()), default=0)
    return 1 / most if most else None


def resource_share(resource: str, tenant: str, spec: PlatformSpec, catalog: Catalog) -> float | None:
    """Physical GPUs' worth of one unit of a kube-state-metrics GPU resource name; None when unknown."""
    if resource == "nvidia_com_gpu":
        return 1.0
    if resource == "nvidia_com_gpu_shared":
        # the tenant's time-sliced/MPS pools say how many replicas one GPU is cut into
        pools = {q.pool for t in spec.tenants if t.name == tenant for q in t.quotas}
        replicas = [p.sharing.replicas for p in spec.node_pools if p.name in pools and p.sharing.replicas]
        return 1 / min(replicas) if replicas else None
    if resource.startswith("nvidia_com_mig_"):
        # nvidia.com/mig-3g.40gb is exported as nvidia_com_mig_3g_40gb; counted on the tenant's MIG pools' GPU
        pools = {q.pool for t in spec.tenants if t.name == tenant for q in t.quotas}
        gpus = {gpu_of(p, catalog).name for p in spec.node_pools if p.name in pools and p.sharing.mode == "mig"}
        return mig_share(_profile_name(resource), catalog, gpus) if gpus else None
    return None


def _profile_name(resource: str) -> str:
    """`nvidia_com_mig_3g_40gb` -> `3g.40gb`."""
    slices, mem = resource.removeprefix("nvidia_com_mig_").split("_", 1)
    return f"{slices}.{mem.replace('_', '.')}"


def tenant_classes(spec: PlatformSpec, catalog: Catalog) -> dict[str, tuple[str, str]]:
    """Tenant -> (workload class, catalog GPU) of the pool holding most of its quota."""
    out: dict[str, tuple[str, str]] = {}
    for t in spec.tenants:
        if not t.quotas:
            continue
        q = max(t.quotas, key=lambda q: q.gpus)
        pool = spec.pool(q.pool)
        out[t.name] = (pool.workload_class, gpu_of(pool, catalog).name)
    return out


def prometheus_demand(
    doc: dict[str, Any], file: str, spec: PlatformSpec | None, stack_file: str, catalog: Catalog, options: Options | None = None
) -> Demand:
    """Demand per class from the tenant series of an export; tenants map to classes through the stack."""
    opts = options or Options()
    if spec is None:
        raise ConfigError([Problem(file, "", "a Prometheus export needs the stack its tenants belong to", "pass --stack NAME or --config FILE")])
    classes = tenant_classes(spec, catalog)
    problems: list[Problem] = []
    intervals: dict[str, list[tuple[float, float, int]]] = {}
    seen_gpus: dict[str, set[str]] = {}
    result = doc["data"].get("result")
    if not isinstance(result, list):
        raise ConfigError([Problem(file, "data.result", "not a list", "allowed: the `result` list of a query_range response")])
    parsed: list[tuple[str, list[tuple[float, float]], float]] = []  # (class, samples in GPUs' worth, share)
    for i, series in enumerate(result):
        at = f"data.result[{i}]"
        if not isinstance(series, dict) or not isinstance(series.get("metric", {}), dict) or not isinstance(series.get("values"), list):
            problems.append(Problem(file, at, "not a series", 'allowed: {"metric": {...}, "values": [[time, "value"], ...]}'))
            continue
        metric = series.get("metric", {})
        odd = next((k for k, v in metric.items() if not isinstance(v, str)), None)
        if odd is not None:  # the HTTP API's label sets map names to strings (prometheus/model LabelSet)
            problems.append(Problem(file, f"{at}.metric.{odd}", f"{metric[odd]!r} is not a label value", "allowed: text (label values are strings)"))
            continue
        name = metric.get("__name__", TENANT_ALLOCATED)
        if name != TENANT_ALLOCATED:
            problems.append(Problem(file, f"{at}.metric.__name__", f"{name!r} is not the per-tenant allocation rule", f"allowed: {TENANT_ALLOCATED}"))
            continue
        tenant, resource = metric.get("tenant"), metric.get("resource", "")
        if tenant not in classes:
            problems.append(
                Problem(
                    file, f"{at}.metric.tenant", f"{tenant!r} is no tenant with a quota in {stack_file}", f"allowed: {', '.join(sorted(classes))}"
                )
            )
            continue
        share = resource_share(resource, tenant, spec, catalog)
        if share is None:
            problems.append(
                Problem(
                    file,
                    f"{at}.metric.resource",
                    f"{resource!r} cannot be converted to physical GPUs",
                    "allowed: nvidia_com_gpu, nvidia_com_gpu_shared (on a time-sliced pool), nvidia_com_mig_<profile>",
                )
            )
            continue
        seen_gpus.setdefault(classes[tenant][0], set()).add(classes[tenant][1])
        samples = _samples(series["values"], at, file, problems)
        if samples is not None:
            parsed.append((classes[tenant][0], samples, share))
    if problems:
        raise ConfigError(problems)
    if not any(s for _, s, _ in parsed):
        raise ConfigError([Problem(file, "data.result", "the export has no samples", "allowed: a query_range response with values")])
    # each series' own resolution: offset or mixed-resolution series must not shrink each other's steps
    steps = [min(b - a for (a, _), (b, _) in pairwise(s)) for _, s, _ in parsed if len(s) > 1]
    if not steps:
        raise ConfigError(
            [Problem(file, "data.result", "no series has two samples, so the query's step is unknown", "allowed: an export over at least two steps")]
        )
    default_step = sorted(steps)[len(steps) // 2]
    covered: list[tuple[float, float]] = []
    for cls, samples, share in parsed:
        step = min((b - a for (a, _), (b, _) in pairwise(samples)), default=default_step)
        for j, (t, v) in enumerate(samples):
            # a sample holds until the series' next one, at most one step: a longer gap is a series absent from the
            # result, i.e. no running pod requested that resource (the rule's sum has no value): zero
            nxt = samples[j + 1][0] if j + 1 < len(samples) else t + step
            stop = min(nxt, t + step)
            intervals.setdefault(cls, []).append((t, stop, round(v * share * 1000)))
            covered.append((t, stop))
    start = min(a for a, _ in covered)
    end = max(b for _, b in covered)
    if end - start <= 0:
        raise ConfigError([Problem(file, "data.result", "the export spans no time", "allowed: samples over a window of positive length")])
    hole = _longest_hole(covered)
    if hole is not None and hole[1] - hole[0] > MAX_GAP_STEPS * min(steps):
        a, b = hole
        raise ConfigError(
            [
                Problem(
                    file,
                    "data.result",
                    f"no series has a sample from {a:.0f} to {b:.0f} ({(b - a) / 3600:.1f} h): missing data is not zero demand",
                    "allowed: an export without gaps (query the missing range again, or plan on the part after the gap)",
                )
            ]
        )
    groups = []
    for cls in sorted(intervals, key=WORKLOAD_CLASSES.index):
        series = step_series(intervals[cls], start, end)
        interruptible = cls in INTERRUPTIBLE_CLASSES
        gpus = seen_gpus.get(cls, set())
        groups.append(
            DemandGroup(
                workload_class=cls,
                gpu_model=ANY,
                p50=series.quantile(0.5),
                p95=series.quantile(0.95),
                p99=series.quantile(0.99),
                peak=series.peak(),
                interruptible=interruptible,
                interruptible_p95=series.quantile(0.95) if interruptible else 0.0,
                interruptible_share=1.0 if interruptible else 0.0,
                sla=DEFAULT_SLA[cls],
                growth_per_month=series.growth_per_month(),
                catalog_gpu=sorted(gpus)[0] if len(gpus) == 1 else opts.gpu_models.get(cls, ""),
                series=series,
                spot_series=series if interruptible else None,
            )
        )
    return Demand(source=file, kind="prometheus", groups=tuple(groups), totals=tuple(groups), options=opts, window=(start, end))


# The last second of year 9999: past it Python's datetime (and any calendar the plan prints) has no date.
MAX_UNIX_SECONDS = 253402300799


def _samples(values: list[Any], at: str, file: str, problems: list[Problem]) -> list[tuple[float, float]] | None:
    """(time, value) pairs of one series, in order; a bad pair, a non-finite or negative value, or time going back is a problem."""
    out: list[tuple[float, float]] = []
    ok = True
    for j, sample in enumerate(values):
        where = f"{at}.values[{j}]"
        try:
            if not isinstance(sample, list):
                raise TypeError
            t, v = float(sample[0]), float(sample[1])
        except (TypeError, ValueError, IndexError):
            problems.append(Problem(file, where, f'{sample!r} is not a [time, "value"] pair', 'allowed: [unix seconds, "number"]'))
            ok = False
            continue
        if not math.isfinite(v) or not math.isfinite(t) or v < 0:
            problems.append(Problem(file, where, f"value {sample[1]!r} is not a finite, non-negative number of GPUs", "allowed: 0 or more"))
            ok = False
            continue
        if not 0 <= t <= MAX_UNIX_SECONDS:
            why = f"time {sample[0]!r} is not a date a Prometheus sample can carry"
            problems.append(Problem(file, where, why, f"allowed: unix seconds from 0 to {MAX_UNIX_SECONDS} (9999-12-31)"))
            ok = False
            continue
        if out and t <= out[-1][0]:
            problems.append(
                Problem(
                    file,
                    where,
                    f"time {_fmt(t)} is not after the previous sample's ({_fmt(out[-1][0])})",
                    "allowed: samples in time order, as query_range returns them",
                )
            )
            ok = False
            continue
        out.append((t, v))
    return out if ok else None


def _fmt(t: float) -> str:
    """Unix seconds as written (1700000060, 1700000060.5), not in exponent notation."""
    return f"{t:.3f}".rstrip("0").rstrip(".")


def _longest_hole(covered: list[tuple[float, float]]) -> tuple[float, float] | None:
    """The longest stretch inside the export's span that no series' sample covers."""
    best = None
    reach = None
    for a, b in sorted(covered):
        if reach is not None and a > reach and (best is None or a - reach > best[1] - best[0]):
            best = (reach, a)
        reach = b if reach is None else max(reach, b)
    return best


def load_json(text: str, file: str = "") -> Any:
    """JSON, or None when the text is not JSON; ConfigError when it nests past input_limits.DEMAND."""
    check_json(text, file, DEMAND, "allowed: a Prometheus query_range JSON export")
    try:
        return json.loads(text)
    except ValueError:
        return None
