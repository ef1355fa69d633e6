"""Security-group reach between network interfaces, as EC2 evaluates it, over the planned rules.

Amazon VPC User Guide, "Security group rules" and "Control traffic to your AWS resources using
security groups":
- security groups are stateful: a flow an interface may start (its groups' egress rules) and the
  peer may accept (the peer's groups' ingress rules) gets its responses back whatever the rules say;
- rules only allow; an interface's groups are evaluated together (any rule of any group allows);
- a rule whose source/destination is a security group matches any interface that carries that
  group (the group's members), not the group's own rules;
- IpProtocol "-1" (or "all") means every protocol and every port; a port range applies to TCP/UDP.
EC2 User Guide, "Get started with EFA and NCCL" > "Prepare an EFA-enabled security group": EFA's
OS-bypass traffic needs rules that allow all traffic to and from the security group itself, so
here EFA traffic is matched only by all-protocol rules that reference a group, never by CIDR rules.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gpu_platform.behaviour.wiring import UNKNOWN, ByValue, Ids, label

INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
LEGACY_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
ALL = "-1"
PROTOCOL_NUMBERS = {"tcp": "6", "udp": "17", "icmp": "1", "all": ALL}


class PlannedLike(Protocol):
    """What the functions read of a planned resource (engine.PlannedResource or a policy Resource)."""

    @property
    def type(self) -> str:
        """Pulumi type token."""

    @property
    def name(self) -> str:
        """Logical name."""

    @property
    def inputs(self) -> Mapping[str, Any]:
        """Wire inputs (camelCase)."""


@dataclass(frozen=True)
class Rule:
    """One security-group rule: the group it belongs to, direction, protocol, ports and peer."""

    resource: str
    group_id: str
    direction: str  # "ingress" or "egress"
    protocol: str  # "-1" for all, else the protocol number as text
    from_port: int | None
    to_port: int | None
    cidr: str | None = None
    peer_group: str | None = None

    @property
    def all_traffic(self) -> bool:
        """True when the rule covers every protocol and port."""
        return self.protocol == ALL

    @property
    def self_referencing(self) -> bool:
        """True when the rule's peer is its own group (the EFA guide's "to and from the security group itself")."""
        return self.peer_group is not None and self.peer_group == self.group_id


@dataclass(frozen=True)
class Interface:
    """A network interface as security groups see it: the groups it carries and its address, if any."""

    name: str
    groups: tuple[str, ...]
    address: str | None = None  # efa-only interfaces have none (botocore ec2 InterfaceType)
    kind: str = "interface"  # EC2 InterfaceType: interface, efa or efa-only

    @property
    def efa(self) -> bool:
        """True when the interface carries an EFA device (efa or efa-only)."""
        return self.kind in ("efa", "efa-only")


def _protocol(value: Any) -> str:
    text = str(value if value is not None else ALL).lower()
    return PROTOCOL_NUMBERS.get(text, text)


def _port(value: Any) -> int | None:
    return None if value is None else int(float(value))


def rules_of(plan: Iterable[PlannedLike], ids: Ids | None = None) -> list[Rule]:
    """Every security-group rule of the plan: standalone ingress/egress rule resources and legacy SecurityGroupRules.

    Groups are the ids the inputs hold (behaviour.wiring.ByValue), or with Wiring the groups those inputs name.
    """
    follow = ids or ByValue(())

    def group(r: PlannedLike, key: str) -> str | None:
        return follow.target(r, key) or (UNKNOWN if r.inputs.get(key) is not None else None)

    out: list[Rule] = []
    for r in plan:
        i = r.inputs
        if r.type in (INGRESS_RULE, EGRESS_RULE):
            out.append(
                Rule(
                    r.name,
                    str(group(r, "securityGroupId")),
                    "ingress" if r.type == INGRESS_RULE else "egress",
                    _protocol(i.get("ipProtocol")),
                    _port(i.get("fromPort")),
                    _port(i.get("toPort")),
                    cidr=i.get("cidrIpv4"),
                    peer_group=group(r, "referencedSecurityGroupId"),
                )
            )
        elif r.type == LEGACY_RULE:
            own = str(group(r, "securityGroupId"))
            peer = own if i.get("self") in (True, "true") else group(r, "sourceSecurityGroupId")
            cidrs = list(i.get("cidrBlocks") or []) or [None]
            for cidr in cidrs:
                ports = (_port(i.get("fromPort")), _port(i.get("toPort")))
                out.append(Rule(r.name, own, str(i.get("type")), _protocol(i.get("protocol")), *ports, cidr, peer))
    return out


def _covers(rule: Rule, protocol: str, port: int | None) -> bool:
    """The rule's protocol and port range include the traffic ("-1" covers everything)."""
    if rule.all_traffic:
        return True
    if protocol == ALL or rule.protocol != protocol:
        return False  # a single-protocol rule never admits "all traffic"
    if port is None or rule.from_port is None or rule.to_port is None:
        return True
    return rule.from_port <= port <= rule.to_port


