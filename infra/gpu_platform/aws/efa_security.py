"""The security group every EFA interface carries: all traffic to and from its own members.

EC2 User Guide, "Get started with EFA and NCCL" > "Prepare an EFA-enabled security group": "The
security group must allow all inbound and outbound traffic to and from the security group itself."
EFA's OS-bypass (SRD) traffic is matched only by rules that reference the group, so the EKS cluster
group (inbound from itself, outbound to 0.0.0.0/0) does not carry it, and NCCL fails with
unresponsive receivers or falls back to TCP sockets.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpu_platform.aws.sg_rules import add_sg_rule, sg_rule


@dataclass(frozen=True)
class EfaSecurityGroupArgs:
    """Inputs of the EfaSecurityGroup component."""

    vpc_id: pulumi.Input[str]
    cluster_name: str
    tags: dict[str, str]


class EfaSecurityGroup(pulumi.ComponentResource):
    """A security group with an all-traffic ingress and an all-traffic egress rule referencing itself."""

    def __init__(self, name: str, args: EfaSecurityGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:EfaSecurityGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"EFA interfaces of {args.cluster_name}: all traffic to and from members of this group",
            tags={**args.tags, "Name": f"{args.cluster_name}-efa"},
            opts=child,
        )
        # One rule each way, both naming the group itself as the peer: members reach members, nothing else.
        inbound = sg_rule(
            f"{name}-self-ingress", "ingress", sg.id, peer_group_id=sg.id, description="EFA: all traffic from members of this group", tags=args.tags
        )
        outbound = sg_rule(
            f"{name}-self-egress", "egress", sg.id, peer_group_id=sg.id, description="EFA: all traffic to members of this group", tags=args.tags
        )
        add_sg_rule(inbound, child)
        add_sg_rule(outbound, child)
        self.security_group_id = sg.id
        self.register_outputs({"security_group_id": sg.id})
