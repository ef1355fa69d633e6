"""What `check --base` may be told besides the two revisions: current use per tenant, and demand per class.

The usage snapshot is the Prometheus `query_range` export the capacity planner already reads (the
platform's recording rule `tenant_resource:gpu_platform_gpu_requests:sum`); demand is any `--demand` input.
"""

from __future__ import annotations

from pathlib import Path

from gpu_platform.catalog import Catalog
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.k8s.alerts import TENANT_ALLOCATED
from gpu_platform.planning.inputs import load_demand, read_text
from gpu_platform.planning.prometheus import load_json, looks_like_prometheus, resource_share
from gpu_platform.spec.models import PlatformSpec

ALLOWED = f"allowed: a Prometheus query_range JSON export of {TENANT_ALLOCATED}"


def usage_snapshot(path: Path, spec: PlatformSpec, catalog: Catalog) -> dict[str, float]:
    """Tenant -> physical GPUs in use at the export's last sample (each resource converted as `capacity plan` does)."""
    file = str(path)
    doc = load_json(read_text(path), file)
    if doc is None or not looks_like_prometheus(doc):
        raise ConfigError([Problem(file, "", "not a Prometheus query_range export", ALLOWED)])
    problems: list[Problem] = []
    out: dict[str, float] = {}
    tenants = {t.name for t in spec.tenants}
    for i, series in enumerate(doc["data"].get("result") or []):
        at = f"data.result[{i}]"
        metric = series.get("metric", {}) if isinstance(series, dict) else {}
        values = series.get("values") if isinstance(series, dict) else None
        labels_ok = isinstance(metric, dict) and all(isinstance(v, str) for v in metric.values())  # prometheus/model LabelSet
        if not labels_ok or metric.get("__name__", TENANT_ALLOCATED) != TENANT_ALLOCATED or not isinstance(values, list) or not values:
            problems.append(Problem(file, at, "not a series of the per-tenant allocation rule with samples", ALLOWED))
            continue
        tenant, resource = str(metric.get("tenant")), str(metric.get("resource", ""))
        if tenant not in tenants:
            continue  # a tenant the change removes or never had: no quota of this stack to compare
        share = resource_share(resource, tenant, spec, catalog)
        try:
            value = float(values[-1][1])
        except (TypeError, ValueError, IndexError):
            problems.append(Problem(file, f"{at}.values[{len(values) - 1}]", f"{values[-1]!r} is not a [time, value] pair", ALLOWED))
            continue
        if share is None:
            allowed = "allowed: nvidia_com_gpu, nvidia_com_gpu_shared, nvidia_com_mig_<profile>"
            problems.append(Problem(file, f"{at}.metric.resource", f"{resource!r} cannot be converted to physical GPUs", allowed))
            continue
        out[tenant] = out.get(tenant, 0.0) + value * share
    if problems:
        raise ConfigError(problems)
    return out


def demand_p95(path: Path, spec: PlatformSpec, catalog: Catalog, stack_file: str) -> dict[str, float]:
    """Workload class -> P95 of its total demand, from any input `capacity plan --demand` reads."""
    demand = load_demand(path, catalog, spec, stack_file)
    return {g.workload_class: g.p95 for g in demand.totals}
