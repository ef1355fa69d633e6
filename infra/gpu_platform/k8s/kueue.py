"""Kueue: a ResourceFlavor per pool, a ClusterQueue per tenant, LocalQueues and WorkloadPriorityClasses.

API `kueue.x-k8s.io/v1beta2` (v0.19: `cohortName`, `fairSharing.weight`). Each tenant ClusterQueue has
a cpu/memory group on the label-less `default-cpu` flavor and one group per set of GPU resources its
pools share; a resource may sit in only one group, so pools offering overlapping resources (two MIG
layouts) share a group and list every covered resource (0 where the pool offers none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpu_platform.catalog import Catalog
from gpu_platform.efa import KUEUE_EXCLUDED_PREFIXES, efa_pools
from gpu_platform.k8s import job_apis, multikueue
from gpu_platform.k8s.gpu_operator import controller_node_selector
from gpu_platform.k8s.objects import KUEUE_NAMESPACE, LABEL_TENANT, Manifest, create, metadata, release_in_namespace, tolerations
from gpu_platform.k8s.tenants import PRIORITY_TEXT, PRIORITY_VALUES
from gpu_platform.pools import (
    DRA_GPU_CLASS,
    DRA_GPU_RESOURCE,
    GPU_RESOURCE,
    LABEL_GPU_MODEL,
    LABEL_POOL,
    LABEL_SPOT_FALLBACK,
    LABEL_TIER,
    LABEL_WORKLOAD,
    block_active,
    dra_pools,
    fallback_taint,
    gpu_of,
    has_fallback,
    node_taints,
    resources_for_gpus,
    resources_per_gpu,
    topology_levels,
    whole_nodes,
)
from gpu_platform.provenance import pool_key, source, tenant_key
from gpu_platform.spec.models import NodePool, PlatformSpec, Tenant

API = "kueue.x-k8s.io/v1beta2"
RELEASE = "kueue"
CPU_FLAVOR = "default-cpu"
LOCAL_QUEUE = "default"
# Flavors are tried in this order: capacity already paid for, then Spot, then on-demand as fallback
# (the same order the cluster-autoscaler's priority expander scales in).
TIER_ORDER = {"reserved": 0, "capacity-block": 1, "spot": 2, "on-demand": 3}


def flavor_name(pool: NodePool) -> str:
    """The ResourceFlavor of a pool is named after the pool."""
    return pool.name


def flavor_node_labels(pool: NodePool, catalog: Catalog) -> dict[str, str]:
    """The node labels Kueue adds to an admitted pod's nodeSelector (podset.go Merge).

    A pool's own labels pin its pods to it, except on Spot with a fallback: that flavor selects
    `spot-fallback: <pool>`, which the Spot pool and its own on-demand fallback group carry
    (gpu_platform.pools.fallback_pool). Kueue re-admits an evicted workload from the first flavor again
    (flavorassigner.go findFlavorForPodSets restarts its scan; LastAssignment only tracks pending
    workloads), so no Kueue setting moves a workload stuck on Spot; the cluster-autoscaler does: its
    priority expander scales Spot first and, when the Spot group reports a failed launch (aws
    auto_scaling_groups.go isNodeGroupAvailable -> placeholder instances with an OutOfResources
    error), backs it off and scales the fallback group for the same pending pods.
    """
    if has_fallback(pool):
        # Model and class stay, so a pod selecting another GPU model or class is still refused by this
        # flavor (flavorassigner.go flavorSelector compares the flavor's own keys only).
        return {LABEL_SPOT_FALLBACK: pool.name, LABEL_GPU_MODEL: gpu_of(pool, catalog).name, LABEL_WORKLOAD: pool.workload_class}
    return {LABEL_POOL: pool.name, LABEL_TIER: pool.capacity, LABEL_GPU_MODEL: gpu_of(pool, catalog).name}


def resource_flavor(pool: NodePool, catalog: Catalog) -> Manifest:
    """A flavor selecting the pool's nodes (Spot: and its fallback group), the pool's taints, and the tolerations Kueue adds on admission.

    The object label `gpu-platform.io/pool` names the pool whose capacity backs the flavor's quota. A Spot
    flavor's tolerations also cover its fallback group's own taint, which no other flavor tolerates.
    """
    taints = node_taints(pool)
    toleration_list = tolerations(taints)
    if has_fallback(pool):
        toleration_list += tolerations([fallback_taint(pool.name)])
    spec: dict[str, Any] = {
        "nodeLabels": flavor_node_labels(pool, catalog),
        "nodeTaints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints],
        "tolerations": toleration_list,
    }
    if whole_nodes(pool):
        spec["topologyName"] = topology_name(pool)
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": metadata(flavor_name(pool), labels={LABEL_POOL: pool.name}), "spec": spec}


WHOLE_NODES_QUEUE = "whole-nodes"
FLAVOR_IMMUTABLE = ("spec.topologyName", "spec.nodeLabels", "spec.tolerations")
HOSTNAME_TOPOLOGY = "hostname"
NETWORK_TOPOLOGY = "ec2-network"


def topology_name(pool: NodePool) -> str:
    """The Kueue Topology a whole-node pool's flavor names: hostname only, or the EC2 network layers above it."""
    return NETWORK_TOPOLOGY if pool.network_topology else HOSTNAME_TOPOLOGY


