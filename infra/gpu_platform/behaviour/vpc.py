"""Where traffic from a private subnet goes: route tables, gateway endpoints, interface endpoints' DNS.

Amazon VPC User Guide, "Route tables" > "Route priority": the most specific route that matches the
destination wins; "Subnet route tables": a subnet uses the route table explicitly associated with it.
AWS PrivateLink guide, "Gateway endpoints": a gateway endpoint adds, to each route table it is
associated with, a route whose destination is the service's prefix list (more specific than
0.0.0.0/0), so S3 traffic from those subnets goes to the endpoint and not to a NAT gateway.
AWS PrivateLink guide, "Access an AWS service using an interface VPC endpoint" > "DNS hostnames":
with private DNS enabled, the service's default DNS name resolves to the endpoint's private addresses
inside the VPC; this needs the VPC attributes enableDnsHostnames and enableDnsSupport both true.
AWS PrivateLink guide, "Control access to VPC endpoints using endpoint policies": an endpoint's policy is a
resource policy every request through it must pass; "If you don't attach a policy when you create an
endpoint, we attach a default policy for you that allows full access to the service."
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform.behaviour.wiring import ByValue, Ids, label
from gpu_platform.plan_ids import planned_id

ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
VPC = "aws:ec2/vpc:Vpc"
ROUTE = "aws:ec2/route:Route"
ENDPOINT_TABLE_ASSOCIATION = "aws:ec2/vpcEndpointRouteTableAssociation:VpcEndpointRouteTableAssociation"
# A route's target key by the type of the gateway resource it is built from.
GATEWAY_KEYS = {"aws:ec2/natGateway:NatGateway": "natGatewayId", "aws:ec2/internetGateway:InternetGateway": "gatewayId"}


def truthy(value: Any) -> bool:
    """Wire booleans arrive as bools or as the strings "true"/"false"."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def private_dns_names(region: str) -> dict[str, str]:
    """Service suffix -> the hostname pattern its interface endpoint's private DNS answers for."""
    return {
        "ecr.api": f"api.ecr.{region}.amazonaws.com",
        "ecr.dkr": f"*.dkr.ecr.{region}.amazonaws.com",
        "sts": f"sts.{region}.amazonaws.com",
    }


@dataclass(frozen=True)
class Hop:
    """Where a destination's traffic leaves the subnet: the target kind and the resource or id."""

    kind: str  # "gateway-endpoint", "nat-gateway", "internet-gateway", "none"
    target: str
    route_table: str | None


def route_table_of(plan: list[Any], subnet: str, ids: Ids | None = None) -> Any | None:
    """The route table explicitly associated with the subnet (None: the VPC's main table, which the plan does not show).

    `subnet` is an identity of `ids` (behaviour.wiring): an id with the default ByValue, a resource with Wiring.
    """
    ids = ids or ByValue(plan)
    for r in plan:
        if r.type == ASSOCIATION and ids.target(r, "subnetId") == subnet:
            return ids.resource(ids.target(r, "routeTableId"), ROUTE_TABLE)
    return None


def routes_of(plan: list[Any], table: Any, ids: Ids) -> list[tuple[Any, Mapping[str, Any]]]:
    """(resource the route is an input of, route) for every route of a table.

    Its inline `routes`, and standalone Route resources on it (terraform-provider-aws: a table's inline routes
    and aws_route resources both write the same table).
    """
    inline = table.inputs.get("routes")
    if isinstance(inline, list):
        out: list[tuple[Any, Mapping[str, Any]]] = [(table, route) for route in inline if isinstance(route, Mapping)]
    else:
        # The whole set unknown (a first preview may show a block set so): the gateways it was built from are its routes'
        # targets, and a route to a NAT or internet gateway in a private table is the default route.
        targets = ids.targets(table, "routes") if inline is not None else ()
        out = [(table, {"cidrBlock": "0.0.0.0/0", key: t}) for t in targets for typ, key in GATEWAY_KEYS.items() if t.startswith(f"{typ}::")]
    me = ids.of(table)
    out += [(r, r.inputs) for r in plan if r.type == ROUTE and ids.target(r, "routeTableId") == me]
    return out


def _target(ids: Ids, owner: Any, route: Mapping[str, Any], key: str) -> str:
    """A route's target as a user reads it: the id, or (unknown during a first preview) the resource it comes from."""
    if owner.type == ROUTE:
        named = ids.target(owner, key)
        return label(named) if named else str(route.get(key))
    return ", ".join(label(t) for t in ids.targets(owner, "routes", [route.get(key)])) or str(route.get(key))


