"""Tenancy: per tenant a namespace, GPU-aware ResourceQuota, LimitRange, RoleBindings and NetworkPolicies.

Quota arithmetic lives here once: `nominal_resources` (a tenant's own share, in the pool's resources)
and `ceiling_resources` (the most it may ever use, borrowing included). Kueue ClusterQueues, Volcano
Queues, ResourceQuotas and tests all read these functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.behaviour.resourcequota import device_class_key
from gpu_platform.behaviour.volcano import QUEUE_ANNOTATION as VOLCANO_QUEUE_ANNOTATION
from gpu_platform.catalog import Catalog
from gpu_platform.federation import federated_spec, federated_tenant
from gpu_platform.k8s.dra import tenant_templates
from gpu_platform.k8s.objects import LABEL_COHORT, LABEL_TENANT, Manifest, create, metadata
from gpu_platform.k8s.tenant_network import network_policies
from gpu_platform.pools import (
    DOMAIN,
    DRA_DEVICE_CLASSES,
    DRA_GPU_CLASS,
    DRA_GPU_RESOURCE,
    dra_pools,
    max_gpus,
    pool_capacity,
    resources_for_gpus,
)
from gpu_platform.spec.models import PlatformSpec, Tenant, TenantQuota

# The platform's order: production training > inference > batch > experiments.
PRIORITY_VALUES = {"production-training": 40000, "inference": 30000, "batch": 20000, "experiments": 10000}
PRIORITY_TEXT = {
    "production-training": "Production training: never preempted by other tenants' work.",
    "inference": "Online inference serving.",
    "batch": "Batch and offline processing.",
    "experiments": "Experiments and notebooks: first to be preempted, never preempts others.",
}
# The tenant ClusterRole (gpu_platform.k8s.isolation): not the built-in `edit`, which writes NetworkPolicies.
TENANT_ROLE = "gpu-platform-tenant"


def stack_gpu_resources(spec: PlatformSpec, catalog: Catalog) -> list[str]:
    """Every extended GPU resource any pool of the stack offers."""
    return sorted({r for p in spec.node_pools for r in pool_capacity(p, catalog)})


def ceiling_gpus(spec: PlatformSpec, catalog: Catalog, tenant: Tenant, quota: TenantQuota) -> int:
    """Most physical GPUs of a pool the tenant can hold: nominal plus what it may borrow, within the pool."""
    if quota.borrowing_limit is not None:
        most = quota.gpus + quota.borrowing_limit
    else:  # Kueue: no borrowing limit means all the cohort's quota for that flavor
        most = sum(q.gpus for t in spec.tenants if t.cohort == tenant.cohort for q in t.quotas if q.pool == quota.pool)
    return max(quota.gpus, min(most, max_gpus(spec.pool(quota.pool), catalog)))


def _add(total: dict[str, int], more: dict[str, int]) -> None:
    for name, n in more.items():
        total[name] = total.get(name, 0) + n


def nominal_resources(spec: PlatformSpec, catalog: Catalog, tenant: Tenant) -> dict[str, int]:
    """The tenant's own GPU resources over all its pools (whole, shared and each MIG profile)."""
    total: dict[str, int] = {}
    for q in tenant.quotas:
        _add(total, resources_for_gpus(spec.pool(q.pool), catalog, q.gpus))
    return total


def ceiling_resources(spec: PlatformSpec, catalog: Catalog, tenant: Tenant) -> dict[str, int]:
    """The most GPU resources the tenant may use at once, every stack GPU resource listed (0 if none)."""
    total = dict.fromkeys(stack_gpu_resources(spec, catalog), 0)
    for q in tenant.quotas:
        _add(total, resources_for_gpus(spec.pool(q.pool), catalog, ceiling_gpus(spec, catalog, tenant, q)))
    return total


