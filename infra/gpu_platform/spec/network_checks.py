"""Cross-field rules of the tenant network and storage settings, each with the exact key path it concerns."""

from __future__ import annotations

import ipaddress

from gpu_platform.behaviour.networkpolicy import carves
from gpu_platform.behaviour.storage import fsx_lustre_parameter_problems
from gpu_platform.errors import Problem
from gpu_platform.spec.models import PlatformSpec

P = "gpu-platform:"


def _stray_excepts(cidrs: tuple[str, ...], excepted: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """(index, why, allowed) for each `except` range that carves nothing out of `cidrs`.

    Kubernetes takes an ipBlock's `except` only as a strict subset of its `cidr` (behaviour.networkpolicy.carves,
    ValidateIPBlock); the program puts each range only into the blocks it carves (k8s.tenant_network._block). A
    range that carves none of them would be dropped, and the destinations it was meant to exclude opened.
    """
    nets = [ipaddress.ip_network(c) for c in cidrs]
    allowed = "allowed: ranges strictly inside one of cidrs; to open nothing there, remove the cidr"
    out = []
    for k, text in enumerate(excepted):
        if ipaddress.ip_network(text) in nets:  # its own block opens it whole: a rule's peers are ORed (NetworkPolicyEgressRule `to`)
            out.append((k, f"{text} is also one of cidrs, which opens it whole", allowed))
        elif not any(carves(text, c) for c in cidrs):
            out.append((k, f"{text} is not strictly inside any of cidrs {list(cidrs)}, so it would exclude nothing", allowed))
    return out


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
            if e.cidrs:
                out += [Problem(file, f"{at}.egress[{j}].except[{k}]", why, allowed) for k, why, allowed in _stray_excepts(e.cidrs, e.except_)]
        if not spec.is_eks and t.network.ingress.vpc:
            out.append(Problem(file, f"{at}.ingress.vpc", "a VPC CIDR exists only on EKS stacks", "allowed: false; use namespaces"))
        elif t.network.ingress.vpc and not t.network.ingress.ports:
            # A NetworkPolicy rule with no ports admits every port: every address of the VPC, nodes included.
            out.append(
                Problem(
                    file,
                    f"{at}.ingress.ports",
                    "ingress.vpc with no ports admits the whole VPC on every port",
                    "allowed: the ports the tenant serves, e.g. [8080]",
                )
            )
        lb = t.network.ingress.load_balancers
        if lb is not None and not (spec.is_eks and spec.cluster.load_balancer_controller):
            why = "the AWS Load Balancer Controller runs only on EKS stacks" if not spec.is_eks else "cluster.loadBalancerController is false"
            out.append(Problem(file, f"{at}.ingress.loadBalancers", why, "allowed: leave it out, or install the controller on an EKS stack"))
        elif lb is not None and not t.network.ingress.ports:
            out.append(
                Problem(
                    file,
                    f"{at}.ingress.ports",
                    f"ingress.loadBalancers with no ports admits the {lb} subnets on every port",
                    "allowed: the ports the load balancers' targets listen on, e.g. [8080]",
                )
            )
        if t.network.ingress.ports and not (t.network.ingress.namespaces or t.network.ingress.vpc or lb):
            out.append(
                Problem(
                    file, f"{at}.ingress.ports", "ports given but no source", "allowed: with ingress.loadBalancers, ingress.namespaces or ingress.vpc"
                )
            )
    if spec.monitoring.prometheus == "install" and spec.storage_class is None:
        out.append(
            Problem(
                file,
                f"{P}storage.className",
                "required where the stack installs Prometheus on an existing cluster (its claim must name a class)",
                "allowed: the name of a StorageClass the cluster has (kubectl get storageclass)",
            )
        )
    return out + check_fsx_lustre(spec, file)


def check_fsx_lustre(spec: PlatformSpec, file: str) -> list[Problem]:
    """`storage.fsxLustre`: EKS only, a cluster zone, and parameters the FSx CSI driver and FSx accept (behaviour.storage)."""
    fsx = spec.storage.fsx_lustre
    at = f"{P}storage.fsxLustre"
    if not fsx.enabled:
        return []
    if not spec.is_eks:
        return [Problem(file, f"{at}.enabled", "FSx for Lustre is created by EKS stacks only", "allowed: false (a cluster has its own)")]
    out: list[Problem] = []
    zones = spec.network.zones()
    if fsx.zone is not None and fsx.zone not in zones:
        out.append(Problem(file, f"{at}.zone", f"{fsx.zone!r} is not a zone of the cluster", f"allowed: {', '.join(zones)}"))
    if fsx.class_name == spec.storage_class:
        out.append(Problem(file, f"{at}.className", f"{fsx.class_name!r} is the default (EBS) class's name", "allowed: another, e.g. fsx-lustre"))
    elif fsx.class_name == spec.retain_storage_class:
        out.append(Problem(file, f"{at}.className", f"{fsx.class_name!r} is the retained EBS class's name", "allowed: another, e.g. fsx-lustre"))
    parameters = {"subnetId": "subnet-0", "securityGroupIds": "sg-0", "deploymentType": fsx.deployment_type}
    parameters["dataCompressionType"] = fsx.data_compression_type
    if fsx.throughput is not None:
        parameters["perUnitStorageThroughput"] = str(fsx.throughput)
    # The parameters the class will carry, judged as the driver and FSx judge them; their names are the keys'.
    for key, why in fsx_lustre_parameter_problems(parameters):
        what, _, allowed = why.partition("; ")
        out.append(Problem(file, f"{at}.{key}", what, allowed))
    return out
