"""Volcano (where a stack enables it): scheduler configuration for gang scheduling and DRF, a Queue per tenant.

Kueue owns GPU quota (it admits every tenant workload, gpu_platform.k8s.routing), so a tenant's Queue
carries no GPU capability, deserved share or guarantee: a second GPU ledger could only disagree with
Kueue's (a Capacity Block that usually does not exist counted in a guarantee, say). Its capability caps
cpu and memory at the tenant's ResourceQuota. Pods reach their tenant's Queue through the namespace's
`scheduling.volcano.sh/queue-name` annotation, which the podgroups mutate admission (switched on here)
copies into every PodGroup created there (gpu_platform.behaviour.volcano.podgroup_queue).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpu_platform.behaviour.volcano import CHART_DEFAULT_ADMISSIONS, PODGROUP_MUTATE
from gpu_platform.catalog import Catalog
from gpu_platform.k8s.gpu_operator import controller_node_selector
from gpu_platform.k8s.objects import LABEL_TENANT, VOLCANO_NAMESPACE, Manifest, create, metadata, release_in_namespace
from gpu_platform.provenance import source, tenant_key
from gpu_platform.spec.models import PlatformSpec, Tenant

API = "scheduling.volcano.sh/v1beta1"
RELEASE = "volcano"
ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill")
# Tier 1 decides who may run at all (priority, gang: all pods of a job or none); tier 2 shares
# capacity (DRF, proportion by queue weight), checks node fit and packs GPUs tightly (binpack).
TIERS: tuple[tuple[str, ...], ...] = (("priority", "gang", "conformance"), ("drf", "predicates", "proportion", "nodeorder", "binpack"))


def scheduler_config() -> dict[str, Any]:
    """The volcano-scheduler configuration: actions in order and plugin tiers."""
    tiers: list[dict[str, Any]] = [{"plugins": [{"name": p} for p in tier]} for tier in TIERS]
    for plugin in tiers[1]["plugins"]:
        if plugin["name"] == "binpack":
            # Fill GPU nodes before opening new ones, so whole nodes stay free for large gangs.
            plugin["arguments"] = {"binpack.weight": 10, "binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 5}
    return {"actions": ", ".join(ACTIONS), "tiers": tiers}


def volcano_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of the Volcano chart: our scheduler configuration, controllers on system nodes."""
    selector = controller_node_selector(spec)
    return {
        "custom": {
            "scheduler_config_override": yaml.safe_dump(scheduler_config(), sort_keys=False),
            "default_ns": selector,
            "enabled_admissions": enabled_admissions(),
        }
    }


def enabled_admissions() -> str:
    """The chart's admissions plus `/podgroups/mutate`, which puts a PodGroup in its namespace's queue.

    volcano pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go `createPodGroupPatch`; the
    chart (templates/webhooks.yaml, admission.yaml) registers the webhook and lets it read namespaces
    only when this list names it.
    """
    return f"{CHART_DEFAULT_ADMISSIONS},{PODGROUP_MUTATE}"


def queue(spec: PlatformSpec, catalog: Catalog, tenant: Tenant) -> Manifest:
    """The tenant's Volcano Queue: weight = fair-share weight, capability = the ResourceQuota's cpu and memory, no GPUs.

    Volcano reads a resource missing from `capability` as unlimited (proportion plugin), so GPUs are
    left to Kueue, which admitted the pods before Volcano sees them.
    """
    body = {
        "weight": tenant.fair_share_weight,
        "capability": {"cpu": str(tenant.resources.cpu), "memory": f"{tenant.resources.memory_gib}Gi"},
        # Production training keeps what it borrowed; everyone else gives it back when the owner returns.
        "reclaimable": tenant.priority != "production-training",
    }
    return {"apiVersion": API, "kind": "Queue", "metadata": metadata(tenant.name, labels={LABEL_TENANT: tenant.name}), "spec": body}


@dataclass(frozen=True)
class VolcanoArgs:
    """Inputs of the Volcano component."""

    spec: PlatformSpec
    catalog: Catalog
    provider: k8s.Provider
    after: tuple[pulumi.Resource, ...] = ()
    """Releases to install first (gpu_platform.k8s.releases)."""


class Volcano(pulumi.ComponentResource):
    """The pinned Volcano release and a Queue per tenant."""

    def __init__(self, name: str, args: VolcanoArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:Volcano", name, None, opts)
        spec = args.spec
        release = release_in_namespace(
            self, name, RELEASE, spec.lock.chart("volcano"), VOLCANO_NAMESPACE, volcano_values(spec), args.provider, args.after
        )
        crd = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[release])
        for t in spec.tenants:
            with source(tenant_key(spec, t.name)):
                create(f"{name}-queue-{t.name}", queue(spec, args.catalog, t), crd)
        self.register_outputs({})