LABEL_EGRESS_BOUNDARY = f"{DOMAIN}/egress-boundary"
# The load balancer scheme a tenant may ask for (`network.ingress.loadBalancers`), read by the
# load-balancers admission policy (k8s.isolation); without it the tenant may create none.
LABEL_LOAD_BALANCERS = f"{DOMAIN}/load-balancers"


def quota_key(resource: str) -> str:
    """The ResourceQuota key of a GPU resource: `requests.<name>` for extended resources, devices of the class for DRA.

    A claim from a template is refused at creation when the namespace's devices of its class would exceed it
    (behaviour.resourcequota `resource_claim_usage`).
    """
    return device_class_key(DRA_GPU_CLASS) if resource == DRA_GPU_RESOURCE else f"requests.{resource}"


def namespace(spec: PlatformSpec, tenant: Tenant) -> Manifest:
    """The tenant namespace: tenant and cohort labels, Pod Security `baseline` (no privileged pods), its Volcano queue."""
    labels = {
        LABEL_TENANT: tenant.name,
        LABEL_COHORT: tenant.cohort,
        f"{DOMAIN}/priority": tenant.priority,
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    if tenant.network.egress_boundary:
        labels[LABEL_EGRESS_BOUNDARY] = "true"  # read by the owned-objects admission policy (k8s.isolation)
    if tenant.network.ingress.load_balancers and spec.is_eks:
        # The AWS Load Balancer Controller's pod webhook (`mpod`, failurePolicy Ignore) adds a readiness gate to pods in
        # namespaces with this label, so a rolling update waits until the load balancer has registered the new pods.
        labels["elbv2.k8s.aws/pod-readiness-gate-inject"] = "enabled"
        labels[LABEL_LOAD_BALANCERS] = tenant.network.ingress.load_balancers
    meta = metadata(tenant.ns, labels=labels)
    if spec.queueing.volcano.enabled:
        # Volcano's podgroups mutate webhook puts every PodGroup created here in the tenant's queue
        # (gpu_platform.behaviour.volcano.podgroup_queue); without it they land in `default`.
        meta["annotations"] = {VOLCANO_QUEUE_ANNOTATION: tenant.name}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def resource_quota(spec: PlatformSpec, catalog: Catalog, tenant: Tenant) -> Manifest:
    """Hard ceilings: each GPU resource (0 where the tenant has no quota), cpu and memory requests, pods, storage.

    Requests only, no `limits.*`: the quota admission refuses a pod whose containers omit a resource the
    quota lists under `limits.` (pkg/quota/v1/evaluator/core/pods.go `enforcePodContainerConstraints`), and
    GPU pods are commonly written with a memory request and only a GPU limit (behaviour.resourcequota).
    Storage: all claims' requests, the number of claims and, with FSx for Lustre, its claims (each one a file
    system of at least 1.2 TiB), counted per class as persistent_volume_claims.go `Usage` does.
    """
    r = tenant.resources
    hard: dict[str, str] = {quota_key(name): str(n) for name, n in ceiling_resources(spec, catalog, tenant).items()}
    if dra_pools(spec):
        # Claims for the DRA driver's other classes (MIG slices, VFIO passthrough) are outside every quota here: none.
        hard |= {device_class_key(c): "0" for c in DRA_DEVICE_CLASSES if c != DRA_GPU_CLASS}
    # A MultiKueue manager holds the pods of its pod-integration workloads (gated) for every worker: their sum.
    clusters = max(1, len(spec.workers))
    hard |= {
        "requests.cpu": str(r.cpu * clusters),
        "requests.memory": f"{r.memory_gib * clusters}Gi",
        "pods": str(r.pods * clusters),
        "requests.storage": f"{r.storage_gib}Gi",
        "persistentvolumeclaims": str(r.volume_claims),
    }
    if spec.is_eks and spec.storage.fsx_lustre.enabled:
        hard[f"{spec.storage.fsx_lustre.class_name}.storageclass.storage.k8s.io/persistentvolumeclaims"] = str(r.fsx_claims)
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": metadata("gpu-quota", tenant.ns, {LABEL_TENANT: tenant.name}),
        "spec": {"hard": hard},
    }


