"""On-prem pools: label existing bare-metal nodes through the Kubernetes API, and declare their taints.

EKS node groups carry labels and taints from their node group definition. On-prem nodes get the same
labels (from gpu_platform.pools) by a server-side-apply node patch. Labels are a map, which
server-side apply owns key by key, so the patch owns only the platform's keys and leaves everyone
else's. Node `spec.taints` is an atomic list (Kubernetes OpenAPI `x-kubernetes-list-type: atomic`):
an apply that names it owns the whole list and a forced apply replaces it, stripping the taints
others put there (kubelet, node-problem-detector, an admin's `kubectl taint`). So the patch carries
the pool's taints only as the annotation `gpu-platform.io/taints`, and the Ansible role
`k8s_node_taints` merges them into each node with kubernetes.core.k8s_taint (read, then patch the
union); see gpu_platform.behaviour.ssa and gpu_platform.behaviour.kubernetes_core.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.catalog import Catalog
from gpu_platform.pools import ANNOTATION_INVENTORY, ANNOTATION_TAINTS, node_labels, taints_annotation
from gpu_platform.spec.models import NodePool


@dataclass(frozen=True)
class BareMetalPoolArgs:
    """Inputs of one BareMetalPool component."""

    pool: NodePool
    catalog: Catalog
    provider: k8s.Provider
    inventory: str | None = None
    """The stack's cluster.inventory, written on each node (ANNOTATION_INVENTORY)."""


class BareMetalPool(pulumi.ComponentResource):
    """One NodePatch per node of an on-prem pool: the pool's labels and its taints as an annotation (never spec.taints)."""

    def __init__(self, name: str, args: BareMetalPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:BareMetalPool", name, None, opts)
        labels = node_labels(args.pool, args.catalog)
        # patchForce: take over the platform's own label keys if another manager set them first.
        annotations = {"pulumi.com/patchForce": "true", ANNOTATION_TAINTS: taints_annotation(args.pool)}
        if args.inventory:
            annotations[ANNOTATION_INVENTORY] = args.inventory
        for node in args.pool.nodes:
            k8s.core.v1.NodePatch(
                f"{name}-{node}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=node, labels=labels, annotations=annotations),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, retain_on_delete=True),
            )
        self.register_outputs({})
