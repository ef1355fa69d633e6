"""How `pulumi up` reaches the EKS API it creates: the deploy path of a stack, as data and as steps.

The Kubernetes half of the program (GPU Operator, Kueue, tenants, ...) is applied through the new
cluster's API endpoint by whatever machine runs `pulumi up`, so that machine must be able to reach
the endpoint in the same run that creates it.
"""

from __future__ import annotations

from gpu_platform.spec.models import PlatformSpec


def unreachable_reason(spec: PlatformSpec) -> str | None:
    """Why the machine running `pulumi up` cannot reach the cluster's API, or None when it can.

    EKS user guide, "Cluster API server endpoint": a private endpoint answers only inside the VPC and
    networks connected to it (peering, Transit Gateway, VPN) whose traffic the cluster security group
    admits; a public endpoint answers from the listed CIDRs. A VPC this stack creates has no such
    connection when the run starts, so a private-only endpoint there is reachable by nobody.
    """
    c = spec.cluster
    if c.provider != "eks":
        return None
    if not c.endpoint_private_access and not c.endpoint_public_access:
        return "both endpointPrivateAccess and endpointPublicAccess are off (EKS needs one)"
    if c.endpoint_public_access:
        return None
    if spec.network.mode == "new":
        return "the API is private-only in a VPC this stack creates, so nothing outside it (laptop, CI runner) can reach it during `pulumi up`"
    if not c.deployer_cidrs:
        return "the API is private-only and no deployerCidrs say which routed network `pulumi up` runs from"
    return None


def deploy_steps(spec: PlatformSpec) -> list[str]:
    """The documented deploy path of an EKS stack, step by step (empty for an existing cluster)."""
    c = spec.cluster
    if c.provider != "eks":
        return []
    stack = spec.stack
    steps = ["Credentials: an AWS identity allowed to create the VPC/EKS/IAM resources (`aws sts get-caller-identity`)."]
    if c.endpoint_public_access:
        cidrs = ", ".join(c.public_access_cidrs) or "0.0.0.0/0 (everyone)"
        steps.append(f"Run from a machine whose egress address is in cluster.publicAccessCidrs ({cidrs}); the public endpoint admits only those.")
        if c.endpoint_private_access:
            steps.append("Nodes and pods reach the API through its private endpoint inside the VPC; nothing else is exposed.")
    else:
        cidrs = ", ".join(c.deployer_cidrs)
        steps.append(
            f"Run from a network routed to VPC {spec.network.vpc_id} (VPN, peering or Transit Gateway) inside cluster.deployerCidrs "
            f"({cidrs}): the stack opens TCP 443 to exactly those on a control-plane security group that no node carries."
        )
    steps += [
        f"`gpu-platform check --stack {stack}` (the offline gate), then `pulumi preview --stack {stack}`.",
        f"`pulumi up --stack {stack}`: AWS resources first, then the Kubernetes resources through the new endpoint.",
        f"`pulumi stack output kubeconfig --stack {stack} --show-secrets > kubeconfig` for kubectl (it authenticates with `aws eks get-token`).",
    ]
    return steps