def _routes_s3(plan: list[Any], endpoint: Any, table: Any, ids: Ids) -> bool:
    """The gateway endpoint is associated with the table: its `routeTableIds`, or a VpcEndpointRouteTableAssociation."""
    me = ids.of(table)
    if ids.names(endpoint, "routeTableIds", me):
        return True
    return any(
        a.type == ENDPOINT_TABLE_ASSOCIATION and ids.target(a, "routeTableId") == me and ids.target(a, "vpcEndpointId") == ids.of(endpoint)
        for a in plan
    )


def s3_hop(plan: list[Any], subnet: str, region: str, ids: Ids | None = None) -> Hop:
    """Where S3 traffic (`com.amazonaws.<region>.s3`) from this subnet goes."""
    ids = ids or ByValue(plan)
    table = route_table_of(plan, subnet, ids)
    if table is None:
        return Hop("none", f"no route table is associated with {label(subnet)}", None)
    service = f"com.amazonaws.{region}.s3"
    for r in plan:
        i = r.inputs
        if r.type == VPC_ENDPOINT and i.get("serviceName") == service and i.get("vpcEndpointType") == "Gateway" and _routes_s3(plan, r, table, ids):
            return Hop("gateway-endpoint", r.name, table.name)
    for owner, route in routes_of(plan, table, ids):
        if (route.get("cidrBlock") or route.get("destinationCidrBlock")) != "0.0.0.0/0":
            continue
        if route.get("natGatewayId"):
            return Hop("nat-gateway", _target(ids, owner, route, "natGatewayId"), table.name)
        if route.get("gatewayId"):
            return Hop("internet-gateway", _target(ids, owner, route, "gatewayId"), table.name)
    return Hop("none", "no route matches S3's addresses", table.name)


# An Availability Zone's name is its Region's code and a letter (us-east-1a); a Local Zone's or Wavelength
# Zone's name puts a location between them (us-east-1-bos-1a, us-east-1-wl1-bos-wlz-1). EC2 User Guide,
# "Regions and Zones" > "Availability Zones", "Local Zones".
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d+")


def region_of_zone(zone: str) -> str | None:
    """The Region an Availability, Local or Wavelength Zone belongs to, or None for what is not a zone name."""
    found = _REGION.match(zone)
    return found.group(0) if found else None


def resolve(plan: list[Any], vpc_id: str, hostname: str, region: str, id_of: Callable[[str], str] = planned_id) -> tuple[Any | None, str]:
    """The interface endpoint a hostname resolves to inside the VPC, or (None, why it resolves publicly).

    Reads ids as text (the offline plan's journeys): no gate rule asks it.
    """
    vpc = next((r for r in plan if r.type == VPC and id_of(r.name) == vpc_id), None)
    if vpc is not None and not (truthy(vpc.inputs.get("enableDnsSupport")) and truthy(vpc.inputs.get("enableDnsHostnames"))):
        return None, f"VPC {vpc.name} lacks enableDnsSupport and enableDnsHostnames, so private DNS names do not resolve"
    for service, pattern in private_dns_names(region).items():
        if not fnmatch.fnmatchcase(hostname, pattern):
            continue
        for r in plan:
            i = r.inputs
            if r.type == VPC_ENDPOINT and i.get("vpcId") == vpc_id and i.get("serviceName") == f"com.amazonaws.{region}.{service}":
                if i.get("vpcEndpointType") != "Interface":
                    return None, f"{r.name} is not an interface endpoint"
                if not truthy(i.get("privateDnsEnabled")):
                    return None, f"{r.name} has private DNS off, so {hostname} resolves to the public service"
                return r, ""
        return None, f"no interface endpoint for com.amazonaws.{region}.{service} in the VPC: {hostname} resolves to public addresses (through NAT)"
    return None, f"{hostname} is not a service with an interface endpoint here"


# The policy AWS attaches to an endpoint created without one (the guide's "Default endpoint policy").
DEFAULT_ENDPOINT_POLICY: dict[str, Any] = {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*"}]}


def endpoint_policy(endpoint: Any) -> str | dict[str, Any]:
    """The policy document requests through `endpoint` are judged by: its `policy`, else AWS's default (full access).

    Judge it with iam_policy.decide; statements naming specific principals are taken as applying to the caller.
    """
    return endpoint.inputs.get("policy") or DEFAULT_ENDPOINT_POLICY


def private_subnet_ids(plan: Iterable[Any]) -> list[str]:
    """Subnets the GPU and system node groups run in (their `subnetIds`), in plan order."""
    out: list[str] = []
    for r in plan:
        if r.type == "aws:eks/nodeGroup:NodeGroup":
            out += [s for s in r.inputs.get("subnetIds") or [] if s not in out]
    return out
