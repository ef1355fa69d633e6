"""Journey: a GPU fault reaches on-call (issue 16, item 7), stage by stage over one stack's rendered objects.

Relies on (each stage names its own):
- NVIDIA GPU Operator: the operator creates the exporter's Service and DaemonSet in its namespace
  (assets/state-dcgm-exporter/0600_service.yaml: Service `nvidia-dcgm-exporter`, label
  `app: nvidia-dcgm-exporter`, port `gpu-metrics` 9400; 0800_daemonset.yaml: pods labelled the same);
- dcgm-exporter: each CSV record's field name is the metric name (counter_config.go `ExtractCounters`);
- prometheus-operator's discovery (gpu_platform.behaviour.prometheus_operator) on the Prometheus that
  `helm template` of the real kube-prometheus-stack chart renders;
- Kubernetes NetworkPolicy semantics (gpu_platform.behaviour.networkpolicy) for the scrape;
- PV controller and external-provisioner (gpu_platform.behaviour.storage): a Pending claim keeps Prometheus down;
- promtool (Debian's prometheus package) evaluating the rendered XID rule;
- Alertmanager's dispatch/route.go `Match` (gpu_platform.behaviour.alertmanager) on the Secret the chart writes;
- prometheus-operator mounting `alertmanagerSpec.secrets` at /etc/alertmanager/secrets/<name>/<key>.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.behaviour.alertmanager import match
from gpu_platform.behaviour.apimachinery import selector_matches
from gpu_platform.behaviour.networkpolicy import Endpoint, connection, namespace_labels
from gpu_platform.behaviour.prometheus_operator import monitor_scrapes, prometheus_selects
from gpu_platform.behaviour.storage import claim_binds
from gpu_platform.commands.render import RULES_FILE
from gpu_platform.k8s.dcgm import read_metrics_csv
from gpu_platform.k8s.objects import GPU_OPERATOR_NAMESPACE
from gpu_platform_policies import PlanView, Resource
from gpu_platform_policies.rules.paths import installed_drivers
from tests.conftest import ROOT, plan_for, spec_for
from tests.journeys.helpers import chart_objects, manifests, stage
from tests.k8s.helpers import rendered

EXPORTER_LABELS = {"app": "nvidia-dcgm-exporter"}
EXPORTER_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "nvidia-dcgm-exporter", "namespace": GPU_OPERATOR_NAMESPACE, "labels": EXPORTER_LABELS},
    "spec": {"selector": EXPORTER_LABELS, "ports": [{"name": "gpu-metrics", "port": 9400, "targetPort": 9400, "protocol": "TCP"}]},
}
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
FAULT = {"Hostname": "p5-node-1", "gpu": "3", "UUID": "GPU-3"}


def _exporter_reached_by_a_monitor(stack: str) -> dict[str, Any]:
    monitors = [o for o in manifests(stack) if o["kind"] == "ServiceMonitor"]
    why = {o["metadata"]["name"]: monitor_scrapes(o, EXPORTER_SERVICE) for o in monitors}
    scraping = [o for o in monitors if why[o["metadata"]["name"]] is None]
    stage("a ServiceMonitor selects the DCGM exporter's Service", bool(scraping), f"none does: {why}")
    return scraping[0]


def _scrape_allowed(stack: str, prometheus_ns: str, extra: tuple[dict[str, Any], ...] = ()) -> None:
    objs = [*manifests(stack), *extra]
    prometheus = Endpoint(prometheus_ns, {"app.kubernetes.io/name": "prometheus", "prometheus": "kube-prometheus-stack-prometheus"}, "10.40.1.10")
    exporter = Endpoint(GPU_OPERATOR_NAMESPACE, EXPORTER_LABELS, "10.40.2.20")
    d = connection(objs, prometheus, exporter, 9400)
    stage(f"Prometheus in {prometheus_ns} reaches the exporter on 9400 under both namespaces' NetworkPolicies", d.allowed, d.reason)


def _xid_fires(stack: str, tmp_path: Path) -> dict[str, str]:
    csv = next(
        o
        for o in manifests(stack)
        if o["kind"] == "ConfigMap" and o["metadata"].get("namespace") == GPU_OPERATOR_NAMESPACE and "dcgm-metrics.csv" in o["data"]
    )
    emitted = {c.field for c in read_metrics_csv(csv["data"]["dcgm-metrics.csv"])}
    stage("the exporter emits the XID metric", XID_METRIC in emitted, f"{XID_METRIC} is not in the exporter's CSV: {sorted(emitted)}")
    groups = rendered(stack)[RULES_FILE]
    rule = next((r for g in groups["groups"] for r in g["rules"] if r.get("alert") == "GpuXidError"), None)
    stage("an alert rule reads the XID metric", rule is not None and XID_METRIC in rule["expr"], f"GpuXidError: {rule}")
    assert rule is not None
    promtool = shutil.which("promtool")
    stage("promtool is installed", promtool is not None, "apt-get install -y --no-install-recommends prometheus (make test does this)")
    assert promtool is not None
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(groups, sort_keys=False))
    series = "{" + ", ".join(f'{k}="{v}"' for k, v in FAULT.items()) + "}"
    labels = {**rule["labels"], **FAULT}
    # Prometheus expands `{{ $labels.x }}` and `{{ $value }}` in annotations (rules/alerting.go `Eval`): XID 79 here.
    annotations = {
        k: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: FAULT[m.group(1)], v).replace("{{ $value }}", "79") for k, v in rule["annotations"].items()
    }
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": f"{XID_METRIC}{series}", "values": "0x10 79x10"}],
                "alert_rule_test": [
                    {"eval_time": "12m", "alertname": "GpuXidError", "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}]}
                ],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    done = subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    stage("the XID rule fires in promtool on an XID 79", done.returncode == 0, done.stdout + done.stderr)
    return {"alertname": "GpuXidError", **labels}


def test_a_gpu_fault_reaches_oncall_on_prod(tmp_path: Path) -> None:
    stack = "prod"
    spec = spec_for(stack)
    monitor = _exporter_reached_by_a_monitor(stack)
    kps = chart_objects(stack, "kube-prometheus-stack")
    prometheus = next(o for o in kps if o["kind"] == "Prometheus")
    why = prometheus_selects(prometheus, monitor, namespace_labels(manifests(stack), monitor["metadata"]["namespace"]))
    stage("the rendered Prometheus watches that ServiceMonitor", why is None, str(why))
    claim = prometheus["spec"].get("storage", {}).get("volumeClaimTemplate", {}).get("spec", {})
    classes = [o for o in manifests(stack) if o["kind"] == "StorageClass"]
    view = PlanView(Resource(r.type, r.name, r.parent, r.inputs) for r in plan_for(stack).resources)
    binding = claim_binds(claim, classes, installed_drivers(view) or {})
    stage("Prometheus runs: its data claim binds", binding.binds, binding.reason)
    _scrape_allowed(stack, spec.monitoring.namespace, tuple(o for o in kps if o["kind"] == "NetworkPolicy"))
    alert = _xid_fires(stack, tmp_path)
    secret = next(o for o in kps if o["kind"] == "Secret" and "alertmanager.yaml" in (o.get("data") or {}))
    config = yaml.safe_load(base64.b64decode(secret["data"]["alertmanager.yaml"]))
    receivers = match(config["route"], alert)
    am = spec.monitoring.alertmanager
    stage("Alertmanager routes the XID alert to the critical receiver", am.critical_receiver in receivers, f"routed to {receivers}")
    receiver = next(r for r in config["receivers"] if r["name"] == am.critical_receiver)
    declared = next(r for r in am.receivers if r.name == am.critical_receiver)
    path = f"/etc/alertmanager/secrets/{declared.secret.name}/{declared.secret.key}"
    stage("the critical receiver notifies through the mounted Secret", path in str(receiver), f"{receiver} does not read {path}")
    alertmanager = next(o for o in kps if o["kind"] == "Alertmanager")
    mounted = alertmanager["spec"].get("secrets") or []
    stage("prometheus-operator mounts the receiver's Secret", declared.secret.name in mounted, f"alertmanagerSpec.secrets is {mounted}")
    command = f"kubectl create secret generic {declared.secret.name} --namespace {spec.monitoring.namespace} --from-file={declared.secret.key}="
    for page in ("docs/deploying.md",):  # the README's deploy recipe links there
        stage(f"{page} says how to create the receiver's Secret", command in (ROOT / page).read_text(), f"{page} lacks `{command}...`")


def test_a_gpu_fault_reaches_the_clusters_prometheus_on_onprem(tmp_path: Path) -> None:
    """On-prem the Prometheus (and its Alertmanager) are the cluster's: the stack's part ends at a ServiceMonitor and
    rule carrying the labels that Prometheus selects (`monitoring.ruleLabels`), a scrape the policies allow, a firing rule."""
    stack = "onprem"
    spec = spec_for(stack)
    if spec.monitoring.prometheus != "existing":
        pytest.fail("the onprem stack is expected to use the cluster's existing Prometheus")
    monitor = _exporter_reached_by_a_monitor(stack)
    labels = monitor["metadata"].get("labels") or {}
    want = spec.monitoring.rule_labels
    stage(
        "the ServiceMonitor carries the labels the cluster's Prometheus selects",
        selector_matches({"matchLabels": dict(want)}, labels),
        f"{labels} vs {want}",
    )
    _scrape_allowed(stack, spec.monitoring.namespace)
    alert = _xid_fires(stack, tmp_path)
    stage("the alert is critical (the cluster's Alertmanager pages on severity)", alert.get("severity") == "critical", str(alert))


def _default_deny(namespace: str, direction: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": namespace},
        "spec": {"podSelector": {}, "policyTypes": [direction]},
    }


@pytest.mark.parametrize("stack", ["prod", "onprem"])
@pytest.mark.parametrize("side", ["exporter", "prometheus"])
def test_the_scrape_stage_stops_at_a_default_deny_on_either_side(stack: str, side: str) -> None:
    """The stacks put no NetworkPolicy in the operator's or monitoring namespace, so the scrape stage above passes on
    every stack; a cluster's own default-deny on either side (ingress to the exporter, egress from Prometheus) stops it."""
    monitoring = spec_for(stack).monitoring.namespace
    deny = _default_deny(GPU_OPERATOR_NAMESPACE, "Ingress") if side == "exporter" else _default_deny(monitoring, "Egress")
    _scrape_allowed(stack, monitoring)
    with pytest.raises(AssertionError, match="reaches the exporter on 9400"):
        _scrape_allowed(stack, monitoring, (deny,))
