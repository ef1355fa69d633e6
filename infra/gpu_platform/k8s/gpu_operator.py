"""NVIDIA GPU Operator: Helm values built from the spec, its config ConfigMaps, and the pinned release."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.catalog import Catalog
from gpu_platform.k8s.dcgm import metrics_csv
from gpu_platform.k8s.objects import GPU_OPERATOR_NAMESPACE, Manifest, create, helm_release, metadata, system_namespace
from gpu_platform.k8s.sharing import (
    DEFAULT_CONFIG,
    MIG_CONFIGMAP,
    MIG_DISABLED,
    OPERATOR_MIG_STRATEGY,
    SHARING_CONFIGMAP,
    mig_configmap,
    sharing_configmap,
)
from gpu_platform.pools import DOMAIN, GPU_NODE_TOLERATIONS, gpu_of
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.versions import Image

RELEASE = "gpu-operator"
DCGM_METRICS_CONFIGMAP = "dcgm-exporter-metrics"
DCGM_METRICS_FILE = "dcgm-metrics.csv"
SYSTEM_NODE_LABEL = f"{DOMAIN}/node-role"


def _image(image: Image) -> dict[str, str]:
    """A pinned image as the chart's (repository, image, version) triple."""
    repository, _, name = image.repository.rpartition("/")
    return {"repository": repository, "image": name, "version": image.tag}


def controller_node_selector(spec: PlatformSpec) -> dict[str, str]:
    """Where controllers run: the EKS system node group, or any Linux node of an existing cluster."""
    return {SYSTEM_NODE_LABEL: "system"} if spec.is_eks else {"kubernetes.io/os": "linux"}


def uses_mig_manager(spec: PlatformSpec, catalog: Catalog) -> bool:
    """True when the operator owns MIG layouts: some pool has MIG-capable GPUs and no Ansible inventory builds the nodes.

    On nodes an inventory builds (cluster.inventory) the Ansible role `mig` applies the layout at boot, before the
    kubelet; a mig-manager beside it would re-partition after every reboot by the node's label, evicting the pods
    that just landed. One owner per node setting: the gate's rule `node-settings-one-owner` compares the two.
    """
    if spec.cluster.inventory:
        return False
    return any(gpu_of(p, catalog).supports_mig for p in spec.node_pools)


def dcgm_metrics_configmap() -> Manifest:
    """The DCGM exporter's metric list under the key the operator mounts (`dcgm-metrics.csv`)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(DCGM_METRICS_CONFIGMAP, GPU_OPERATOR_NAMESPACE),
        "data": {DCGM_METRICS_FILE: metrics_csv()},
    }


def gpu_operator_values(spec: PlatformSpec, catalog: Catalog) -> dict[str, Any]:
    """Helm values of the GPU Operator chart for this stack (every key exists in the chart's values)."""
    lock = spec.lock
    managed = spec.gpu_operator.driver == "operator"
    policy = spec.gpu_operator.upgrade_policy
    return {
        "cdi": {"enabled": True},
        "nfd": {"enabled": True},
        "daemonsets": {
            "priorityClassName": "system-node-critical",
            "tolerations": GPU_NODE_TOLERATIONS,
            "updateStrategy": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "1"},
        },
        "operator": {"nodeSelector": controller_node_selector(spec), "cleanupCRD": False, "upgradeCRD": True},
        # The validator's workload check would schedule a CUDA pod on every new node; the plugin check is enough.
        "validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}},
        # Empty: each node's device-plugin config sets its own MIG strategy (gpu_platform.k8s.sharing).
        "mig": {"strategy": OPERATOR_MIG_STRATEGY},
        # EKS NVIDIA AMIs and the on-prem golden images (Ansible) ship driver and toolkit; the operator
        # installs them only where the stack says so, pinned by the lockfile.
        "driver": {
            "enabled": managed,
            **_image(lock.image("driver")),
            "upgradePolicy": {
                "autoUpgrade": policy.auto_upgrade,
                "maxParallelUpgrades": policy.max_parallel_upgrades,
                "maxUnavailable": policy.max_unavailable,
                "waitForCompletion": {"timeoutSeconds": policy.drain_timeout_seconds},
                "gpuPodDeletion": {"force": False, "timeoutSeconds": policy.drain_timeout_seconds, "deleteEmptyDir": True},
                "drain": {"enable": True, "force": False, "timeoutSeconds": policy.drain_timeout_seconds, "deleteEmptyDir": True},
            },
        },
        "toolkit": {"enabled": managed, **_image(lock.image("container-toolkit"))},
        "devicePlugin": {
            "enabled": True,
            **_image(lock.image("device-plugin")),
            "config": {"create": False, "name": SHARING_CONFIGMAP, "default": DEFAULT_CONFIG},
        },
        "gfd": {"enabled": True, **_image(lock.image("device-plugin"))},
        "migManager": {
            "enabled": uses_mig_manager(spec, catalog),
            **_image(lock.image("mig-manager")),
            "config": {"create": False, "name": MIG_CONFIGMAP, "default": MIG_DISABLED},
        },
        "dcgmExporter": {
            "enabled": True,
            **_image(lock.image("dcgm-exporter")),
            # The platform creates its own ServiceMonitor (gpu_platform.k8s.monitoring), visible to the policy gate.
            "serviceMonitor": {"enabled": False},
            "config": {"name": DCGM_METRICS_CONFIGMAP},
        },
        "node-feature-discovery": {
            "worker": {
                "tolerations": [
                    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
                    *GPU_NODE_TOLERATIONS,
                ]
            }
        },
    }


@dataclass(frozen=True)
class GpuOperatorArgs:
    """Inputs of the GpuOperator component."""

    spec: PlatformSpec
    catalog: Catalog
    provider: k8s.Provider
    after: tuple[pulumi.Resource, ...] = ()
    """Releases to install first (gpu_platform.k8s.releases)."""


class GpuOperator(pulumi.ComponentResource):
    """The gpu-operator namespace, the sharing / MIG / DCGM ConfigMaps, and the pinned Helm release."""

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:GpuOperator", name, None, opts)
        spec = args.spec
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        ns = create(f"{name}-namespace", system_namespace(GPU_OPERATOR_NAMESPACE, privileged=True), child)
        in_ns = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[ns])
        configs = [
            create(f"{name}-sharing-config", sharing_configmap(spec), in_ns),
            create(f"{name}-dcgm-metrics", dcgm_metrics_configmap(), in_ns),
        ]
        mig = mig_configmap(spec, args.catalog)
        if mig is not None:
            configs.append(create(f"{name}-mig-config", mig, in_ns))
        self.release = helm_release(
            f"{name}-release",
            RELEASE,
            spec.lock.chart("gpu-operator"),
            GPU_OPERATOR_NAMESPACE,
            gpu_operator_values(spec, args.catalog),
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[ns, *configs, *args.after]),
        )
        self.register_outputs({})
