"""Pure facts derived from a node pool: its GPU, size, labels, taints and the resources it offers.

Every layer (EKS node groups, on-prem node labels, GPU Operator, Kueue flavors, quotas, policies,
tests) reads these from here, so a pool means the same thing everywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date

from gpu_platform.catalog import Catalog, GpuModel
from gpu_platform.spec.models import NodePool

DOMAIN = "gpu-platform.io"
LABEL_POOL = f"{DOMAIN}/pool"
LABEL_WORKLOAD = f"{DOMAIN}/workload-class"
LABEL_TIER = f"{DOMAIN}/capacity-tier"
LABEL_GPU_MODEL = f"{DOMAIN}/gpu-model"
LABEL_SHARING = f"{DOMAIN}/sharing"
LABEL_GPUS_PER_NODE = f"{DOMAIN}/gpus-per-node"
LABEL_INTERRUPTIBLE = f"{DOMAIN}/interruptible"
LABEL_EFA = f"{DOMAIN}/efa"  # "true" on EFA pools: where the EFA device plugin runs
# Spot and on-demand pools of one class, GPU model and sharing layout share this label's value: a
# Spot flavor selects it, so pods admitted on Spot quota may also land on those on-demand nodes.
LABEL_SPOT_FALLBACK = f"{DOMAIN}/spot-fallback"
LABEL_DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
# On-prem nodes: the pool's taints as a JSON list, an annotation the platform owns on each Node. The
# Ansible role k8s_node_taints reads it and merges the taints in (kubernetes.core.k8s_taint); Pulumi
# never writes spec.taints, an atomic list that server-side apply would own whole.
ANNOTATION_TAINTS = f"{DOMAIN}/taints"
RESERVED_LABEL_PREFIXES = (f"{DOMAIN}/", "nvidia.com/", "kubernetes.io/", "k8s.io/", "eks.amazonaws.com/", "k8s.amazonaws.com/")


@dataclass(frozen=True)
class Taint:
    """A node taint (the same triple on EKS node groups, node patches and Kueue flavors)."""

    key: str
    value: str
    effect: str = "NoSchedule"


GPU_TAINT = Taint(GPU_RESOURCE, "present")
INTERRUPTIBLE_TAINT = Taint(LABEL_INTERRUPTIBLE, "true")


def gpu_of(pool: NodePool, catalog: Catalog) -> GpuModel:
    """The pool's GPU model (from its instance types on EKS, declared on-prem)."""
    if pool.instance_types:
        return catalog.instance(pool.instance_types[0]).gpu
    assert pool.gpu_model is not None
    return catalog.gpu(pool.gpu_model)


def gpus_per_node(pool: NodePool, catalog: Catalog) -> int:
    """Physical GPUs on each node of the pool."""
    if pool.instance_types:
        return catalog.instance(pool.instance_types[0]).gpus
    assert pool.gpus_per_node is not None
    return pool.gpus_per_node


def node_counts(pool: NodePool) -> tuple[int, int, int]:
    """(min, desired, max) nodes; an on-prem pool is exactly its listed nodes."""
    if pool.scaling is not None:
        return pool.scaling.min_size, pool.scaling.desired_size, pool.scaling.max_size
    n = len(pool.nodes)
    return n, n, n


def max_gpus(pool: NodePool, catalog: Catalog) -> int:
    """Physical GPUs in the pool at its maximum size."""
    return node_counts(pool)[2] * gpus_per_node(pool, catalog)


def sharing_config_name(pool: NodePool) -> str:
    """Name of the device-plugin config the pool selects (a key of the sharing ConfigMap)."""
    s = pool.sharing
    if s.mode in ("time-slicing", "mps"):
        return f"{s.mode}-{s.replicas}"
    if s.mode == "mig":
        return "mig-mixed"
    return "default"


