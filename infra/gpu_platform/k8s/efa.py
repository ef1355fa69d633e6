"""The AWS EFA Kubernetes device plugin, on EFA pools only (where a stack has any).

Without it an EFA node has EFA interfaces but advertises no `vpc.amazonaws.com/efa`, so a training
pod asking for EFA devices never schedules (and NCCL falls back to TCP in pods that do not ask).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.behaviour import ecr
from gpu_platform.catalog import Catalog
from gpu_platform.k8s.objects import helm_release, tolerations
from gpu_platform.pools import LABEL_EFA, node_groups, node_taints
from gpu_platform.spec.models import PlatformSpec

CHART = "aws-efa-k8s-device-plugin"  # lockfile key of the chart and of its image
RELEASE = "aws-efa-k8s-device-plugin"
# The chart's README installs it into kube-system, next to the other node agents EKS manages.
NAMESPACE = "kube-system"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def device_plugin_values(spec: PlatformSpec, catalog: Catalog) -> dict[str, Any]:
    """Helm values of the device plugin chart: pinned image from the stack's region, EFA pools only, their taints tolerated.

    The chart's DaemonSet (aws/eks-charts stable/aws-efa-k8s-device-plugin, templates/daemonset.yaml)
    takes `nodeSelector` and `tolerations` as given and adds a required node affinity on
    `supportedInstanceLabels`; that list is narrowed to the EFA pools' instance types, so the plugin
    lands on exactly the nodes that have EFA interfaces.
    """
    pools = [p for p in node_groups(spec, catalog) if p.efa]  # a Spot EFA pool's fallback group too
    image = spec.lock.image(CHART)
    # The lockfile names the chart's default (us-west-2); nodes pull from their own region's copy (behaviour.ecr).
    repository = ecr.in_region(image.repository, spec.region) if spec.region else image.repository
    taints = {(t.key, t.value, t.effect): t for pool in pools for t in node_taints(pool)}
    types = sorted({t for pool in pools for t in pool.instance_types})
    return {
        "image": {"repository": repository, "tag": image.tag},
        "nodeSelector": {LABEL_EFA: "true"},
        "tolerations": tolerations(taints[k] for k in sorted(taints)),
        "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": types},
    }


@dataclass(frozen=True)
class EfaDevicePluginArgs:
    """Inputs of the EfaDevicePlugin component."""

    spec: PlatformSpec
    catalog: Catalog
    provider: k8s.Provider


class EfaDevicePlugin(pulumi.ComponentResource):
    """The pinned EFA device plugin release (`efa-device-plugin-release`)."""

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:EfaDevicePlugin", name, None, opts)
        self.release = helm_release(
            f"{name}-release",
            RELEASE,
            args.spec.lock.chart(CHART),
            NAMESPACE,
            device_plugin_values(args.spec, args.catalog),
            pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        self.register_outputs({})
