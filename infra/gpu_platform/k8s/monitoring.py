"""GPU monitoring: DCGM ServiceMonitor, PrometheusRule, Grafana dashboard, and kube-prometheus-stack if needed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.federation import is_manager
from gpu_platform.k8s.alerts import ALLOCATED, MULTIKUEUE_CLUSTER_METRIC, TENANT_ALLOCATED, TENANT_UTILISATION, rule_groups
from gpu_platform.k8s.gpu_operator import controller_node_selector
from gpu_platform.k8s.objects import (
    GPU_OPERATOR_NAMESPACE,
    LABEL_TENANT,
    NODE_EXPORTER_NAMESPACE,
    Manifest,
    create,
    metadata,
    release_in_namespace,
    system_namespace,
)
from gpu_platform.pools import LABEL_POOL, LABEL_TIER
from gpu_platform.spec.models import PlatformSpec, Receiver

API = "monitoring.coreos.com/v1"
RELEASE = "kube-prometheus-stack"
DASHBOARD_LABEL = "grafana_dashboard"
DCGM_SERVICE_LABELS = {"app": "nvidia-dcgm-exporter"}
DCGM_PORT = "gpu-metrics"
# 30 days of samples for a few thousand GPU series plus the cluster's own metrics, with headroom.
PROMETHEUS_STORAGE = "200Gi"


def _k8s_label(key: str) -> str:
    """How kube-state-metrics spells a label key in `label_*` names."""
    return "label_" + "".join(c if c.isalnum() else "_" for c in key)


def dcgm_service_monitor(spec: PlatformSpec) -> Manifest:
    """Scrape the GPU Operator's DCGM exporter; the node name becomes the `Hostname`-matching `node` label."""
    endpoint = {
        "port": DCGM_PORT,
        "interval": "15s",
        "scrapeTimeout": "10s",
        "honorLabels": False,
        "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}],
    }
    body = {
        "jobLabel": "app",
        "selector": {"matchLabels": DCGM_SERVICE_LABELS},
        "namespaceSelector": {"matchNames": [GPU_OPERATOR_NAMESPACE]},
        "endpoints": [endpoint],
    }
    return {
        "apiVersion": API,
        "kind": "ServiceMonitor",
        "metadata": metadata("nvidia-dcgm-exporter", GPU_OPERATOR_NAMESPACE, dict(spec.monitoring.rule_labels)),
        "spec": body,
    }


def prometheus_rule(spec: PlatformSpec) -> Manifest:
    """The platform's alert and recording rules, labelled so the stack's Prometheus selects them."""
    return {
        "apiVersion": API,
        "kind": "PrometheusRule",
        "metadata": metadata("gpu-platform-rules", spec.monitoring.namespace, dict(spec.monitoring.rule_labels)),
        "spec": {"groups": rule_groups(spec.monitoring.alerts, multikueue=is_manager(spec))},
    }


def _panel(pid: int, title: str, expr: str, legend: str, x: int, y: int, unit: str = "short") -> dict[str, Any]:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": "A", "expr": expr, "legendFormat": legend}],
    }


def dashboard(spec: PlatformSpec) -> dict[str, Any]:
    """The Grafana dashboard: allocation and utilisation per tenant, GPU temperature and memory."""
    t = spec.monitoring.alerts
    panels = [
        _panel(1, "GPU resources allocated per tenant", f"sum by (tenant, resource) ({TENANT_ALLOCATED})", "{{tenant}} {{resource}}", 0, 0),
        _panel(2, "GPU utilisation per tenant", f"{TENANT_UTILISATION}", "{{tenant}}", 12, 0, "percentunit"),
        _panel(3, "GPU resources allocated per namespace", f"sum by (namespace) ({ALLOCATED})", "{{namespace}}", 0, 8),
        _panel(
            4,
            f"GPU temperature (alert above {t.gpu_temp_celsius} C)",
            "max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)",
            "{{Hostname}}/{{gpu}}",
            12,
            8,
            "celsius",
        ),
        _panel(
            5,
            "Framebuffer used",
            "max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE))",
            "{{Hostname}}/{{gpu}}",
            0,
            16,
            "percentunit",
        ),
        _panel(
            6,
            "XID errors and double-bit ECC",
            "max by (Hostname, gpu) (DCGM_FI_DEV_XID_ERRORS) or max by (Hostname, gpu) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)",
            "{{Hostname}}/{{gpu}}",
            12,
            16,
        ),
        _panel(7, "Kueue pending workloads", "sum by (cluster_queue) (kueue_pending_workloads)", "{{cluster_queue}}", 0, 24),
    ]
    return {
        "uid": f"gpu-platform-{spec.environment}",
        "title": f"GPU platform ({spec.environment})",
        "tags": ["gpu-platform", "gpu"],
        "schemaVersion": 39,
        "time": {"from": "now-24h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": panels,
    }


def dashboard_configmap(spec: PlatformSpec) -> Manifest:
    """The dashboard as a ConfigMap labelled for the Grafana sidecar."""
    meta = metadata("gpu-platform-dashboard", spec.monitoring.namespace, {DASHBOARD_LABEL: "1"})
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {"gpu-platform.json": json.dumps(dashboard(spec), indent=2, sort_keys=True)},
    }