def _matches_peer(rule: Rule, peer: Interface, efa: bool) -> bool:
    """The rule's source/destination is the peer: a group the peer carries, or (IP only) a CIDR holding its address."""
    if rule.peer_group is not None:
        return rule.peer_group in peer.groups
    if efa or rule.cidr is None or peer.address is None:
        return False
    return ipaddress.ip_address(peer.address) in ipaddress.ip_network(rule.cidr, strict=False)


def allowing(rules: Iterable[Rule], local: Interface, peer: Interface, direction: str, protocol: str, port: int | None, efa: bool) -> list[Rule]:
    """The rules of `local`'s groups, in `direction`, that admit this traffic to or from `peer`."""
    proto = _protocol(protocol)
    return [
        r
        for r in rules
        if r.direction == direction
        and r.group_id in local.groups
        and _covers(r, proto, port)
        and _matches_peer(r, peer, efa)
        and (not efa or (r.all_traffic and r.peer_group is not None))
    ]


@dataclass(frozen=True)
class Verdict:
    """Whether a flow is allowed, and at which stage it stops when not."""

    allowed: bool
    stage: str  # "egress" or "ingress" where it stops; "" when allowed
    reason: str


def groups_text(interface: Interface) -> str:
    """The groups an interface carries, as a user reads them (behaviour.wiring.label)."""
    return ", ".join(label(g) for g in interface.groups)


def flow(rules: list[Rule], src: Interface, dst: Interface, protocol: str = ALL, port: int | None = None, efa: bool = False) -> Verdict:
    """Can `src` start this flow to `dst`? Egress of src's groups, then ingress of dst's groups (replies are stateful)."""
    what = "EFA traffic" if efa else ("all traffic" if _protocol(protocol) == ALL else f"protocol {protocol} port {port}")
    if not allowing(rules, src, dst, "egress", protocol, port, efa):
        return Verdict(
            False, "egress", f"no egress rule of {src.name}'s groups [{groups_text(src)}] admits {what} to {dst.name} [{groups_text(dst)}]"
        )
    if not allowing(rules, dst, src, "ingress", protocol, port, efa):
        return Verdict(
            False, "ingress", f"no ingress rule of {dst.name}'s groups [{groups_text(dst)}] admits {what} from {src.name} [{groups_text(src)}]"
        )
    return Verdict(True, "", "")


def exchange_all(rules: list[Rule], a: Interface, b: Interface, efa: bool) -> Verdict:
    """Both sides may start any flow to the other (what NCCL needs between two nodes of a training job)."""
    there = flow(rules, a, b, ALL, None, efa)
    return there if not there.allowed else flow(rules, b, a, ALL, None, efa)


def launch_template_interfaces(template: PlannedLike, node: str, ids: Ids | None = None) -> list[Interface]:
    """The interfaces one node of a launch template gets, with the groups each carries.

    EC2 CreateLaunchTemplate: NetworkInterfaces[].Groups per interface, else the template's
    SecurityGroupIds on the primary interface. Addresses are left to the caller. Groups are the ids the
    inputs hold (behaviour.wiring.ByValue), or with Wiring the groups those inputs name.
    """
    follow = ids or ByValue(())

    def groups(key: str, values: Any) -> tuple[str, ...]:
        return follow.targets(template, key, values if values is not None else [])

    out = []
    interfaces = template.inputs.get("networkInterfaces")
    # Wholly unknown during a preview (the list, or one interface): nothing to read of it.
    for ni in interfaces if isinstance(interfaces, list) else []:
        if not isinstance(ni, Mapping):
            continue
        kind = str(ni.get("interfaceType") or "interface")
        where = f"{node}/card{int(ni.get('networkCardIndex') or 0)}-dev{int(ni.get('deviceIndex') or 0)}-{kind}"
        out.append(Interface(where, groups("networkInterfaces", ni.get("securityGroups")), kind=kind))
    if not out:
        out.append(Interface(f"{node}/primary", groups("vpcSecurityGroupIds", template.inputs.get("vpcSecurityGroupIds"))))
    return out


