"""A Prometheus `query_range` export of the platform's own recording rule -> demand per class.

The rule is `tenant_resource:gpu_platform_gpu_requests:sum` (k8s/alerts.py): GPUs requested by running
pods, by tenant and by resource as kube-state-metrics names it (`nvidia_com_gpu`, `nvidia_com_gpu_shared`,
`nvidia_com_mig_3g_40gb`). Each sample holds until the next one (the query's step); the last holds one step.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.k8s.alerts import TENANT_ALLOCATED
from gpu_platform.planning.demand import ANY, DEFAULT_SLA, WORKLOAD_CLASSES, Demand, DemandGroup, Options
from gpu_platform.planning.series import step_series
from gpu_platform.pools import gpu_of
from gpu_platform.spec.models import PlatformSpec

INTERRUPTIBLE_CLASSES = ("batch", "development")


def looks_like_prometheus(doc: Any) -> bool:
    """True for a query_range response: `{"status", "data": {"resultType": "matrix", "result": [...]}}`."""
    return isinstance(doc, dict) and isinstance(doc.get("data"), dict) and doc["data"].get("resultType") == "matrix"


def mig_share(profile: str, catalog: Catalog) -> float | None:
    """One MIG slice's share of a physical GPU: 1 / the most slices of it one GPU holds in the catalog's layouts."""
    most = max((layout.get(profile, 0) for g in catalog.gpus.values() for layout in g.mig_configs.values()), default=0)
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
        # nvidia.com/mig-3g.40gb is exported as nvidia_com_mig_3g_40gb
        return mig_share(_profile_name(resource), catalog)
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
    stamps = sorted({float(v[0]) for s in result if isinstance(s, dict) and isinstance(s.get("values"), list) for v in s["values"] if _number(v)})
    step = min((b - a for a, b in pairwise(stamps)), default=60.0)
    for i, series in enumerate(result):
        at = f"data.result[{i}]"
        if not isinstance(series, dict) or not isinstance(series.get("metric", {}), dict) or not isinstance(series.get("values"), list):
            problems.append(Problem(file, at, "not a series", 'allowed: {"metric": {...}, "values": [[time, "value"], ...]}'))
            continue
        metric = series.get("metric", {})
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
        values = series["values"]
        for j, sample in enumerate(values):
            try:
                if not isinstance(sample, list):
                    raise TypeError
                t, v = float(sample[0]), float(sample[1])
            except (TypeError, ValueError, IndexError):
                problems.append(Problem(file, f"{at}.values[{j}]", f'{sample!r} is not a [time, "value"] pair', 'allowed: [unix seconds, "number"]'))
                continue
            nxt = float(values[j + 1][0]) if j + 1 < len(values) and _number(values[j + 1]) else t + step
            intervals.setdefault(classes[tenant][0], []).append((t, min(nxt, t + step), round(v * share * 1000)))
    if problems:
        raise ConfigError(problems)
    if not stamps:
        raise ConfigError([Problem(file, "data.result", "the export has no samples", "allowed: a query_range response with values")])
    start, end = stamps[0], stamps[-1] + step
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
            )
        )
    return Demand(source=file, kind="prometheus", groups=tuple(groups), totals=tuple(groups), options=opts, window=(start, end))


def _number(sample: Any) -> bool:
    """True for a `[time, value]` pair whose time is a number."""
    if not isinstance(sample, list) or not sample:
        return False
    try:
        float(sample[0])
    except (TypeError, ValueError):
        return False
    return True


def load_json(text: str) -> Any:
    """JSON, or None when the text is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None
