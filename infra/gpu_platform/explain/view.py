"""The stack as the components see it: the objects that decide admission and placement, and each pool's nodes.

Built from the same pure builders the Pulumi components call (gpu_platform.k8s.*, gpu_platform.pools,
gpu_platform.aws.nodepools), without the engine, so `explain` answers in a fraction of `plan`'s time;
tests/journeys/test_explain_objects.py holds these objects equal to what `render` writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import yaml

from gpu_platform.aws.nodepools import eks_node_labels, node_template_tags
from gpu_platform.behaviour.autoscaler import TemplateNode, template_node
from gpu_platform.behaviour.volcano import CHART_DEFAULT_ADMISSIONS
from gpu_platform.catalog import Catalog
from gpu_platform.efa import node_resources as efa_node_resources
from gpu_platform.k8s import dra, job_apis, kueue, tenants, volcano
from gpu_platform.k8s.isolation import (
    gpu_nodes_policy,
    gpu_nodes_policy_binding,
    load_balancers_policy,
    load_balancers_policy_binding,
    owned_policy,
    owned_policy_binding,
    priority_policy,
    priority_policy_binding,
)
from gpu_platform.k8s.routing import both_schedulers, default_queue, volcano_jobs_policy
from gpu_platform.k8s.tenant_network import network_policies, s3_peers
from gpu_platform.plan_ids import PLANNED_S3_PREFIX_LIST
from gpu_platform.pools import (
    DRA_GPU_CLASS,
    DRA_GPU_RESOURCE,
    dra_pools,
    gpu_of,
    gpus_per_node,
    is_dra,
    node_counts,
    node_groups,
    node_labels,
    node_taints,
    resources_per_gpu,
)
from gpu_platform.spec.models import NodePool, PlatformSpec

Manifest = dict[str, Any]
# Kinds every Kubernetes 1.35 API server serves, with their served versions (kubernetes-validate's bundled schema).
BUILT_IN_KINDS: dict[str, tuple[str, ...]] = {
    "Pod": ("v1",),
    "Job": ("batch/v1",),
    "CronJob": ("batch/v1",),
    "Deployment": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
}


@dataclass(frozen=True)
class PoolView:
    """One node pool as the scheduler and the autoscaler see it."""

    pool: NodePool
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    allocatable: Mapping[str, str]
    """What one node of the pool advertises (device plugins' resources, EFA, hugepages, cpu, memory)."""
    devices: Mapping[str, int]
    """DRA pools: DeviceClass -> devices one node's ResourceSlices publish that the class selects (none elsewhere)."""
    min_nodes: int
    max_nodes: int
    template: TemplateNode | None
    """The autoscaler's node for the group at zero (EKS); None on-prem (fixed nodes)."""


def pool_view(spec: PlatformSpec, catalog: Catalog, pool: NodePool) -> PoolView:
    """Labels, taints and per-node resources of a pool, from gpu_platform.pools (EKS node groups and on-prem patches read the same)."""
    per_node = gpus_per_node(pool, catalog)
    # A DRA pool advertises no GPU extended resource: its kubelet plugin publishes one gpu.nvidia.com device per GPU.
    allocatable = {name: str(n * per_node) for name, n in resources_per_gpu(pool, catalog).items() if name != DRA_GPU_RESOURCE}
    devices = {DRA_GPU_CLASS: per_node} if is_dra(pool) else {}
    allocatable |= efa_node_resources(pool, catalog)
    taints = tuple({"key": t.key, "value": t.value, "effect": t.effect} for t in node_taints(pool))
    lo, _, hi = node_counts(pool)
    template = None
    if pool.instance_types:
        instance = catalog.instance(pool.instance_types[0])
        # Instance capacity; the kubelet's reservations take a few percent off (not modelled).
        allocatable |= {"cpu": str(instance.vcpu), "memory": f"{instance.memory_gib}Gi", "ephemeral-storage": f"{pool.root_volume_gib}Gi"}
        labels = eks_node_labels(pool, catalog)
        template = template_node(instance.vcpu, instance.memory_gib * 1024, instance.gpus, node_template_tags(pool, catalog), labels, taints)
    else:
        labels = node_labels(pool, catalog)
    return PoolView(pool, labels, taints, allocatable, devices, lo, hi, template)


class StackView:
    """The objects of one stack that admission and scheduling read, and its pools."""

    def __init__(self, spec: PlatformSpec, catalog: Catalog):
        self.spec = spec
        self.catalog = catalog

    @cached_property
    def objects(self) -> list[Manifest]:
        """Namespaces, admission policies, tenant NetworkPolicies, Kueue and Volcano objects, as the components render them."""
        spec, catalog = self.spec, self.catalog
        out: list[Manifest] = [tenants.namespace(spec, t) for t in spec.tenants]
        out += [tenants.resource_quota(spec, catalog, t) for t in spec.tenants]
        out += [tenants.limit_range(t) for t in spec.tenants]
        out += tenants.priority_classes()
        out += [priority_policy(spec), priority_policy_binding(), gpu_nodes_policy(bool(dra_pools(spec))), gpu_nodes_policy_binding()]
        out += job_apis.runtimes(spec)
        out += [m for t in spec.tenants for m in dra.tenant_templates(spec, t, catalog)]
        if spec.tenants:
            out += [owned_policy(spec), owned_policy_binding(), load_balancers_policy(), load_balancers_policy_binding()]
        s3 = s3_peers(PLANNED_S3_PREFIX_LIST)  # what the offline engine's plan names (plan_ids)
        out += [np for t in spec.tenants for np in network_policies(spec, t, s3)]
        if spec.queueing.kueue.enabled:
            out.append(kueue.cpu_flavor())
            out += [kueue.resource_flavor(p, catalog) for p in spec.node_pools]
            out += kueue.workload_priority_classes()
            out += kueue.topologies(spec)
            out += [kueue.cluster_queue(spec, catalog, t) for t in spec.tenants]
            out += [kueue.local_queue(t) for t in spec.tenants]
            for t in spec.tenants:
                whole = kueue.whole_nodes_queue(spec, catalog, t)
                if whole is not None:
                    out += [whole, kueue.whole_nodes_local_queue(t)]
        if spec.queueing.volcano.enabled:
            out += [volcano.queue(spec, catalog, t) for t in spec.tenants]
            out.append(default_queue(spec, catalog))
            if both_schedulers(spec):
                out += volcano_jobs_policy()
        return out

    @cached_property
    def runtimes(self) -> list[Manifest]:
        """The Kubeflow Trainer runtimes a TrainJob may name (the platform's ClusterTrainingRuntimes)."""
        return [o for o in self.objects if o.get("kind") in ("ClusterTrainingRuntime", "TrainingRuntime")]

    def served_versions(self, kind: str) -> list[str]:
        """The apiVersions under which the cluster serves `kind`: built-in kinds, Kueue's, Volcano's and the installed job APIs'."""
        served = dict(BUILT_IN_KINDS)
        for k, _, group, version, _ in job_apis.kinds(self.spec):
            served[k] = (*served.get(k, ()), f"{group}/{version}")
        if self.spec.queueing.job_apis.ray:
            # kuberay (the lockfile's tag) crds/ray.io_rayjobs.yaml, ray.io_rayclusters.yaml: v1alpha1 still served (deprecated)
            served["RayJob"] = (*served["RayJob"], "ray.io/v1alpha1")
            served["RayCluster"] = (*served["RayCluster"], "ray.io/v1alpha1")
        if self.spec.queueing.kueue.enabled:
            served["Workload"] = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
        if self.spec.queueing.volcano.enabled:
            served["PodGroup"] = ("scheduling.volcano.sh/v1beta1",)
            served["Job"] = (*served["Job"], "batch.volcano.sh/v1alpha1")
        return list(served.get(kind, ()))

    @cached_property
    def pools(self) -> list[PoolView]:
        """Every GPU pool of the stack."""
        return [pool_view(self.spec, self.catalog, p) for p in node_groups(self.spec, self.catalog)]

    @cached_property
    def kueue_config(self) -> dict[str, Any] | None:
        """Kueue's manager Configuration as the chart hands it over (None without Kueue)."""
        if not self.spec.queueing.kueue.enabled:
            return None
        text = kueue.kueue_values(self.spec)["managerConfig"]["controllerManagerConfigYaml"]
        config: dict[str, Any] = yaml.safe_load(text)
        return config

    @cached_property
    def volcano_admissions(self) -> str:
        """The Volcano chart's `custom.enabled_admissions` as rendered (the chart default when not overridden)."""
        custom = volcano.volcano_values(self.spec)["custom"]
        return str(custom.get("enabled_admissions", CHART_DEFAULT_ADMISSIONS))

    def find(self, kind: str, name: str, namespace: str | None = None) -> Manifest | None:
        """The object of that kind and name (and namespace), or None."""
        for o in self.objects:
            meta = o.get("metadata") or {}
            if o.get("kind") == kind and meta.get("name") == name and meta.get("namespace") == namespace:
                return o
        return None

    def of_kind(self, kind: str, namespace: str | None = None) -> list[Manifest]:
        """Every object of one kind (in that namespace, when given)."""
        return [o for o in self.objects if o.get("kind") == kind and (namespace is None or (o.get("metadata") or {}).get("namespace") == namespace)]

    def gpu_model(self, pool: NodePool) -> str:
        """The pool's GPU model name."""
        return gpu_of(pool, self.catalog).name
