"""Cluster-autoscaler with the priority expander: Spot first, on-demand as fallback, reserved always on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.aws.iam import autoscaler_policy
from gpu_platform.aws.pod_identity import pod_identity_role
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.objects import helm_release
from gpu_platform.pools import node_groups
from gpu_platform.spec.models import NodePool, PlatformSpec

# Higher is tried first. Reserved and Capacity Block pools are fixed-size (min = max), so their
# low priority only matters if someone widens them: already-paid capacity is not "scaled into".
TIER_PRIORITY = {"spot": 40, "on-demand": 20, "capacity-block": 10, "reserved": 10}
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"


def expander_priorities(cluster_name: str, pools: tuple[NodePool, ...]) -> dict[str, list[str]]:
    """Priority (as text) -> node group name patterns, as the priority expander's ConfigMap wants them."""
    out: dict[int, list[str]] = {}
    for pool in pools:
        # EKS names a managed node group's Auto Scaling group eks-<node group name>-<uuid>.
        out.setdefault(TIER_PRIORITY[pool.capacity], []).append(f"^eks-{cluster_name}-{pool.name}-[0-9a-f]{{8}}-")
    return {str(k): v for k, v in sorted(out.items(), reverse=True)}


def autoscaler_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of the cluster-autoscaler chart for this stack."""
    image = spec.lock.image("cluster-autoscaler")
    return {
        "cloudProvider": "aws",
        "awsRegion": spec.region,
        "autoDiscovery": {"clusterName": spec.cluster.name},
        "image": {"repository": image.repository, "tag": image.tag},
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "expanderPriorities": expander_priorities(spec.cluster.name, tuple(node_groups(spec, load_catalog()))),
        "extraArgs": {
            "expander": "priority",
            "balance-similar-node-groups": True,
            "skip-nodes-with-system-pods": False,
            # GPU nodes take minutes to boot and load drivers; do not flap them.
            "scale-down-unneeded-time": "15m",
            "scale-down-delay-after-add": "15m",
            "max-node-provision-time": "20m",
        },
        "nodeSelector": {"gpu-platform.io/node-role": "system"},
        "resources": {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"memory": "600Mi"}},
    }


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    """Inputs of the ClusterAutoscaler component."""

    spec: PlatformSpec
    cluster_name: pulumi.Input[str]
    provider: k8s.Provider
    tags: dict[str, str]


class ClusterAutoscaler(pulumi.ComponentResource):
    """IAM role bound by EKS Pod Identity, and the pinned cluster-autoscaler Helm release."""

    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:ClusterAutoscaler", name, None, opts)
        spec = args.spec
        pod_identity_role(name, args.cluster_name, NAMESPACE, SERVICE_ACCOUNT, autoscaler_policy(spec.cluster.name), args.tags, self)
        helm_release(
            f"{name}-release",
            "cluster-autoscaler",
            spec.lock.chart("cluster-autoscaler"),
            NAMESPACE,
            autoscaler_values(spec),
            pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        self.register_outputs({})
