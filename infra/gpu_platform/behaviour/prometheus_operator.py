"""prometheus-operator's discovery: which ServiceMonitors a Prometheus selects, and which Services a ServiceMonitor scrapes.

Sources, prometheus-operator v0.86 (the kube-prometheus-stack 79.x operator):
- pkg/apis/monitoring/v1/prometheus_types.go, `serviceMonitorSelector` ("An empty label selector matches all
  objects. A null label selector matches no objects.") and `serviceMonitorNamespaceSelector` ("An empty label
  selector matches all namespaces. A null label selector ... matches the current namespace only.");
  pkg/prometheus/resource_selector.go `SelectServiceMonitors`.
- pkg/prometheus/statefulset.go `makeStatefulSet`: `spec.storage.volumeClaimTemplate` becomes the StatefulSet's
  volumeClaimTemplate, named `prometheus-<name>-db` unless the template names itself; without it the data
  volume is an emptyDir.
- pkg/apis/monitoring/v1/servicemonitor_types.go: `selector` over the Services' labels; `namespaceSelector`
  (`any: true`, or `matchNames`; neither: the ServiceMonitor's own namespace); an endpoint's `port` names a
  Service port (pkg/prometheus/promcfg.go `generateServiceMonitorConfig` keeps targets whose port name matches).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_platform.behaviour.networkpolicy import selector_matches


def prometheus_selects(prometheus: Mapping[str, Any], monitor: Mapping[str, Any], monitor_ns_labels: Mapping[str, str]) -> str | None:
    """None when the Prometheus selects the ServiceMonitor, else why not."""
    spec = prometheus["spec"]
    selector = spec.get("serviceMonitorSelector")
    if selector is None:
        return "serviceMonitorSelector is null: the Prometheus selects no ServiceMonitor"
    if not selector_matches(selector, monitor["metadata"].get("labels") or {}):
        return f"serviceMonitorSelector {selector} does not match the ServiceMonitor's labels {monitor['metadata'].get('labels')}"
    ns_selector = spec.get("serviceMonitorNamespaceSelector")
    ns = monitor["metadata"].get("namespace")
    if ns_selector is None:
        if ns != prometheus["metadata"].get("namespace"):
            return f"serviceMonitorNamespaceSelector is null: only {prometheus['metadata'].get('namespace')}, not {ns}"
    elif not selector_matches(ns_selector, monitor_ns_labels):
        return f"serviceMonitorNamespaceSelector {ns_selector} does not match namespace {ns}"
    return None


def monitor_scrapes(monitor: Mapping[str, Any], service: Mapping[str, Any]) -> str | None:
    """None when the ServiceMonitor scrapes a named port of this Service, else why not."""
    spec = monitor["spec"]
    ns_sel = spec.get("namespaceSelector") or {}
    svc_ns = service["metadata"].get("namespace")
    if not ns_sel.get("any", False):
        names = ns_sel.get("matchNames") or [monitor["metadata"].get("namespace")]
        if svc_ns not in names:
            return f"namespaceSelector {names} does not include {svc_ns}"
    if not selector_matches(spec.get("selector"), service["metadata"].get("labels") or {}):
        return f"selector {spec.get('selector')} does not match the Service's labels {service['metadata'].get('labels')}"
    ports = {p.get("name") for p in service["spec"].get("ports") or []}
    missing = [e.get("port") for e in spec.get("endpoints") or [] if e.get("port") not in ports]
    if missing or not spec.get("endpoints"):
        return f"endpoint ports {missing or 'none'} are not among the Service's named ports {sorted(p for p in ports if p)}"
    return None


def statefulset_claims(prometheus: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The volumeClaimTemplates of the StatefulSet the operator builds for this Prometheus (statefulset.go `makeStatefulSet`)."""
    template = (prometheus["spec"].get("storage") or {}).get("volumeClaimTemplate")
    if not template:
        return []
    name = (template.get("metadata") or {}).get("name") or f"prometheus-{prometheus['metadata']['name']}-db"
    return [{"metadata": {"name": name}, "spec": dict(template.get("spec") or {})}]