# Requests given to a container that sets none, so it still counts against the quota. Kept below any limit a
# real container sets: Kueue applies `defaultRequest` before it copies limits into missing requests
# (behaviour.kueue `adjusted_workload`), so a container with only `limits: {memory: 512Mi}` would be refused as
# "requests must not exceed its limits" under a 1Gi default, though the API server itself would admit its pods.
DEFAULT_REQUEST = {"cpu": "10m", "memory": "16Mi"}


def limit_range(tenant: Tenant) -> Manifest:
    """Container default requests (tiny: see DEFAULT_REQUEST); no default limit, no max.

    A default memory limit caps a container that sets a larger memory request and no limit (the commonest GPU
    pod shape: vLLM, Triton and torchrun examples ask memory and limit only the GPU), and Kueue and the API
    server refuse requests above limits (behaviour.kueue `admissibility_errors`, behaviour.limitrange); a `max`
    becomes the default limit when stored (SetDefaults_LimitRangeItem), with the same effect. The
    ResourceQuota bounds the namespace's total instead.
    """
    spec = {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_REQUEST)}]}
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": metadata("defaults", tenant.ns, {LABEL_TENANT: tenant.name}), "spec": spec}


def role_bindings(tenant: Tenant) -> list[Manifest]:
    """One RoleBinding per tenant group to the platform's tenant ClusterRole, in the tenant namespace."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": metadata(f"{group}-tenant", tenant.ns, {LABEL_TENANT: tenant.name}),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TENANT_ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        }
        for group in tenant.groups
    ]


def priority_classes() -> list[Manifest]:
    """Pod PriorityClasses of the platform tiers; experiments never preempt."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": metadata(f"gpu-{tier}"),
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "Never" if tier == "experiments" else "PreemptLowerPriority",
            "description": PRIORITY_TEXT[tier],
        }
        for tier, value in PRIORITY_VALUES.items()
    ]


@dataclass(frozen=True)
class TenantArgs:
    """Inputs of one TenantSpace component."""

    spec: PlatformSpec
    catalog: Catalog
    tenant: Tenant
    provider: k8s.Provider
    s3_peers: pulumi.Input[list[dict[str, Any]]] | None = None  # EKS: the `to` of `allow-s3` (S3's prefix list)
    queues: PlatformSpec | None = None
    """The spec Kueue admits against: a MultiKueue manager's federated spec (federation.federated_spec), else `spec`."""


class TenantSpace(pulumi.ComponentResource):
    """One tenant's namespace with its quota, limits, role bindings and network policies."""

    def __init__(self, name: str, args: TenantArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:TenantSpace", name, None, opts)
        t, spec = args.tenant, args.spec
        self.namespace = create(f"{name}-namespace", namespace(spec, t), pulumi.ResourceOptions(parent=self, provider=args.provider))
        in_ns = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[self.namespace])
        create(f"{name}-quota", resource_quota(spec, args.catalog, t), in_ns)
        create(f"{name}-limits", limit_range(t), in_ns)
        for rb in role_bindings(t):
            create(f"{name}-rolebinding-{rb['subjects'][0]['name']}", rb, in_ns)
        for np in network_policies(spec, t, args.s3_peers):
            create(f"{name}-netpol-{np['metadata']['name']}", np, in_ns)
        # A MultiKueue manager holds the claim templates its workers' DRA pools take: its Kueue counts a workload's
        # claims from the templates in the namespace (behaviour.dra.kueue_claim_requests) before dispatching it.
        claims = (
            tenant_templates(args.queues or federated_spec(spec), federated_tenant(spec, t), args.catalog)
            if spec.workers
            else tenant_templates(spec, t, args.catalog)
        )
        for template in claims:
            create(f"{name}-claim-template-{template['metadata']['name']}", template, in_ns)
        self.register_outputs({})