def topologies(spec: PlatformSpec) -> list[Manifest]:
    """One Topology per level list the stack's whole-node pools use.

    apis/kueue/v1beta2 topology_types.go: levels top to bottom, `kubernetes.io/hostname` only last, immutable.
    """
    out: dict[str, tuple[str, ...]] = {}
    for pool in spec.node_pools:
        if whole_nodes(pool):
            out[topology_name(pool)] = topology_levels(pool)
    return [
        {"apiVersion": API, "kind": "Topology", "metadata": metadata(name), "spec": {"levels": [{"nodeLabel": level} for level in levels]}}
        for name, levels in sorted(out.items())
    ]


def cpu_flavor() -> Manifest:
    """The label-less flavor that carries cpu and memory quota."""
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": metadata(CPU_FLAVOR), "spec": {}}


def gpu_groups(spec: PlatformSpec, catalog: Catalog, tenant: Tenant) -> list[tuple[list[str], list[NodePool]]]:
    """(covered resources, pools in flavor order) per resource group of the default queue.

    Pools sharing a resource share a group. Whole-node pools are left out: they are the `whole-nodes` queue's.
    """
    groups: list[tuple[set[str], list[NodePool]]] = []
    for q in tenant.quotas:
        pool = spec.pool(q.pool)
        if whole_nodes(pool):
            continue
        names = set(resources_per_gpu(pool, catalog))
        touching = [g for g in groups if g[0] & names]
        merged: tuple[set[str], list[NodePool]] = (names, [pool])
        for g in touching:
            groups.remove(g)
            merged = (merged[0] | g[0], g[1] + merged[1])
        groups.append(merged)
    return [(sorted(res), sorted(pools, key=lambda p: (TIER_ORDER[p.capacity], p.name))) for res, pools in groups]


def preemption(spec: PlatformSpec) -> dict[str, Any]:
    """A ClusterQueue's preemption, holding only what Kueue enforces under the stack's preemption mode.

    With fair sharing Kueue runs fairPreemptions (pkg/scheduler/preemption/preemption.go getTargets),
    which reads withinClusterQueue and reclaimWithinCohort only; borrowWithinCohort is left out there
    (the spec refuses it). Classical preemption gets borrowWithinCohort, by default LowerPriority below
    production training.
    """
    p = spec.queueing.kueue.preemption
    out: dict[str, Any] = {"reclaimWithinCohort": p.reclaim_within_cohort, "withinClusterQueue": p.within_cluster_queue}
    if spec.queueing.kueue.fair_sharing:
        return out
    policy = p.borrow_within_cohort or "LowerPriority"
    out["borrowWithinCohort"] = {"policy": policy}
    if policy != "Never":
        # Borrowing may preempt only work strictly below production training.
        out["borrowWithinCohort"]["maxPriorityThreshold"] = PRIORITY_VALUES["inference"]
    return out


