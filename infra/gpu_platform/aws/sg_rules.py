"""Security-group rules between groups, or from/to a CIDR: the rule's arguments as data, then its one resource.

Every rule the program writes is a standalone `aws.vpc.SecurityGroupIngressRule` or
`SecurityGroupEgressRule` (one EC2 security-group rule per resource; the provider turns it into one
AuthorizeSecurityGroupIngress/Egress call, `gpu_platform.behaviour.security_groups.authorize_request`).
`sg_rule` builds the resource's type and keyword arguments without Pulumi; `add_sg_rule` registers it.
The EFA group, the interface endpoints' group, the control-plane group and the FSx for Lustre group use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi_aws as aws

from gpu_platform.behaviour.security_groups import EGRESS_RULE, INGRESS_RULE

ALL_TRAFFIC = "-1"  # EC2 API IpPermission.IpProtocol: "-1" means all protocols (ports must then be unset)
Direction = Literal["ingress", "egress"]


@dataclass(frozen=True)
class SgRule:
    """One security-group rule as data: its Pulumi type token, logical name and resource keyword arguments."""

    type: str
    name: str
    args: Mapping[str, Any]


def sg_rule(
    name: str,
    direction: Direction,
    group_id: pulumi.Input[str],
    *,
    description: str,
    tags: Mapping[str, str],
    peer_group_id: pulumi.Input[str] | None = None,
    cidr_ipv4: str | None = None,
    protocol: str = ALL_TRAFFIC,
    ports: tuple[int, int] | None = None,
) -> SgRule:
    """A rule on `group_id` admitting `protocol` (and `ports`, inclusive) from/to the peer group or the CIDR.

    Exactly one peer, as the provider's ConfigValidators require (ExactlyOneOf cidr_ipv4, cidr_ipv6,
    prefix_list_id, referenced_security_group_id); ports only with a single protocol, because "-1"
    already means every port.
    """
    if (peer_group_id is None) == (cidr_ipv4 is None):
        raise ValueError(f"security-group rule {name}: give exactly one of peer_group_id and cidr_ipv4")
    if (protocol == ALL_TRAFFIC) != (ports is None):
        raise ValueError(f"security-group rule {name}: ports go with a single protocol, never with all traffic ({protocol!r}, {ports})")
    args: dict[str, Any] = {"security_group_id": group_id}
    if peer_group_id is not None:
        args["referenced_security_group_id"] = peer_group_id
    else:
        args["cidr_ipv4"] = cidr_ipv4
    args["ip_protocol"] = protocol
    if ports is not None:
        args["from_port"], args["to_port"] = ports
    args["description"] = description
    args["tags"] = tags
    return SgRule(INGRESS_RULE if direction == "ingress" else EGRESS_RULE, name, args)


def add_sg_rule(rule: SgRule, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Register the rule as its ingress or egress rule resource, with the caller's options (parent)."""
    kind = aws.vpc.SecurityGroupIngressRule if rule.type == INGRESS_RULE else aws.vpc.SecurityGroupEgressRule
    return kind(rule.name, **rule.args, opts=opts)
