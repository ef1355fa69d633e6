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

ALL_TRAFFIC = "-1"  # EC2 API IpPermission.IpProtocol: "-1" means all protocols (ports must then be unset)


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
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-self-ingress",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol=ALL_TRAFFIC,
            description="EFA: all traffic from members of this group",
            tags=args.tags,
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-self-egress",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol=ALL_TRAFFIC,
            description="EFA: all traffic to members of this group",
            tags=args.tags,
            opts=child,
        )
        self.security_group_id = sg.id
        self.register_outputs({"security_group_id": sg.id})
