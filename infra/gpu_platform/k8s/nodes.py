"""On-prem pools: label and taint existing bare-metal nodes through the Kubernetes API.

EKS node groups carry these labels and taints from their node group definition; on-prem nodes
get exactly the same ones (from gpu_platform.pools) by server-side-apply node patches.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.catalog import Catalog
from gpu_platform.pools import node_labels, node_taints
from gpu_platform.spec.models import NodePool


@dataclass(frozen=True)
class BareMetalPoolArgs:
    """Inputs of one BareMetalPool component."""

    pool: NodePool
    catalog: Catalog
    provider: k8s.Provider


class BareMetalPool(pulumi.ComponentResource):
    """One NodePatch per node of an on-prem pool, carrying the pool's labels and taints."""

    def __init__(self, name: str, args: BareMetalPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:BareMetalPool", name, None, opts)
        labels = node_labels(args.pool, args.catalog)
        taints = [k8s.core.v1.TaintPatchArgs(key=t.key, value=t.value, effect=t.effect) for t in node_taints(args.pool)]
        for node in args.pool.nodes:
            k8s.core.v1.NodePatch(
                f"{name}-{node}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=node,
                    labels=labels,
                    annotations={"pulumi.com/patchForce": "true"},
                ),
                spec=k8s.core.v1.NodeSpecPatchArgs(taints=taints),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, retain_on_delete=True),
            )
        self.register_outputs({})
