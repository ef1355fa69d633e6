"""Cross-field rules of the tenant network and storage settings, each with the exact key path it concerns."""

from __future__ import annotations

from gpu_platform.errors import Problem
from gpu_platform.spec.models import PlatformSpec

P = "gpu-platform:"


def check_network_and_storage(spec: PlatformSpec, file: str) -> list[Problem]:
    """API server addresses where tenants need them, EKS-only settings off EKS, a class for every claim."""
    out: list[Problem] = []
    cluster = f"{P}cluster"
    if spec.is_eks:
        if spec.cluster.api_server_cidrs:
            out.append(Problem(file, f"{cluster}.apiServerCidrs", "only for cluster.provider existing", "remove it (EKS: the VPC)"))
    elif spec.tenants and not spec.cluster.api_server_cidrs:
        out.append(
            Problem(
                file,
                f"{cluster}.apiServerCidrs",
                "required for tenants on an existing cluster (their default-deny egress needs the API servers' addresses)",
                "allowed: the CIDRs of the `kubernetes` Service's endpoints, e.g. [10.0.0.10/32]",
            )
        )
    for i, t in enumerate(spec.tenants):
        at = f"{P}tenants[{i}].network"
        for j, e in enumerate(t.network.egress):
            if not e.cidrs:
                out.append(Problem(file, f"{at}.egress[{j}].cidrs", "no destination", "allowed: one or more CIDRs, e.g. [0.0.0.0/0]"))
            if not e.ports:
                out.append(Problem(file, f"{at}.egress[{j}].ports", "no ports", "allowed: one or more of 1..65535"))
        if not spec.is_eks and t.network.ingress.vpc:
            out.append(Problem(file, f"{at}.ingress.vpc", "a VPC CIDR exists only on EKS stacks", "allowed: false; use namespaces"))
        if t.network.ingress.ports and not (t.network.ingress.namespaces or t.network.ingress.vpc):
            out.append(Problem(file, f"{at}.ingress.ports", "ports given but no source", "allowed: with ingress.namespaces or ingress.vpc"))
    if spec.monitoring.prometheus == "install" and spec.storage_class is None:
        out.append(
            Problem(
                file,
                f"{P}storage.className",
                "required where the stack installs Prometheus on an existing cluster (its claim must name a class)",
                "allowed: the name of a StorageClass the cluster has (kubectl get storageclass)",
            )
        )
    return out