def cluster_queue(spec: PlatformSpec, catalog: Catalog, tenant: Tenant, today: date | None = None) -> Manifest:
    """The tenant's ClusterQueue: nominal quota per flavor, borrowing/lending limits, preemption, fair share.

    A Capacity Block flavor carries quota only inside the block's dates (`today` is the day `pulumi up`
    runs): outside them it has none, so Kueue's flavor assigner (flavorassigner.go fitsResourceQuota)
    moves on to the next flavor instead of pinning work to a node group that cannot launch.
    """
    day = today or date.today()
    quotas = {q.pool: q for q in tenant.quotas}
    # A MultiKueue manager admits against every worker's share (times its multiplier): each worker's ClusterQueue has
    # the tenant's resources.
    clusters = len(spec.workers) * spec.queueing.kueue.multi_kueue_quota_multiplier if spec.workers else 1
    cpu = {"name": "cpu", "nominalQuota": tenant.resources.cpu * clusters}
    mem = {"name": "memory", "nominalQuota": f"{tenant.resources.memory_gib * clusters}Gi"}
    resource_groups: list[dict[str, Any]] = [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": CPU_FLAVOR, "resources": [cpu, mem]}]}]
    for covered, pools in gpu_groups(spec, catalog, tenant):
        flavors = []
        for pool in pools:
            q = quotas[pool.name]
            nominal = resources_for_gpus(pool, catalog, q.gpus if block_active(pool, day) else 0)
            resources = []
            for name in covered:
                entry: dict[str, Any] = {"name": name, "nominalQuota": nominal.get(name, 0)}
                if q.borrowing_limit is not None:
                    entry["borrowingLimit"] = resources_for_gpus(pool, catalog, q.borrowing_limit).get(name, 0)
                if q.lending_limit is not None:
                    entry["lendingLimit"] = resources_for_gpus(pool, catalog, q.lending_limit).get(name, 0)
                resources.append(entry)
            flavors.append({"name": flavor_name(pool), "resources": resources})
        resource_groups.append({"coveredResources": covered, "flavors": flavors})
    return _queue(spec, tenant, tenant.name, resource_groups)


def _queue(spec: PlatformSpec, tenant: Tenant, name: str, resource_groups: list[dict[str, Any]]) -> Manifest:
    body: dict[str, Any] = {
        "cohortName": tenant.cohort,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant.ns}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": resource_groups,
        "preemption": preemption(spec),
        # Use the tenant's own quota in another flavor before borrowing or preempting; if neither is
        # avoidable, borrow idle capacity rather than evict someone.
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor", "preference": "BorrowingOverPreemption"},
        "fairSharing": {"weight": tenant.fair_share_weight},
    }
    meta = metadata(name, labels={LABEL_TENANT: tenant.name})
    if spec.workers:  # a MultiKueue manager: every workload is admitted here, then dispatched to a worker
        body["admissionChecksStrategy"] = multikueue.admission_checks_strategy()
        multiplier = spec.queueing.kueue.multi_kueue_quota_multiplier
        if multiplier != 1:  # declared on the queue, where the gate's multikueue-quota-sums reads it
            meta["annotations"] = {multikueue.QUOTA_MULTIPLIER_ANNOTATION: str(multiplier)}
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": meta, "spec": body}


def whole_nodes_queue_name(tenant: Tenant) -> str:
    """The ClusterQueue of a tenant's quota on whole-node pools."""
    return f"{tenant.name}-{WHOLE_NODES_QUEUE}"


def whole_nodes_pools(spec: PlatformSpec, tenant: Tenant) -> list[NodePool]:
    """The whole-node pools the tenant has quota on, in flavor order."""
    pools = [spec.pool(q.pool) for q in tenant.quotas if whole_nodes(spec.pool(q.pool))]
    return sorted(pools, key=lambda p: (TIER_ORDER[p.capacity], p.name))


def node_share(pool: NodePool, catalog: Catalog, tenant: Tenant) -> tuple[float, float]:
    """(cpu cores, memory GiB) that come with one GPU of the pool.

    The instance's share on EKS; on-prem, where the node's size is not declared, the tenant's own ceilings (the
    namespace ResourceQuota bounds them anyway).
    """
    if pool.instance_types:
        instance = catalog.instance(pool.instance_types[0])
        return instance.vcpu / instance.gpus, instance.memory_gib / instance.gpus
    return float(tenant.resources.cpu), float(tenant.resources.memory_gib)