def self_group(rules: Iterable[Rule], interface: Interface) -> str | None:
    """A group the interface carries with all-traffic ingress and egress rules that reference itself, else None.

    EC2 User Guide, "Prepare an EFA-enabled security group": one group, "Allow all inbound traffic from the
    security group itself" and "all outbound traffic to the security group itself".
    """
    rules = list(rules)
    for group in interface.groups:
        mine = [r for r in rules if r.group_id == group and r.all_traffic and r.self_referencing]
        if {r.direction for r in mine} == {"ingress", "egress"}:
            return group
    return None


def eks_cluster_group_rules(group_id: str) -> list[Rule]:
    """The rules EKS itself puts on the cluster security group it creates (not in any plan).

    EKS user guide, "View Amazon EKS security group requirements for clusters" > default rules:
    inbound all protocols and ports from the group itself; outbound all protocols and ports to 0.0.0.0/0.
    """
    return [
        Rule("eks-cluster-sg-default-ingress", group_id, "ingress", ALL, None, None, peer_group=group_id),
        Rule("eks-cluster-sg-default-egress", group_id, "egress", ALL, None, None, cidr="0.0.0.0/0"),
    ]


# hashicorp/terraform-provider-aws internal/service/ec2/vpc_security_group_ingress_rule.go,
# securityGroupIngressRuleResource.create, and vpc_security_group_egress_rule.go,
# securityGroupEgressRuleResource.create: one rule resource is one EC2 call on its own group.
AUTHORIZE_CALL = {INGRESS_RULE: "AuthorizeSecurityGroupIngress", EGRESS_RULE: "AuthorizeSecurityGroupEgress"}


def authorize_request(type_token: str, inputs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The EC2 operation and parameters the provider sends to create one ingress or egress rule resource.

    terraform-provider-aws vpc_security_group_ingress_rule.go, securityGroupRuleResourceModel.expandIPPermission:
    GroupId is `security_group_id`; one IpPermission with IpProtocol, FromPort/ToPort when set, and the one
    peer (ExactlyOneOf in ConfigValidators) as IpRanges, Ipv6Ranges, PrefixListIds or UserIdGroupPairs
    (`[UserID/]GroupID`), each entry carrying the rule's description. Tags are left out: newer provider
    versions send them as TagSpecifications, older ones by CreateTags afterwards.
    """
    described = {"Description": inputs["description"]} if inputs.get("description") is not None else {}
    permission: dict[str, Any] = {"IpProtocol": str(inputs["ipProtocol"])}
    for key, api in (("fromPort", "FromPort"), ("toPort", "ToPort")):
        if inputs.get(key) is not None:
            permission[api] = int(inputs[key])
    if inputs.get("cidrIpv4") is not None:
        permission["IpRanges"] = [{"CidrIp": inputs["cidrIpv4"], **described}]
    if inputs.get("cidrIpv6") is not None:
        permission["Ipv6Ranges"] = [{"CidrIpv6": inputs["cidrIpv6"], **described}]
    if inputs.get("prefixListId") is not None:
        permission["PrefixListIds"] = [{"PrefixListId": inputs["prefixListId"], **described}]
    if inputs.get("referencedSecurityGroupId") is not None:
        parts = str(inputs["referencedSecurityGroupId"]).split("/")
        pair = {"GroupId": parts[1], "UserId": parts[0]} if len(parts) == 2 else {"GroupId": parts[0]}
        permission["UserIdGroupPairs"] = [{**pair, **described}]
    return AUTHORIZE_CALL[type_token], {"GroupId": str(inputs["securityGroupId"]), "IpPermissions": [permission]}
