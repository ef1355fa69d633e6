"""Install order of the platform's Helm releases: a release waits for the release that brings the CRDs it uses.

Helm (pkg/action/install.go) creates a release's objects in one pass; an object whose kind no
CRD serves yet fails the install ("no matches for kind ServiceMonitor"), and an atomic release
then rolls back. On a fresh cluster the CRDs exist only once the release shipping them is
installed, so each release depends on the providers of the API groups its values make it render.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

MONITORING_GROUP = "monitoring.coreos.com"

# API groups whose CustomResourceDefinitions each chart installs (crds/ or templates), at the pinned versions.
CRD_GROUPS: dict[str, tuple[str, ...]] = {
    "kube-prometheus-stack": (MONITORING_GROUP,),
    "gpu-operator": ("nvidia.com", "nfd.k8s-sigs.io"),
    "kueue": ("kueue.x-k8s.io",),
    "jobset": ("jobset.x-k8s.io",),
    "kubeflow-trainer": ("trainer.kubeflow.org",),
    "kuberay-operator": ("ray.io",),
    "dra-driver-nvidia-gpu": ("resource.nvidia.com",),
    "volcano": (
        "batch.volcano.sh",
        "bus.volcano.sh",
        "config.volcano.sh",
        "flow.volcano.sh",
        "nodeinfo.volcano.sh",
        "scheduling.volcano.sh",
        "shard.volcano.sh",
        "topology.volcano.sh",
    ),
}


def _get(values: Mapping[str, Any], *path: str) -> Any:
    node: Any = values
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def crd_needs(chart: str, values: Mapping[str, Any]) -> set[str]:
    """API groups of custom resources a release of `chart` creates or manages with these values, beyond its own CRDs.

    Kueue: templates/prometheus/monitor.yaml renders a ServiceMonitor when `enablePrometheus`, and each
    integration in its configuration manages a kind of another group (jobframework setup.go defers a
    framework whose CRD is missing and polls for it with a backoff up to 2 minutes: install them first).
    GPU Operator: templates/clusterpolicy.yaml passes `dcgmExporter.serviceMonitor` to the
    ClusterPolicy, and the operator (controllers/object_controls.go) then creates a ServiceMonitor.
    Kubeflow Trainer: every TrainJob runs as a JobSet (trainer pkg/runtime/framework/plugins/jobset
    jobset.go: "JobSet CRDs must be installed in advance") unless the chart brings its own (`jobset.install`).
    """
    needs: set[str] = set()
    if chart == "kueue" and _get(values, "enablePrometheus"):
        needs.add(MONITORING_GROUP)
    if chart == "kueue":
        config = yaml.safe_load(str(_get(values, "managerConfig", "controllerManagerConfigYaml") or "")) or {}
        for framework in _get(config, "integrations", "frameworks") or []:
            group = str(framework).split("/")[0]
            if "/" in str(framework) and "." in group:
                needs.add(group)
    if chart == "kubeflow-trainer" and _get(values, "jobset", "install") is False:
        needs.add("jobset.x-k8s.io")
    if chart == "gpu-operator" and (
        _get(values, "dcgmExporter", "serviceMonitor", "enabled") or _get(values, "operator", "metrics", "serviceMonitor", "enabled")
    ):
        needs.add(MONITORING_GROUP)
    return needs - set(CRD_GROUPS.get(chart, ()))


def release_dependencies(releases: Mapping[str, Mapping[str, Any]], existing_groups: set[str]) -> dict[str, list[str]]:
    """Chart -> charts installed in this stack that must be installed first.

    `releases` maps each installed chart to its values; `existing_groups` are API groups whose CRDs
    the cluster already has (an `existing` Prometheus brings monitoring.coreos.com). A needed group
    that neither is an error: the release could never install.
    """
    providers = {group: chart for chart in releases for group in CRD_GROUPS.get(chart, ())}
    out: dict[str, list[str]] = {}
    for chart, values in releases.items():
        deps = []
        for group in sorted(crd_needs(chart, values)):
            if group in providers:
                deps.append(providers[group])
            elif group not in existing_groups:
                raise ValueError(f"release {chart} renders or manages {group} objects but no release of this stack installs their CRDs")
        out[chart] = sorted(set(deps))
    return out


def install_order(dependencies: Mapping[str, list[str]]) -> list[str]:
    """Charts in an order where every release comes after those it depends on (ties by name)."""
    done: list[str] = []
    pending = dict(dependencies)
    while pending:
        ready = sorted(c for c, deps in pending.items() if all(d in done for d in deps))
        if not ready:
            raise ValueError(f"release dependency cycle among {sorted(pending)}")
        done += ready
        for c in ready:
            del pending[c]
    return done