# Where the Alertmanager pod finds `alertmanagerSpec.secrets` (prometheus-operator pkg/alertmanager/statefulset.go mounts each there).
ALERTMANAGER_SECRETS = "/etc/alertmanager/secrets"
# kube-prometheus-stack's own route sends its always-firing Watchdog heartbeat to `null`; keep that.
WATCHDOG_ROUTE = {"receiver": "null", "matchers": ['alertname = "Watchdog"']}
CRITICAL_MATCHER = 'severity = "critical"'


def _receiver(r: Receiver) -> dict[str, Any]:
    """An Alertmanager receiver reading its credential from the mounted Secret file (never from the stack file)."""
    path = f"{ALERTMANAGER_SECRETS}/{r.secret.name}/{r.secret.key}"
    if r.type == "pagerduty":
        return {"name": r.name, "pagerduty_configs": [{"routing_key_file": path, "send_resolved": True}]}
    if r.type == "slack":
        slack: dict[str, Any] = {"api_url_file": path, "send_resolved": True}
        if r.channel:
            slack["channel"] = r.channel
        return {"name": r.name, "slack_configs": [slack]}
    return {"name": r.name, "webhook_configs": [{"url_file": path, "send_resolved": True}]}


def alertmanager_values(spec: PlatformSpec) -> dict[str, Any]:
    """kube-prometheus-stack `alertmanager` values: the stack's receivers, critical alerts to `criticalReceiver`.

    Helm merges these maps over the chart's `alertmanager.config` (lists are replaced whole), and the
    chart writes the result to the Alertmanager Secret (templates/alertmanager/secret.yaml).
    """
    am = spec.monitoring.alertmanager
    routes = [WATCHDOG_ROUTE, {"receiver": am.critical_receiver, "matchers": [CRITICAL_MATCHER]}]
    return {
        "config": {
            "route": {"receiver": am.default_receiver, "routes": routes},
            "receivers": [{"name": "null"}, *(_receiver(r) for r in am.receivers)],
        },
        "alertmanagerSpec": {
            "nodeSelector": controller_node_selector(spec),
            "secrets": sorted({r.secret.name for r in am.receivers}),
        },
    }


def prometheus_claim(spec: PlatformSpec) -> dict[str, Any]:
    """Prometheus's volume claim: named class (EKS: the stack's gp3; existing: `storage.className`), 200Gi, RWO.

    EKS from 1.30 has no default StorageClass: a claim naming none would stay Pending for ever.
    """
    claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": PROMETHEUS_STORAGE}}}
    if spec.storage_class is not None:
        claim["storageClassName"] = spec.storage_class
    return claim


def multikueue_state_metrics() -> dict[str, Any]:
    """kube-state-metrics values that export each MultiKueueCluster's conditions (alerts.MULTIKUEUE_CLUSTER_METRIC).

    The kube-state-metrics chart (a dependency of the pinned kube-prometheus-stack) renders `customResourceState.config`
    into the ConfigMap its `--custom-resource-state-config-file` reads, and `rbac.extraRules` into its ClusterRole
    (templates/crs-configmap.yaml, templates/role.yaml). kube-state-metrics' custom-resource-state gauges
    (docs/metrics/extend/customresourcestate-metrics.md) turn a condition's "True"/"False" into 1/0, one series per
    condition type, labelled here `cluster` (the worker) and `condition`.
    """
    return {
        "rbac": {"extraRules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["multikueueclusters"], "verbs": ["list", "watch"]}]},
        "customResourceState": {
            "enabled": True,
            "config": {
                "kind": "CustomResourceStateMetrics",
                "spec": {
                    "resources": [
                        {
                            "groupVersionKind": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "MultiKueueCluster"},
                            "labelsFromPath": {"cluster": ["metadata", "name"]},
                            "metrics": [
                                {
                                    "name": MULTIKUEUE_CLUSTER_METRIC.removeprefix("kube_customresource_"),
                                    "help": "MultiKueueCluster conditions (1: True, 0: False)",
                                    "each": {
                                        "type": "Gauge",
                                        "gauge": {
                                            "path": ["status", "conditions"],
                                            "labelsFromPath": {"condition": ["type"]},
                                            "valueFrom": ["status"],
                                        },
                                    },
                                }
                            ],
                        }
                    ]
                },
            },
        },
    }