def whole_nodes_queue(spec: PlatformSpec, catalog: Catalog, tenant: Tenant) -> Manifest | None:
    """The tenant's `<tenant>-whole-nodes` ClusterQueue: its quota on whole-node pools, every flavor topology-aware.

    Kueue places pod sets on TAS flavors only in a ClusterQueue whose every flavor is one (kueue
    pkg/scheduler/flavorassigner/tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS: in a mixed queue a pod set
    without a topology annotation is refused by the TAS flavors, one with it by every other flavor covering a resource
    it asks, `default-cpu` included). So the queue covers cpu, memory and GPUs in one resource group on the TAS
    flavors; with no annotation each pod set is placed as `unconstrained` at the hostname level (isTASImplied,
    LeastFreeCapacity: fullest node that fits first, so small pods leave whole nodes free). Same cohort, preemption
    and fair share as the tenant's default queue; cpu and memory quota come with the GPUs (node_share).
    """
    pools = whole_nodes_pools(spec, tenant)
    if not spec.queueing.kueue.enabled or not pools:
        return None
    quotas = {q.pool: q for q in tenant.quotas}
    flavors = []
    for pool in pools:
        q = quotas[pool.name]
        cpu, mem = node_share(pool, catalog, tenant)
        gpus = resources_for_gpus(pool, catalog, q.gpus).get(GPU_RESOURCE, 0)
        gpu: dict[str, Any] = {"name": GPU_RESOURCE, "nominalQuota": gpus}
        if q.borrowing_limit is not None:
            gpu["borrowingLimit"] = q.borrowing_limit
        if q.lending_limit is not None:
            gpu["lendingLimit"] = q.lending_limit
        share = q.gpus if pool.instance_types else 1
        cpu_entry: dict[str, Any] = {"name": "cpu", "nominalQuota": math.floor(cpu * share)}
        mem_entry: dict[str, Any] = {"name": "memory", "nominalQuota": f"{math.floor(mem * share)}Gi"}
        if pool.instance_types:
            # The cpu and memory that come with borrowed or lent GPUs move with them, no more.
            for key, limit in (("borrowingLimit", q.borrowing_limit), ("lendingLimit", q.lending_limit)):
                if limit is not None:
                    cpu_entry[key] = math.floor(cpu * limit)
                    mem_entry[key] = f"{math.floor(mem * limit)}Gi"
        resources = [cpu_entry, mem_entry, gpu]
        flavors.append({"name": flavor_name(pool), "resources": resources})
    groups = [{"coveredResources": ["cpu", "memory", GPU_RESOURCE], "flavors": flavors}]
    return _queue(spec, tenant, whole_nodes_queue_name(tenant), groups)


def local_queue(tenant: Tenant) -> Manifest:
    """The LocalQueue `default` in the tenant namespace, pointing at the tenant's ClusterQueue."""
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": metadata(LOCAL_QUEUE, tenant.ns, {LABEL_TENANT: tenant.name}),
        "spec": {"clusterQueue": tenant.name},
    }


def whole_nodes_local_queue(tenant: Tenant) -> Manifest:
    """The LocalQueue `whole-nodes` in the tenant namespace (jobs name it: `kueue.x-k8s.io/queue-name: whole-nodes`)."""
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": metadata(WHOLE_NODES_QUEUE, tenant.ns, {LABEL_TENANT: tenant.name}),
        "spec": {"clusterQueue": whole_nodes_queue_name(tenant)},
    }


def workload_priority_classes() -> list[Manifest]:
    """Kueue WorkloadPriorityClasses with the same order and values as the pod PriorityClasses."""
    return [
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": metadata(tier), "value": value, "description": PRIORITY_TEXT[tier]}
        for tier, value in PRIORITY_VALUES.items()
    ]


# The built-in kinds a tenant can run GPUs with, Deployments, StatefulSets and plain pods included: a kind
# without its integration runs unmanaged, outside every quota Kueue keeps. The job APIs' kinds join them
# where the stack installs those APIs (gpu_platform.k8s.job_apis).
BUILT_IN_FRAMEWORKS = ("batch/job", "deployment", "statefulset", "pod")


def frameworks(spec: PlatformSpec) -> list[str]:
    """Kueue's integrations: the built-in kinds and exactly the job APIs this stack installs."""
    return [*BUILT_IN_FRAMEWORKS[:1], *(k[1] for k in job_apis.kinds(spec)), *BUILT_IN_FRAMEWORKS[1:]]


def managed_jobs(spec: PlatformSpec) -> dict[str, Any]:
    """The Kueue settings that put every tenant workload under Kueue, queue name or not.

    Kueue v1beta2 Configuration (jobframework WorkloadShouldBeSuspended): a job without a queue-name
    label is managed only with `manageJobsWithoutQueueName` and a namespace matching
    `managedJobsNamespaceSelector`; there it gets the namespace's LocalQueue `default`
    (jobframework ApplyDefaultLocalQueue). Only tenant namespaces match, so system pods stay unmanaged.
    """
    return {
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
        "integrations": {"frameworks": frameworks(spec)},
    }


