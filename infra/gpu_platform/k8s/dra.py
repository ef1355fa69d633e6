"""NVIDIA's DRA driver on the stack's DRA pools (`allocation: dra`), and the claim templates tenants use there.

Kubernetes 1.34 made Dynamic Resource Allocation GA (`resource.k8s.io/v1`): a pod asks for devices through a
ResourceClaim (here always from a ResourceClaimTemplate), the scheduler allocates devices that a driver published in
ResourceSlices of the node, and the driver's kubelet plugin prepares them. NVIDIA's driver
(kubernetes-sigs/dra-driver-nvidia-gpu, chart `dra-driver-nvidia-gpu`, pinned in the lockfile) publishes each GPU as a
device of driver `gpu.nvidia.com` and ships the DeviceClasses (templates/deviceclass-gpu.yaml: `gpu.nvidia.com`
selects `device.attributes['gpu.nvidia.com'].type == 'gpu'`).

A node runs either the GPU Operator's device plugin or the DRA driver, never both (the chart's templates/validation.yaml
refuses `resources.gpus.enabled` unless `gpuResourcesEnabledOverride` says the device plugin is off there): DRA
pools carry `nvidia.com/gpu.deploy.device-plugin=false`, which the operator honours per node, and
`gpu-platform.io/gpu-allocation=dra`, which the driver's kubelet plugin selects (within the chart's own affinity,
every NVIDIA node). ComputeDomains (multi-node NVLink, IMEX) are off: no pool here is a GB200 NVL rack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.catalog import Catalog, load_catalog
from gpu_platform.k8s.objects import Manifest, metadata, release_in_namespace
from gpu_platform.pools import DRA_GPU_CLASS, GPU_NODE_TOLERATIONS, LABEL_ALLOCATION, dra_pools, gpus_per_node
from gpu_platform.spec.models import PlatformSpec, Tenant

CHART = "dra-driver-nvidia-gpu"  # lockfile key of the chart and of its image
RELEASE = "dra-driver-nvidia-gpu"
# A namespace of its own: the chart refuses `default` (templates/validation.yaml), and its kubelet plugin is
# privileged (templates/kubeletplugin.yaml securityContext), like the GPU Operator's node agents.
NAMESPACE = "dra-driver-nvidia-gpu"  # docs/install.md installs it here
RESOURCE_API = "resource.k8s.io/v1"
WHOLE_GPU_TEMPLATE = "gpu"
"""The ResourceClaimTemplate every tenant with quota on a DRA pool gets: one whole GPU (`resourceClaimTemplateName: gpu`)."""
GPUS_TEMPLATE_SIZES = (2, 4, 8)
"""Templates `gpu-2`, `gpu-4`, `gpu-8`: that many whole GPUs in one claim, all on the pod's node (where a node has them)."""


def driver_root(spec: PlatformSpec) -> str:
    """Where the driver's files are on the node (values.yaml `nvidiaDriverRoot`, docs/install.md).

    `/run/nvidia/driver` when the GPU Operator installs the driver (its driver container's root), `/` where the
    image or Ansible did.
    """
    return "/run/nvidia/driver" if spec.gpu_operator.driver == "operator" else "/"


def dra_driver_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of the DRA driver chart: GPUs on, ComputeDomains off, the kubelet plugin on DRA pools only.

    The chart's default node affinity stays (a node with an NVIDIA PCI device, which the GPU Operator's node feature
    discovery labels, or `nvidia.com/gpu.present`); the nodeSelector narrows it to the DRA pools' nodes, so the
    plugin lands on exactly those. Tolerations: the platform's GPU taints (pools.GPU_NODE_TOLERATIONS).
    """
    image = spec.lock.image(CHART)
    return {
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "nvidiaDriverRoot": driver_root(spec),
        "image": {"repository": image.repository, "tag": image.tag},
        "kubeletPlugin": {"nodeSelector": {LABEL_ALLOCATION: "dra"}, "tolerations": GPU_NODE_TOLERATIONS},
    }


def claim_template(name: str, namespace: str, count: int) -> Manifest:
    """A ResourceClaimTemplate of `count` whole GPUs of class gpu.nvidia.com (ExactCount: the form Kueue counts)."""
    request = {"name": "gpus", "exactly": {"deviceClassName": DRA_GPU_CLASS, "allocationMode": "ExactCount", "count": count}}
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata(name, namespace),
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def tenant_templates(spec: PlatformSpec, tenant: Tenant, catalog: Catalog | None = None) -> list[Manifest]:
    """The tenant's claim templates where it has quota on a DRA pool: `gpu` (one GPU) and `gpu-<n>` for larger claims.

    Only sizes one node of the tenant's DRA pools holds: every device of a claim is allocated on the pod's node, so a
    larger claim would be admitted by Kueue (quota allows it) and never scheduled, holding the quota until evicted.
    """
    pools = [p for p in dra_pools(spec) if any(q.pool == p.name for q in tenant.quotas)]
    if not pools:
        return []
    most = max(gpus_per_node(p, catalog or load_catalog()) for p in pools)
    out = [claim_template(WHOLE_GPU_TEMPLATE, tenant.ns, 1)]
    out += [claim_template(f"{WHOLE_GPU_TEMPLATE}-{n}", tenant.ns, n) for n in GPUS_TEMPLATE_SIZES if n <= most]
    return out


@dataclass(frozen=True)
class DraDriverArgs:
    """Inputs of the DraDriver component."""

    spec: PlatformSpec
    provider: k8s.Provider
    after: tuple[pulumi.Resource, ...] = ()


class DraDriver(pulumi.ComponentResource):
    """The DRA driver's namespace and pinned release (`dra-driver-namespace`, `dra-driver-release`)."""

    def __init__(self, name: str, args: DraDriverArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:DraDriver", name, None, opts)
        spec = args.spec
        self.release = release_in_namespace(
            self, name, RELEASE, spec.lock.chart(CHART), NAMESPACE, dra_driver_values(spec), args.provider, args.after, privileged=True
        )
        self.register_outputs({})
