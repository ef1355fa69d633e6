"""Pure facts derived from a node pool: its GPU, size, labels, taints and the resources it offers.

Every layer (EKS node groups, on-prem node labels, GPU Operator, Kueue flavors, quotas, policies,
tests) reads these from here, so a pool means the same thing everywhere.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date

from gpu_platform.catalog import Catalog, GpuModel
from gpu_platform.spec.models import NodePool, PlatformSpec, Scaling

DOMAIN = "gpu-platform.io"
LABEL_POOL = f"{DOMAIN}/pool"
LABEL_WORKLOAD = f"{DOMAIN}/workload-class"
LABEL_TIER = f"{DOMAIN}/capacity-tier"
LABEL_GPU_MODEL = f"{DOMAIN}/gpu-model"
LABEL_SHARING = f"{DOMAIN}/sharing"
LABEL_GPUS_PER_NODE = f"{DOMAIN}/gpus-per-node"
LABEL_INTERRUPTIBLE = f"{DOMAIN}/interruptible"
LABEL_EFA = f"{DOMAIN}/efa"  # "true" on EFA pools: where the EFA device plugin runs
# A Spot pool and its own on-demand fallback group carry the Spot pool's name here: the Spot flavor
# selects it, so pods admitted on Spot quota may land on the fallback, and nothing else selects it.
LABEL_SPOT_FALLBACK = f"{DOMAIN}/spot-fallback"
FALLBACK_SUFFIX = "-fallback"
LABEL_DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
GPU_RESOURCE = "nvidia.com/gpu"
# DRA pools (`allocation: dra`, docs/dra.md): NVIDIA's DRA driver (chart dra-driver-nvidia-gpu) publishes the GPUs
# as devices of its driver; the chart's DeviceClass `gpu.nvidia.com` selects whole GPUs (templates/deviceclass-gpu.yaml).
LABEL_ALLOCATION = f"{DOMAIN}/gpu-allocation"  # "dra" on DRA pools: the DRA driver's kubelet plugin selects it
LABEL_DEPLOY_DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"  # "false": the GPU Operator keeps its plugin off the node
DRA_GPU_CLASS = "gpu.nvidia.com"
DRA_DEVICE_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")
DRA_GPU_RESOURCE = "dra.gpu-platform.io/gpu"
"""The name Kueue counts claimed whole GPUs under (Configuration resources.deviceClassMappings): quota and flavors."""
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
# On-prem nodes: the pool's taints as a JSON list, an annotation the platform owns on each Node. The
# Ansible role k8s_node_taints reads it and merges the taints in (kubernetes.core.k8s_taint); Pulumi
# never writes spec.taints, an atomic list that server-side apply would own whole.
ANNOTATION_TAINTS = f"{DOMAIN}/taints"
# On-prem nodes: the Ansible inventory that builds them (stack key cluster.inventory), for the gate and for people.
ANNOTATION_INVENTORY = f"{DOMAIN}/inventory"
RESERVED_LABEL_PREFIXES = (f"{DOMAIN}/", "nvidia.com/", "kubernetes.io/", "k8s.io/", "eks.amazonaws.com/", "k8s.amazonaws.com/")


@dataclass(frozen=True)
class Taint:
    """A node taint (the same triple on EKS node groups, node patches and Kueue flavors)."""

    key: str
    value: str
    effect: str = "NoSchedule"


GPU_TAINT = Taint(GPU_RESOURCE, "present")
INTERRUPTIBLE_TAINT = Taint(LABEL_INTERRUPTIBLE, "true")


def fallback_taint(spot_pool: str) -> Taint:
    """The taint of a Spot pool's fallback group: only pods admitted to that Spot flavor tolerate it."""
    return Taint(LABEL_SPOT_FALLBACK, spot_pool)


