"""One stack, several clusters: the MultiKueue manager and its workers as plain data (docs/multi-cluster.md).

A stack with `workers` is a manager: its own cluster has no GPU pools and no quotas of its own. Each worker is
built as if it were a stack of its own (`worker_spec`: the manager's shared settings with the worker's region,
cluster, network, pools and local quotas), and the manager's Kueue admits against `federated_spec`: every
workers' pool by name and each tenant's quota summed over the workers (Kueue's MultiKueue admits on the manager,
then dispatches the workload to a worker whose own ClusterQueue admits it again:
pkg/controller/admissionchecks/multikueue/workload.go at the pinned Kueue).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpu_platform.spec.models import NodePool, PlatformSpec, Tenant, TenantQuota

# Resource-name prefix of a worker's resources in the one Pulumi stack (`<worker>-network`, `<worker>-platform`...).
WORKER_COMPONENT = "gpu-platform:index:Worker"


def is_manager(spec: PlatformSpec) -> bool:
    """A stack that declares MultiKueue workers."""
    return bool(spec.workers)


def prefix(worker: str) -> str:
    """Logical-name prefix of one worker's resources."""
    return f"{worker}-"


def worker_pool(pool: NodePool) -> NodePool:
    """A worker's pool as its cluster builds it: Topology-Aware Scheduling off unless the stack says otherwise.

    A pool with whole-node placement moves its quota to each tenant's `whole-nodes` ClusterQueue and LocalQueue
    (gpu_platform.k8s.kueue); MultiKueue dispatches a workload to the LocalQueue of the same name on the worker,
    which the manager would then need too. Not built yet: the spec refuses `wholeNodes: true` on workers.
    """
    return pool if pool.whole_nodes is not None else pool.model_copy(update={"whole_nodes": False})


def worker_spec(spec: PlatformSpec, index: int) -> PlatformSpec:
    """Worker `index` as a stack of its own: shared settings, its cluster, network, pools and tenants' local quotas."""
    w = spec.workers[index]
    existing = w.cluster.provider == "existing"
    # EKS access entries and Pod Identity are the EKS clusters' business; an existing worker maps identities itself.
    eks_only = {"access_role_arns": (), "workload_identity": None} if existing else {}
    tenants = tuple(t.model_copy(update={"quotas": w.quotas.get(t.name, ()), **eks_only}) for t in spec.tenants)
    storage = spec.storage.model_copy(update={"class_name": w.storage_class}) if existing else spec.storage
    out = spec.model_copy(
        update={
            "storage": storage,
            "region": w.region,
            "cluster": w.cluster,
            "network": w.network,
            "node_pools": tuple(worker_pool(p) for p in w.node_pools),
            "tenants": tenants,
            "workers": (),
            "demand": (),
        }
    )
    out._config_root = f"workers[{index}]."
    return out


def _summed(quotas: Iterable[TenantQuota], multiplier: int = 1) -> TenantQuota:
    """One pool's quota over the workers, times the manager's multiplier.

    GPUs added; a limit only where every worker sets one (None is unlimited).
    """
    qs = list(quotas)

    def total(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else multiplier * sum(v for v in values if v is not None)

    return TenantQuota(
        pool=qs[0].pool,
        gpus=multiplier * sum(q.gpus for q in qs),
        borrowing_limit=total([q.borrowing_limit for q in qs]),
        lending_limit=total([q.lending_limit for q in qs]),
    )


def federated_pools(spec: PlatformSpec) -> tuple[NodePool, ...]:
    """Every worker pool by name, the first worker's (preference order) definition of each."""
    seen: dict[str, NodePool] = {}
    for w in spec.workers:
        for p in w.node_pools:
            seen.setdefault(p.name, worker_pool(p))
    return tuple(seen.values())


def federated_tenant(spec: PlatformSpec, tenant: Tenant) -> Tenant:
    """A tenant with its quota per pool summed over the workers, in the order pools first appear.

    Times `queueing.kueue.multiKueueQuotaMultiplier` (1 unless the stack declares more).
    """
    by_pool: dict[str, list[TenantQuota]] = {}
    for w in spec.workers:
        for q in w.quotas.get(tenant.name, ()):
            by_pool.setdefault(q.pool, []).append(q)
    multiplier = spec.queueing.kueue.multi_kueue_quota_multiplier
    return tenant.model_copy(update={"quotas": tuple(_summed(qs, multiplier) for qs in by_pool.values())})


def federated_spec(spec: PlatformSpec) -> PlatformSpec:
    """The manager as its Kueue sees the federation: the workers' pools as flavors, each tenant's quota summed."""
    return spec.model_copy(update={"node_pools": federated_pools(spec), "tenants": tuple(federated_tenant(spec, t) for t in spec.tenants)})
