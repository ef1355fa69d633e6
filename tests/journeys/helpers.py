"""What the journeys share: the rendered objects of a stack, one chart's `helm template` output, and `stage`."""

from __future__ import annotations

from functools import cache
from typing import Any

from gpu_platform.behaviour.networkpolicy import Service
from gpu_platform.k8s.tenant_network import cluster_services
from gpu_platform.spec.models import PlatformSpec
from tests.conftest import plan_for, spec_for
from tests.k8s.charts import releases, template
from tests.k8s.helpers import objects


def stage(name: str, ok: bool, why: str) -> None:
    """Fail the journey at this stage, naming it (house style 14)."""
    assert ok, f"stage '{name}': {why}"


def manifests(stack: str) -> list[dict[str, Any]]:
    """Every Kubernetes object the stack applies (what `gpu-platform render` writes)."""
    return objects(stack)


@cache
def chart_objects(stack: str, chart: str) -> tuple[dict[str, Any], ...]:
    """`helm template` of the stack's release of `chart` with the real upstream chart and the plan's values.

    Rendered as pulumi-kubernetes' helm.v3.Release installs it (Helm's pkg/action/install.go), for the
    lockfile's Kubernetes version, with the monitoring.coreos.com/v1 API served (kube-prometheus-stack brings it).
    """
    spec = spec_for(stack)
    release = next((r for r in releases(plan_for(stack)) if r.chart == chart), None)
    assert release is not None, f"{stack} installs no {chart} release"
    return template(release, spec.lock.kubernetes.version, ("monitoring.coreos.com/v1",)).objects


def kube_dns_service(spec: PlatformSpec) -> Service:
    """kube-system/kube-dns as EKS's coredns add-on runs it (gpu_platform.k8s.tenant_network `cluster_services`)."""
    return dict(cluster_services(spec))["DNS (kube-dns)"]


def kubernetes_service(spec: PlatformSpec) -> Service:
    """default/kubernetes on EKS: no selector, port 443 -> the private endpoint ENIs (`cluster_services`)."""
    return dict(cluster_services(spec))["Kubernetes API (kubernetes.default)"]