# A bare-metal node whose GPU failed: the Ansible role gpu_health_check cordons it and taints it NoExecute with
# this key (value: the reason, such as xid-79), so tenants' GPU pods leave at once; gpu_node_repair.yml removes it.
UNHEALTHY_TAINT_KEY = f"{DOMAIN}/gpu-unhealthy"

# GPU nodes carry the GPU taint, on Spot the interruptible taint, and on a Spot pool's fallback group that
# group's own taint (node_taints below): every node agent (GPU Operator daemonsets, the EKS node monitoring
# agent's DCGM server) must tolerate all three, whatever their values, and stay on a fenced node (the
# unhealthy taint), where the exporter keeps reporting and the device plugin comes back after the repair.
GPU_NODE_TOLERATIONS: list[dict[str, str]] = [
    {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
    {"key": LABEL_INTERRUPTIBLE, "operator": "Exists", "effect": "NoSchedule"},
    {"key": LABEL_SPOT_FALLBACK, "operator": "Exists", "effect": "NoSchedule"},
    {"key": UNHEALTHY_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"},
]


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
    MIG (mixed strategy): nvidia.com/mig-<profile> x count per GPU of the pool's layout. A DRA pool offers no
    extended resource: its GPUs are claimed devices, which Kueue counts as DRA_GPU_RESOURCE x1.
    """
    s = pool.sharing
    if is_dra(pool):
        return {DRA_GPU_RESOURCE: 1}
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


def is_dra(pool: NodePool) -> bool:
    """The pool's GPUs are allocated through DRA (ResourceClaims), not the device plugin."""
    return pool.allocation == "dra"


def dra_pools(spec: PlatformSpec) -> list[NodePool]:
    """The stack's DRA pools, in declared order."""
    return [p for p in spec.node_pools if is_dra(p)]


def block_active(pool: NodePool, day: date) -> bool:
    """False for a Capacity Block pool outside its declared dates (start inclusive, end exclusive); True otherwise."""
    r = pool.reservation
    if pool.capacity != "capacity-block" or r is None or r.start is None or r.end is None:
        return True
    return r.start <= day < r.end


def is_interruptible(pool: NodePool) -> bool:
    """Spot capacity can be reclaimed by AWS with two minutes' notice."""
    return pool.capacity == "spot"


# Instance families AWS gives network topology labels of three layers (EC2 User Guide, "Amazon EC2 instance topology",
# prerequisites; EKS user guide "Place distributed AI/ML workloads with network topology labels").
NETWORK_TOPOLOGY_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "g6e", "trn1", "trn1n", "trn2")
NETWORK_LEVELS = ("topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2", "topology.k8s.aws/network-node-layer-3")
HOSTNAME_LEVEL = "kubernetes.io/hostname"


def always_present(pool: NodePool) -> bool:
    """The pool's nodes exist whether or not work is pending: on-prem pools, and EKS reserved pools (min = max > 0)."""
    if pool.scaling is None:
        return bool(pool.nodes)
    return pool.capacity == "reserved" and pool.scaling.min_size == pool.scaling.max_size > 0


def whole_nodes(pool: NodePool) -> bool:
    """Kueue places the pool's pods per node (Topology-Aware Scheduling): `wholeNodes`.

    By default training pools of whole GPUs whose nodes always exist (TAS finds no node in a group scaled to zero).
    """
    if pool.whole_nodes is not None:
        return pool.whole_nodes
    return pool.workload_class == "training" and pool.sharing.mode == "none" and not is_dra(pool) and always_present(pool)


def topology_levels(pool: NodePool) -> tuple[str, ...]:
    """The Kueue Topology levels of a whole-node pool, top to bottom (hostname last, as the Topology CRD requires)."""
    return (*NETWORK_LEVELS, HOSTNAME_LEVEL) if pool.network_topology else (HOSTNAME_LEVEL,)


def fallback_of(pool: NodePool) -> str | None:
    """The Spot pool a generated fallback group stands in for; None for every pool a stack declares."""
    return pool._fallback_for


def has_fallback(pool: NodePool) -> bool:
    """A Spot pool whose pods may fall back to its own on-demand group (`fallback`, on by default)."""
    return pool.capacity == "spot" and pool.fallback is not False


def fallback_label(pool: NodePool) -> str | None:
    """LABEL_SPOT_FALLBACK's value on the pool's nodes: a Spot pool's own name, on it and on its fallback group."""
    if has_fallback(pool):
        return pool.name
    return fallback_of(pool)


def spot_quota_gpus(spec: PlatformSpec, pool: NodePool, catalog: Catalog) -> int:
    """GPUs the pool's Spot flavor can admit at once: every tenant's nominal quota on it (Kueue on), else the pool's size.

    Borrowing moves quota between tenants of a cohort but never beyond the sum of nominal quotas on a
    flavor (kueue pkg/cache/scheduler resource_node.go: a cohort's subtree quota is its members' sum),
    so that sum is what pods admitted on the flavor can ask of the nodes.
    """
    if not spec.queueing.kueue.enabled:
        return max_gpus(pool, catalog)
    return sum(q.gpus for t in spec.tenants for q in t.quotas if q.pool == pool.name)


def fallback_pool(spec: PlatformSpec, pool: NodePool, catalog: Catalog) -> NodePool | None:
    """The on-demand node group a Spot pool's pods fall back to, as large as the Spot flavor's quota (EKS only).

    Same instance types, class, GPU model and sharing as the Spot pool, on-demand, scaled from zero by the
    cluster-autoscaler when the Spot group cannot launch; labelled and tainted for the Spot flavor alone,
    so a tenant's fallback never takes nodes Kueue admitted to another tenant's on-demand flavor.
    """
    if not spec.is_eks or not has_fallback(pool):
        return None
    gpus = min(spot_quota_gpus(spec, pool, catalog), max_gpus(pool, catalog))
    if gpus <= 0:
        return None
    nodes = math.ceil(gpus / gpus_per_node(pool, catalog))
    out = pool.model_copy(
        update={"name": pool.name + FALLBACK_SUFFIX, "capacity": "on-demand", "scaling": Scaling(min=0, desired=0, max=nodes), "fallback": None}
    )
    out._fallback_for = pool.name
    return out


def node_groups(spec: PlatformSpec, catalog: Catalog) -> list[NodePool]:
    """Every node group the stack builds: its pools, each Spot pool followed by its fallback group."""
    out: list[NodePool] = []
    for pool in spec.node_pools:
        out.append(pool)
        fb = fallback_pool(spec, pool, catalog)
        if fb is not None:
            out.append(fb)
    return out


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
    if is_dra(pool):
        labels[LABEL_ALLOCATION] = "dra"
        labels[LABEL_DEPLOY_DEVICE_PLUGIN] = "false"
    if is_interruptible(pool):
        labels[LABEL_INTERRUPTIBLE] = "true"
    if pool.efa:
        labels[LABEL_EFA] = "true"
    group = fallback_label(pool)
    if group is not None:
        labels[LABEL_SPOT_FALLBACK] = group
    return labels


def node_taints(pool: NodePool) -> list[Taint]:
    """Taints every node of the pool carries: GPUs are opt-in, Spot is opt-in again, a fallback group is its Spot flavor's alone."""
    taints = [GPU_TAINT]
    if is_interruptible(pool):
        taints.append(INTERRUPTIBLE_TAINT)
    spot = fallback_of(pool)
    if spot is not None:
        taints.append(fallback_taint(spot))
    return taints


def taints_annotation(pool: NodePool) -> str:
    """The value of ANNOTATION_TAINTS on the pool's nodes: its taints as compact JSON, in declared order."""
    return json.dumps([{"key": t.key, "value": t.value, "effect": t.effect} for t in node_taints(pool)], separators=(",", ":"))