def prometheus_stack_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of kube-prometheus-stack: select every ServiceMonitor/rule, expose the platform's labels."""
    selector = controller_node_selector(spec)
    # Pool and tier for per-pool panels and the Spot alert; the GPU Operator's upgrade-state label so
    # the Spot alert can tell a driver-upgrade drain from an interruption.
    node_labels = ",".join((LABEL_POOL, LABEL_TIER, "nvidia.com/gpu-driver-upgrade-state"))
    return {
        "prometheus": {
            "prometheusSpec": {
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "retention": "30d",
                # Chargeback reads 30 days of per-tenant allocation: on an emptyDir (the chart's
                # default, storageSpec {}) a restarted Prometheus pod would lose that history.
                "storageSpec": {"volumeClaimTemplate": {"spec": prometheus_claim(spec)}},
                "nodeSelector": selector,
            }
        },
        "kube-state-metrics": {
            "metricLabelsAllowlist": [f"nodes=[{node_labels}]", f"namespaces=[{LABEL_TENANT}]"],
            **(multikueue_state_metrics() if is_manager(spec) else {}),
        },
        "grafana": {"sidecar": {"dashboards": {"enabled": True, "label": DASHBOARD_LABEL, "searchNamespace": "ALL"}}},
        "prometheus-node-exporter": {"namespaceOverride": NODE_EXPORTER_NAMESPACE},
        "alertmanager": alertmanager_values(spec),
    }


@dataclass(frozen=True)
class MonitoringArgs:
    """Inputs of the Monitoring component."""

    spec: PlatformSpec
    provider: k8s.Provider
    after: tuple[pulumi.Resource, ...] = ()
    """Resources the release waits for (the StorageClass its Prometheus claim names)."""


class Monitoring(pulumi.ComponentResource):
    """kube-prometheus-stack (when the stack installs Prometheus), the GPU rules and dashboard.

    Built before the other releases, which wait for `release` when they render ServiceMonitors
    (gpu_platform.k8s.releases); the DCGM ServiceMonitor follows the GPU Operator (`scrape_gpu_operator`).
    """

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:Monitoring", name, None, opts)
        spec = args.spec
        self._name, self._provider = name, args.provider
        self.release: k8s.helm.v3.Release | None = None
        if spec.monitoring.prometheus == "install":
            chart = spec.lock.chart("kube-prometheus-stack")
            values = prometheus_stack_values(spec)
            # node-exporter reads the host (hostNetwork, hostPID, hostPath /proc, /sys, /): only Pod
            # Security `privileged` admits it, so it gets its own namespace and the rest stays baseline.
            exporter_ns = create(
                f"{name}-node-exporter-namespace",
                system_namespace(NODE_EXPORTER_NAMESPACE, privileged=True),
                pulumi.ResourceOptions(parent=self, provider=args.provider),
            )
            self.release = release_in_namespace(
                self, name, RELEASE, chart, spec.monitoring.namespace, values, args.provider, [exporter_ns, *args.after]
            )
        self._deps: list[pulumi.Resource] = [self.release] if self.release is not None else []
        crd = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=self._deps)
        self._spec = spec
        create(f"{name}-gpu-rules", prometheus_rule(spec), crd)
        if spec.monitoring.dashboard:
            create(f"{name}-dashboard", dashboard_configmap(spec), crd)
        self.register_outputs({})

    def scrape_gpu_operator(self, gpu_operator: pulumi.Resource) -> None:
        """The DCGM ServiceMonitor, in the GPU Operator's namespace once that release exists."""
        create(
            f"{self._name}-dcgm-servicemonitor",
            dcgm_service_monitor(self._spec),
            pulumi.ResourceOptions(parent=self, provider=self._provider, depends_on=[*self._deps, gpu_operator]),
        )
