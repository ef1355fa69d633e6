"""Volcano (where a stack enables it): scheduler configuration for gang scheduling and DRF, a Queue per tenant.

A tenant's Queue capability is exactly its ResourceQuota ceiling and its guarantee its nominal GPU
share (both from gpu_platform.k8s.tenants), so Volcano and Kueue never disagree on what a tenant owns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpu_platform.catalog import Catalog
from gpu_platform.k8s.gpu_operator import controller_node_selector
from gpu_platform.k8s.objects import LABEL_TENANT, VOLCANO_NAMESPACE, Manifest, create, metadata, release_in_namespace
from gpu_platform.k8s.tenants import ceiling_resources, nominal_resources
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
        }
    }


def _quantities(tenant: Tenant, gpus: dict[str, int]) -> dict[str, str]:
    # Zeros stay: Volcano reads a resource missing from `capability` as unlimited.
    out = {name: str(n) for name, n in sorted(gpus.items())}
    return {"cpu": str(tenant.resources.cpu), "memory": f"{tenant.resources.memory_gib}Gi", **out}


def queue(spec: PlatformSpec, catalog: Catalog, tenant: Tenant) -> Manifest:
    """The tenant's Volcano Queue: weight = fair-share weight, capability = quota ceiling, deserved = guarantee = nominal.

    Volcano's queue webhook (validate_queue.go validateResourceQuantityOfQueue) refuses a guarantee
    without a deserved amount for the same resource, and wants guarantee <= deserved <= capability.
    """
    nominal = {k: str(v) for k, v in sorted(nominal_resources(spec, catalog, tenant).items()) if v > 0}
    body = {
        "weight": tenant.fair_share_weight,
        "capability": _quantities(tenant, ceiling_resources(spec, catalog, tenant)),
        "deserved": dict(nominal),
        "guarantee": {"resource": nominal},
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
            create(f"{name}-queue-{t.name}", queue(spec, args.catalog, t), crd)
        self.register_outputs({})
