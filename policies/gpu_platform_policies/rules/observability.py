"""Observability: the DCGM exporter is deployed and scraped, and the critical GPU alerts exist."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.behaviour.alertmanager import match
from gpu_platform_policies.model import Context, Finding, PlanView, rule
from gpu_platform_policies.view import get, helm_releases, object_name, objects, pools, truthy, walk

MONITORING = "monitoring.coreos.com"
# Each critical failure, and the expressions or alert names that catch it.
CRITICAL_ALERTS: dict[str, tuple[re.Pattern[str], ...]] = {
    "XID errors": (re.compile(r"DCGM_FI_DEV_XID_ERRORS"),),
    "double-bit ECC errors": (re.compile(r"DCGM_FI_DEV_ECC_DBE_(VOL|AGG)_TOTAL"),),
    "GPU lost": (
        re.compile(r"absent\w*\s*\(\s*DCGM_FI_"),
        re.compile(r"DCGM_FI_DEV_XID_ERRORS[^\n]*\b79\b"),
        re.compile(r"(?i)gpu.?(lost|fell.?off|off.?the.?bus|missing|unavailable)"),
    ),
}


@rule(
    "dcgm-exporter-monitored",
    "The DCGM exporter runs (GPU Operator) and a ServiceMonitor scrapes it.",
    "mandatory",
    "stack",
    category="observability",
)
def dcgm_exporter_monitored(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Without DCGM metrics nobody sees a GPU fail until its jobs do."""
    if not pools(plan, ctx.catalog):
        return
    releases = helm_releases(plan, "gpu-operator")
    if not releases:
        yield Finding("stack", "no GPU Operator release, so no DCGM exporter runs on GPU nodes", key="gpu-platform:gpuOperator")
        return
    release = releases[0]
    dcgm = get(release.inputs, "values", "dcgmExporter", default={}) or {}
    if not truthy(dcgm.get("enabled", True)):
        yield Finding(release.name, "values.dcgmExporter.enabled is false")
    scraped = truthy(get(dcgm, "serviceMonitor", "enabled")) or any(
        "dcgm" in object_name(r) or "dcgm" in str(get(r.inputs, "spec", "selector")) for r in objects(plan, "ServiceMonitor", MONITORING)
    )
    if not scraped:
        yield Finding(release.name, "no ServiceMonitor scrapes the DCGM exporter (values.dcgmExporter.serviceMonitor.enabled or a ServiceMonitor)")


@rule(
    "critical-gpu-alerts",
    "PrometheusRules alert on XID errors, double-bit ECC errors and lost GPUs.",
    "mandatory",
    "stack",
    category="observability",
)
def critical_gpu_alerts(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """These three mean a GPU is broken now; each needs a page, not a dashboard."""
    if not pools(plan, ctx.catalog):
        return
    texts = []
    for r in objects(plan, "PrometheusRule", MONITORING):
        for _, key, value in walk(r.inputs.get("spec")):
            if key in ("alert", "expr") and isinstance(value, (str, int)):
                texts.append(str(value))
            elif isinstance(value, Mapping) and "alert" in value:
                texts.append(f"{value.get('alert')} {value.get('expr')}")
    blob = "\n".join(texts)
    for failure, patterns in CRITICAL_ALERTS.items():
        if not any(p.search(blob) for p in patterns):
            yield Finding("stack", f"no PrometheusRule alert for {failure}", key="gpu-platform:monitoring")


# The pinned kube-prometheus-stack chart's values.yaml `alertmanager.config.route`: everything to `null`.
CHART_DEFAULT_ROUTE: dict[str, Any] = {"receiver": "null", "routes": [{"receiver": "null", "matchers": ['alertname = "Watchdog"']}]}
NOTIFIER_KEYS = re.compile(r"^\w+_configs$")


def route_receiver(route: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """The first receiver an alert reaches (gpu_platform.behaviour.alertmanager `match`: route.go Route.Match)."""
    return match(route, labels)[0]


@rule(
    "critical-alerts-routed",
    "A production stack that installs Alertmanager sends critical alerts to a receiver that notifies someone.",
    "mandatory",
    "stack",
    category="observability",
)
def critical_alerts_routed(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """kube-prometheus-stack routes every alert to its `null` receiver unless told otherwise: GPU failures page nobody."""
    if not ctx.production:
        return
    for release in helm_releases(plan, "kube-prometheus-stack"):
        config = get(release.inputs, "values", "alertmanager", "config", default={}) or {}
        route = {**CHART_DEFAULT_ROUTE, **(config.get("route") or {})}
        receivers = {r.get("name"): r for r in config.get("receivers") or [{"name": "null"}]}
        target = route_receiver(route, {"severity": "critical", "alertname": "GpuXidError"})
        notifies = any(NOTIFIER_KEYS.match(k) and v for k, v in (receivers.get(target) or {}).items())
        if not notifies:
            yield Finding(
                release.name,
                f"critical alerts route to receiver {target!r}, which notifies nobody; "
                "set monitoring.alertmanager.criticalReceiver to a receiver with a pagerduty, slack or webhook secret",
            )