def resources_per_gpu(pool: NodePool, catalog: Catalog) -> dict[str, int]:
    """Extended resources one physical GPU of this pool offers, by resource name.

    Whole GPUs: nvidia.com/gpu x1. Time-slicing/MPS (renamed): nvidia.com/gpu.shared x replicas.
    MIG (mixed strategy): nvidia.com/mig-<profile> x count per GPU of the pool's layout.
    """
    s = pool.sharing
    if s.mode in ("time-slicing", "mps"):
        assert s.replicas is not None
        return {SHARED_GPU_RESOURCE: s.replicas}
    if s.mode == "mig":
        assert s.mig_config is not None
        layout = gpu_of(pool, catalog).mig_configs[s.mig_config]
        return {f"nvidia.com/mig-{profile}": n for profile, n in sorted(layout.items())}
    return {GPU_RESOURCE: 1}


def resources_for_gpus(pool: NodePool, catalog: Catalog, gpus: int) -> dict[str, int]:
    """The extended resources `gpus` physical GPUs of this pool amount to."""
    return {name: n * gpus for name, n in resources_per_gpu(pool, catalog).items()}


def pool_capacity(pool: NodePool, catalog: Catalog) -> dict[str, int]:
    """Every extended resource the pool offers at its maximum size."""
    return resources_for_gpus(pool, catalog, max_gpus(pool, catalog))


def block_active(pool: NodePool, day: date) -> bool:
    """False for a Capacity Block pool outside its declared dates (start inclusive, end exclusive); True otherwise."""
    r = pool.reservation
    if pool.capacity != "capacity-block" or r is None or r.start is None or r.end is None:
        return True
    return r.start <= day < r.end


def is_interruptible(pool: NodePool) -> bool:
    """Spot capacity can be reclaimed by AWS with two minutes' notice."""
    return pool.capacity == "spot"


def fallback_group(pool: NodePool, catalog: Catalog) -> str | None:
    """`<class>.<gpu>.<layout>` for Spot and on-demand pools (they back each other up), None for fixed capacity.

    Reserved and Capacity Block pools are left out: their nodes back their own flavors' quota.
    """
    if pool.capacity not in ("spot", "on-demand"):
        return None
    layout = pool.sharing.mig_config if pool.sharing.mode == "mig" else sharing_config_name(pool)
    return f"{pool.workload_class}.{gpu_of(pool, catalog).name}.{layout}"


def node_labels(pool: NodePool, catalog: Catalog) -> dict[str, str]:
    """Labels every node of the pool carries (node group labels on EKS, node patches on-prem)."""
    gpu = gpu_of(pool, catalog)
    labels = {
        **pool.labels,
        LABEL_POOL: pool.name,
        LABEL_WORKLOAD: pool.workload_class,
        LABEL_TIER: pool.capacity,
        LABEL_GPU_MODEL: gpu.name,
        LABEL_GPUS_PER_NODE: str(gpus_per_node(pool, catalog)),
        LABEL_SHARING: pool.sharing.mode,
        LABEL_DEVICE_PLUGIN_CONFIG: sharing_config_name(pool),
    }
    if pool.sharing.mode == "mig":
        assert pool.sharing.mig_config is not None
        labels[LABEL_MIG_CONFIG] = pool.sharing.mig_config
    elif gpu.supports_mig:
        # Pin MIG-capable GPUs that are not sliced to "MIG off", so mig-manager never guesses.
        labels[LABEL_MIG_CONFIG] = "all-disabled"
    if is_interruptible(pool):
        labels[LABEL_INTERRUPTIBLE] = "true"
    if pool.efa:
        labels[LABEL_EFA] = "true"
    group = fallback_group(pool, catalog)
    if group is not None:
        labels[LABEL_SPOT_FALLBACK] = group
    return labels


def node_taints(pool: NodePool) -> list[Taint]:
    """Taints every node of the pool carries: GPUs are opt-in, Spot is opt-in again."""
    taints = [GPU_TAINT]
    if is_interruptible(pool):
        taints.append(INTERRUPTIBLE_TAINT)
    return taints


def taints_annotation(pool: NodePool) -> str:
    """The value of ANNOTATION_TAINTS on the pool's nodes: its taints as compact JSON, in declared order."""
    return json.dumps([{"key": t.key, "value": t.value, "effect": t.effect} for t in node_taints(pool)], separators=(",", ":"))
