"""NVIDIA GPU Operator: Helm values built from the spec, its config ConfigMaps, and the pinned release."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.catalog import Catalog
from gpu_platform.k8s.objects import GPU_OPERATOR_NAMESPACE, Manifest, create, helm_release, metadata, system_namespace
from gpu_platform.k8s.sharing import (
    DEFAULT_CONFIG,
    MIG_CONFIGMAP,
    MIG_DISABLED,
    SHARING_CONFIGMAP,
    mig_configmap,
    mig_strategy,
    sharing_configmap,
)
from gpu_platform.pools import DOMAIN, GPU_RESOURCE, LABEL_INTERRUPTIBLE, gpu_of
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.versions import Image

RELEASE = "gpu-operator"
DCGM_METRICS_CONFIGMAP = "dcgm-exporter-metrics"
DCGM_METRICS_FILE = "dcgm-metrics.csv"
SYSTEM_NODE_LABEL = f"{DOMAIN}/node-role"

# (field, Prometheus type, help). The exporter's default list lacks ECC, retired pages, throttling
# and NVLink errors, which the platform's alerts need, so the operator gets this list instead.
DCGM_METRICS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors."),
    ("DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us)."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event (throttle) reasons, a bitmask."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active (works on MIG)."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
)

# GPU nodes carry the GPU taint and, on Spot, the interruptible taint: node agents must tolerate both.
GPU_NODE_TOLERATIONS = [
    {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
    {"key": LABEL_INTERRUPTIBLE, "operator": "Exists", "effect": "NoSchedule"},
]


def _image(image: Image) -> dict[str, str]:
    """A pinned image as the chart's (repository, image, version) triple."""
    repository, _, name = image.repository.rpartition("/")
    return {"repository": repository, "image": name, "version": image.tag}


def controller_node_selector(spec: PlatformSpec) -> dict[str, str]:
    """Where controllers run: the EKS system node group, or any Linux node of an existing cluster."""
    return {SYSTEM_NODE_LABEL: "system"} if spec.is_eks else {"kubernetes.io/os": "linux"}


def uses_mig_manager(spec: PlatformSpec, catalog: Catalog) -> bool:
    """True when any pool has MIG-capable GPUs (sliced, or pinned to all-disabled)."""
    return any(gpu_of(p, catalog).supports_mig for p in spec.node_pools)


def dcgm_metrics_configmap() -> Manifest:
    """The DCGM exporter's metric list (`dcgm-metrics.csv`)."""
    csv = "\n".join(f"{field}, {kind}, {text}" for field, kind, text in DCGM_METRICS) + "\n"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(DCGM_METRICS_CONFIGMAP, GPU_OPERATOR_NAMESPACE),
        "data": {DCGM_METRICS_FILE: csv},
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
        "mig": {"strategy": mig_strategy(spec)},
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
