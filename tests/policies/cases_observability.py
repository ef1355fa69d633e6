"""Cases of the observability rules: the DCGM exporter scraped, critical alerts present and routed to someone.

Kept apart so the observability rules' cases read together; tests/policies/cases.py joins every module's cases into CASES.
"""

from __future__ import annotations

from gpu_platform_policies import Resource
from tests.policies.builders import DROP, Case, Edit, at, compliant, drop, fires, silent


def edit_alerts(remove: str) -> Edit:
    """Drop one alert from the platform's PrometheusRule."""

    def edit(res: list[Resource]) -> list[Resource]:
        rule = next(r for r in res if r.name == "monitoring-gpu-rules")
        for group in rule.inputs["spec"]["groups"]:
            group["rules"] = [x for x in group["rules"] if x.get("alert") != remove]
        return res

    return edit


OBSERVABILITY_CASES: list[Case] = [
    *compliant("dcgm-exporter-monitored", "prod", "onprem"),
    fires(
        "dcgm-exporter-monitored",
        "not-scraped",
        drop("monitoring-dcgm-servicemonitor"),
        on="gpu-operator-release",
        says="no ServiceMonitor scrapes the DCGM exporter (values.dcgmExporter.serviceMonitor.enabled or a ServiceMonitor)",
    ),
    fires(
        "dcgm-exporter-monitored",
        "exporter-off",
        at("gpu-operator-release", {"values.dcgmExporter.enabled": False}),
        on="gpu-operator-release",
        says="values.dcgmExporter.enabled is false",
    ),
    *compliant("critical-alerts-routed", "prod"),
    silent("critical-alerts-routed", "staging-not-production", stack="staging"),
    fires(
        "critical-alerts-routed",
        "chart-default-null",
        at("monitoring-release", {"values.alertmanager.config": DROP}),
        on="monitoring-release",
        says="critical alerts route to receiver 'null', which notifies nobody",
    ),
    fires(
        "critical-alerts-routed",
        "critical-to-null",
        at("monitoring-release", {"values.alertmanager.config.route.routes.1.receiver": "null"}),
        on="monitoring-release",
        says="critical alerts route to receiver 'null', which notifies nobody",
    ),
    *compliant("critical-gpu-alerts", "prod"),
    fires(
        "critical-gpu-alerts",
        "no-dbe-alert",
        edit_alerts("GpuDoubleBitEccError"),
        on="stack",
        says="no PrometheusRule alert for double-bit ECC errors",
    ),
    fires("critical-gpu-alerts", "no-xid-alert", edit_alerts("GpuXidError"), on="stack", says="no PrometheusRule alert for XID errors"),
]