def manager_config(spec: PlatformSpec) -> dict[str, Any]:
    """Kueue's controller configuration (replaces the chart default, so it is complete)."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        **managed_jobs(spec),
    }
    config["waitForPodsReady"] = wait_for_pods_ready()
    if spec.queueing.kueue.fair_sharing:
        config["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    config.update(excluded_resources_config(spec))
    if spec.workers:  # a MultiKueue manager (gpu_platform.federation)
        config["multiKueue"] = multikueue.manager_settings()
    return config


# Resources pods commonly request that no ClusterQueue lists: local scratch disk and hugepages. Kueue
# would otherwise leave every such pod pending (see excluded_resources_config).
UNGATED_PREFIXES = ("ephemeral-storage", "hugepages-")


# Bounds of the fallback (docs/workload-flow.md, "How fallback works"): the autoscaler gives up on a group after
# max-node-provision-time (gpu_platform.aws.autoscaler) at worst, then a GPU node boots in ~10 min.
PODS_READY_TIMEOUT = "35m"
# A running workload that lost a pod (its node fenced for a failed GPU, docs/deploying.md "When a GPU fails") is
# suspended and requeued after this long, releasing the healthy nodes its hung NCCL ranks hold; the default is
# `timeout` (apis/config/v1beta2/defaults.go), which would keep them idle 35 minutes.
PODS_RECOVERY_TIMEOUT = "10m"
REQUEUE_BASE_SECONDS = 60
REQUEUE_MAX_SECONDS = 1800


def wait_for_pods_ready() -> dict[str, Any]:
    """Kueue's waitForPodsReady, explicit: a workload whose pods are not all ready in time is evicted and requeued.

    kueue (the lockfile's release) apis/config/v1beta2/defaults.go `SetDefaults_Configuration` turns it on by default
    (30m, requeue from the eviction, backoff 60s doubling to 3600s, no limit); here the timeout outlasts
    the autoscaler's worst-case fallback, so a Spot workload is not evicted while on-demand nodes boot,
    and the backoff is capped at 30 min. blockAdmission stays off: one stuck workload must not hold
    back every other admission. Eviction releases the quota of a workload no capacity can serve.
    """
    return {
        "timeout": PODS_READY_TIMEOUT,
        "recoveryTimeout": PODS_RECOVERY_TIMEOUT,
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": REQUEUE_BASE_SECONDS, "backoffMaxSeconds": REQUEUE_MAX_SECONDS},
    }


def excluded_resources_config(spec: PlatformSpec) -> dict[str, Any]:
    """`resources.excludeResourcePrefixes`: what Kueue must not gate, on every stack.

    Kueue (the lockfile's release; default quotaCheckStrategy BlockUndeclared) leaves a workload pending with
    "resource ephemeral-storage unavailable in ClusterQueue" when it requests a resource no resource
    group covers (pkg/scheduler/flavorassigner/flavorassigner.go, findFlavorForPodSets); excluded
    prefixes are dropped from the workload's requests first (pkg/workload/workload.go,
    dropExcludedResources, a prefix match). Scratch disk and hugepages are node-local and bounded by
    the ResourceQuota and the kubelet; on EFA stacks EFA devices come with the GPUs the quota counts.
    """
    prefixes = list(UNGATED_PREFIXES)
    if efa_pools(spec):
        prefixes += [p for p in KUEUE_EXCLUDED_PREFIXES if p not in prefixes]
    resources: dict[str, Any] = {"excludeResourcePrefixes": prefixes}
    if dra_pools(spec):
        resources["deviceClassMappings"] = device_class_mappings()
    return {"resources": resources}


def device_class_mappings() -> list[dict[str, Any]]:
    """`resources.deviceClassMappings`: claimed whole GPUs (DeviceClass gpu.nvidia.com) count as DRA_GPU_RESOURCE.

    Kueue (the lockfile's release, feature gate KueueDRAIntegration, beta and on) adds to each pod set's requests, per
    ResourceClaimTemplate request of a mapped class, its device count under the mapped name (behaviour.dra
    `kueue_claim_requests`); ClusterQueues cover that name on the DRA pools' flavors. A claim of a class no mapping
    names leaves the workload inadmissible, so MIG and VFIO claims are never admitted here.
    """
    return [{"name": DRA_GPU_RESOURCE, "deviceClassNames": [DRA_GPU_CLASS]}]


def feature_gates(spec: PlatformSpec) -> list[dict[str, Any]]:
    """Kueue feature gates set against their defaults: on a stack with DRA pools, DRA-backed extended resources off.

    kueue (the lockfile's release) pkg/features/kube_features.go turns KueueDRAIntegrationExtendedResource on by
    default; pkg/dra/extended_resources.go `resolveQuotaKey` then charges a container's `nvidia.com/gpu` to the
    mapped name of the DeviceClass whose `spec.extendedResourceName` is `nvidia.com/gpu`, and the DRA driver's
    `gpu.nvidia.com` class declares exactly that (templates/deviceclass-gpu.yaml, resource.k8s.io/v1). Where the
    API server keeps the field (feature gate DRAExtendedResource), every device-plugin GPU pod would be counted as
    a DRA GPU and find no quota on the device-plugin flavors. Off, whole GPUs and claimed GPUs stay apart.
    """
    if not dra_pools(spec):
        return []
    return [{"name": "KueueDRAIntegrationExtendedResource", "enabled": False}]


def kueue_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of the Kueue chart."""
    manager: dict[str, Any] = {
        "nodeSelector": controller_node_selector(spec),
        "replicas": 2,
        "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
    }
    gates = feature_gates(spec)
    if gates:
        manager["featureGates"] = gates
    return {
        "enablePrometheus": True,
        "controllerManager": manager,
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_config(spec), sort_keys=False)},
        "metrics": {"prometheusNamespace": spec.monitoring.namespace},
    }


@dataclass(frozen=True)
class KueueArgs:
    """Inputs of the Kueue component."""

    spec: PlatformSpec
    catalog: Catalog
    provider: k8s.Provider
    tenant_namespaces: dict[str, pulumi.Resource]
    after: tuple[pulumi.Resource, ...] = ()
    """Releases to install first (gpu_platform.k8s.releases: the ServiceMonitor needs kube-prometheus-stack's CRD)."""


class Kueue(pulumi.ComponentResource):
    """The pinned Kueue release, flavors, tenant ClusterQueues and LocalQueues, priority classes."""

    def __init__(self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:Kueue", name, None, opts)
        spec, catalog = args.spec, args.catalog
        release = release_in_namespace(self, name, RELEASE, spec.lock.chart("kueue"), KUEUE_NAMESPACE, kueue_values(spec), args.provider, args.after)
        crd = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[release])
        create(f"{name}-flavor-{CPU_FLAVOR}", cpu_flavor(), crd)
        # Kueue's ResourceFlavor CRD (CEL) makes topologyName, nodeLabels and tolerations immutable once topologyName is
        # set: turning whole-node placement on or off, or relabelling a whole-node pool, replaces the flavor (deleted
        # first: same name) instead of an update the API server would refuse.
        flavor_opts = pulumi.ResourceOptions.merge(crd, pulumi.ResourceOptions(replace_on_changes=list(FLAVOR_IMMUTABLE), delete_before_replace=True))
        for pool in spec.node_pools:
            with source(pool_key(spec, pool.name)):
                create(f"{name}-flavor-{pool.name}", resource_flavor(pool, catalog), flavor_opts)
        for topo in topologies(spec):
            create(f"{name}-topology-{topo['metadata']['name']}", topo, crd)
        for wpc in workload_priority_classes():
            create(f"{name}-priority-{wpc['metadata']['name']}", wpc, crd)
        for t in spec.tenants:
            whole = whole_nodes_queue(spec, catalog, t)
            with source(tenant_key(spec, t.name) + ".quotas"):
                create(f"{name}-clusterqueue-{t.name}", cluster_queue(spec, catalog, t), crd)
                if whole is not None:
                    create(f"{name}-clusterqueue-{whole['metadata']['name']}", whole, crd)
            in_ns = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[release, args.tenant_namespaces[t.name]])
            with source(tenant_key(spec, t.name)):
                create(f"{name}-localqueue-{t.name}", local_queue(t), in_ns)
                if whole is not None:
                    create(f"{name}-localqueue-{t.name}-{WHOLE_NODES_QUEUE}", whole_nodes_local_queue(t), in_ns)
        self.register_outputs({})
