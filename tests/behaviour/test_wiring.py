"""gpu_platform.behaviour.wiring (references followed by Pulumi's property dependencies) and the VPC routing it serves.

The offline engine records the same map a real preview hands a stack policy (RegisterResourceRequest
propertyDependencies); these cases build resources the way each runner shows them: ids as text, AWS ids,
and all unknown.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.behaviour import vpc
from gpu_platform.behaviour.wiring import UNKNOWN, ByValue, Wiring, label, ref_key, urn_ref
from gpu_platform_policies import Resource
from tests.conftest import plan_for

SG = "aws:ec2/securityGroup:SecurityGroup"
RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = "aws:ec2/subnet:Subnet"
TABLE = "aws:ec2/routeTable:RouteTable"
ASSOC = "aws:ec2/routeTableAssociation:RouteTableAssociation"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
A, B = ref_key(SG, "a"), ref_key(SG, "b")


def test_a_urn_names_its_resource_by_type_and_logical_name() -> None:
    urn = "urn:pulumi:prod::gpu-platform::gpu:platform:Network$aws:ec2/subnet:Subnet::network-private-us-east-1a"
    assert urn_ref(urn) == "aws:ec2/subnet:Subnet::network-private-us-east-1a"
    assert label(urn_ref(urn)) == "network-private-us-east-1a"
    assert label(ref_key("aws:eks/cluster:Cluster", "cluster-eks")) == "cluster-eks's cluster security group"
    assert label("sg-0123") == "sg-0123"


def test_the_offline_engine_records_the_property_dependencies_a_preview_carries() -> None:
    """The recorder keeps each request's propertyDependencies: a rule's group, a node group's subnets."""
    plan = plan_for("prod")
    rule = plan.named("efa-self-ingress")
    assert rule.refs["securityGroupId"] == (ref_key(SG, "efa-sg"),)
    ng = plan.named("pool-train-h100-reserved-ng")
    assert ng.refs["subnetIds"] == (ref_key(SUBNET, "network-private-us-east-1a"),)
    lt = plan.named("pool-train-h100-reserved-lt")
    assert set(lt.refs["networkInterfaces"]) == {ref_key(SG, "efa-sg"), ref_key("aws:eks/cluster:Cluster", "cluster-eks")}


def plan(values: dict[str, Any]) -> list[Resource]:
    """Two groups, a rule on each (which teach the ids), and a template whose interfaces carry `values`."""
    return [
        Resource(SG, "a", None, {}),
        Resource(SG, "b", None, {}),
        Resource(RULE, "on-a", None, {"securityGroupId": values["a"]}, refs={"securityGroupId": (A,)}),
        Resource(RULE, "on-b", None, {"securityGroupId": values["b"]}, refs={"securityGroupId": (B,)}),
        Resource(LT, "lt", None, {"vpcSecurityGroupIds": values["lt"]}, refs={"vpcSecurityGroupIds": (A, B)}),
    ]


@pytest.mark.parametrize(
    ("values", "expect"),
    [
        ({"a": "sg-0aaa", "b": "sg-0bbb", "lt": ["sg-0aaa"]}, (A,)),  # a deployed stack: the id is learned from the rule on it
        ({"a": UNKNOWN, "b": UNKNOWN, "lt": [UNKNOWN]}, (A, B)),  # a first preview: the dependencies stand for the unknown id
        ({"a": UNKNOWN, "b": UNKNOWN, "lt": UNKNOWN}, (A, B)),  # a whole list unknown
        ({"a": "sg-0aaa", "b": "sg-0bbb", "lt": ["sg-0aaa", "sg-0ccc"]}, (A, "sg-0ccc")),  # an id the plan does not create stays itself
        ({"a": "x-id", "b": "x-id", "lt": ["x-id"]}, (A, B)),  # an id two resources claim names neither: the dependencies do
    ],
)
def test_a_list_input_names_the_resources_its_ids_belong_to(values: dict[str, Any], expect: tuple[str, ...]) -> None:
    res = plan(values)
    assert Wiring(res).targets(res[-1], "vpcSecurityGroupIds") == expect


def test_a_scalar_input_names_its_one_dependency_even_when_unknown() -> None:
    res = plan({"a": UNKNOWN, "b": "sg-0bbb", "lt": []})
    ids = Wiring(res)
    assert ids.target(res[2], "securityGroupId") == A
    assert ids.target(Resource(RULE, "r", None, {"securityGroupId": UNKNOWN}), "securityGroupId") is None  # built from nothing known
    assert ids.target(Resource(RULE, "r", None, {"securityGroupId": "sg-0bbb"}), "securityGroupId") == B  # learned from on-b
    assert ids.resource(A, SG) is res[0] and ids.resource(A, TABLE) is None


def test_a_group_read_from_another_cluster_output_is_not_the_cluster_group() -> None:
    """Once deployed, the cluster's state shows its group's id: a rule on another group read from the cluster is on that group."""
    cluster = ref_key("aws:eks/cluster:Cluster", "cluster-eks")
    deployed = Resource("aws:eks/cluster:Cluster", "cluster-eks", None, {"vpcConfig": {"clusterSecurityGroupId": "sg-0cluster"}})
    first = Resource("aws:eks/cluster:Cluster", "cluster-eks", None, {"vpcConfig": {"clusterSecurityGroupId": UNKNOWN}})
    on_group = Resource(RULE, "deployers", None, {"securityGroupId": "sg-0cp"}, refs={"securityGroupId": (cluster,)})
    on_cluster = Resource(RULE, "nodes", None, {"securityGroupId": "sg-0cluster"}, refs={"securityGroupId": (cluster,)})
    assert Wiring([deployed, on_group]).target(on_group, "securityGroupId") == "sg-0cp"
    assert Wiring([deployed, on_cluster]).target(on_cluster, "securityGroupId") == cluster
    assert Wiring([first, on_group]).target(on_group, "securityGroupId") == cluster, "not comparable on a first preview"
    template = Resource(LT, "lt", None, {"vpcSecurityGroupIds": ["sg-0cp"]}, refs={"vpcSecurityGroupIds": (cluster,)})
    assert Wiring([deployed, template]).targets(template, "vpcSecurityGroupIds") == ("sg-0cp",), "a list reads it alike"
    node_group = Resource("aws:eks/nodeGroup:NodeGroup", "ng", None, {"clusterName": "gpu-prod"}, refs={"clusterName": (cluster,)})
    assert Wiring([deployed, node_group]).target(node_group, "clusterName") == cluster, "only group inputs are compared"


def network(mode: str, *, inline: bool | None = True, endpoint_assoc: bool = False) -> list[Resource]:
    """One private subnet, its table (default route to a NAT gateway), and an S3 gateway endpoint, as `mode` shows ids.

    Subnet, table and association share a logical name, as the stacks' VPC names them.
    """
    sub, tab, nat, ep = (ref_key(SUBNET, "p"), ref_key(TABLE, "p"), ref_key("aws:ec2/natGateway:NatGateway", "n"), ref_key(ENDPOINT, "s3"))
    ids = {
        "steady": {"sub": "subnet-0s", "tab": "rtb-0t", "nat": "nat-0n", "ep": "vpce-0e"},
        "first": dict.fromkeys(("sub", "tab", "nat", "ep"), UNKNOWN),
    }
    i = ids[mode]
    route = {"cidrBlock": "0.0.0.0/0", "natGatewayId": i["nat"]}
    routes: Any = [route] if inline else [] if inline is False else UNKNOWN
    res = [
        Resource(SUBNET, "p", None, {"availabilityZone": "us-east-1-bos-1a"}),
        # inline None: the table's whole route set unknown, as a first preview may show a set of blocks.
        Resource(TABLE, "p", None, {"routes": routes}, refs={} if inline is False else {"routes": (nat,)}),
        Resource(ASSOC, "p", None, {"subnetId": i["sub"], "routeTableId": i["tab"]}, refs={"subnetId": (sub,), "routeTableId": (tab,)}),
        Resource("aws:ec2/natGateway:NatGateway", "n", None, {}),
    ]
    if inline is False:
        res.append(
            Resource(
                "aws:ec2/route:Route",
                "default",
                None,
                {"routeTableId": i["tab"], "destinationCidrBlock": "0.0.0.0/0", "natGatewayId": i["nat"]},
                refs={"routeTableId": (tab,), "natGatewayId": (nat,)},
            )
        )
    s3 = {"serviceName": "com.amazonaws.us-east-1.s3", "vpcEndpointType": "Gateway"}
    if endpoint_assoc:
        res.append(Resource(ENDPOINT, "s3", None, s3))
        res.append(
            Resource(
                vpc.ENDPOINT_TABLE_ASSOCIATION,
                "s3-p",
                None,
                {"vpcEndpointId": i["ep"], "routeTableId": i["tab"]},
                refs={"vpcEndpointId": (ep,), "routeTableId": (tab,)},
            )
        )
    return res


@pytest.mark.parametrize("mode", ["steady", "first"])
@pytest.mark.parametrize("inline", [True, False, None], ids=["inline-route", "route-resource", "route-set-unknown"])
def test_s3_from_a_subnet_leaves_through_its_tables_default_route(mode: str, inline: bool | None) -> None:
    res = network(mode, inline=inline)
    hop = vpc.s3_hop(res, ref_key(SUBNET, "p"), "us-east-1", Wiring(res))
    assert (hop.kind, hop.route_table) == ("nat-gateway", "p")
    assert hop.target == "n", "the NAT gateway the route is built from, by its logical name"


@pytest.mark.parametrize("mode", ["steady", "first"])
def test_an_endpoint_associated_by_its_own_resource_routes_s3(mode: str) -> None:
    """VpcEndpointRouteTableAssociation adds the prefix-list route as routeTableIds does (PrivateLink guide, "Gateway endpoints")."""
    res = network(mode, endpoint_assoc=True)
    assert vpc.s3_hop(res, ref_key(SUBNET, "p"), "us-east-1", Wiring(res)).kind == "gateway-endpoint"
    assert vpc.s3_hop(res, ref_key(SUBNET, "p"), "us-west-2", Wiring(res)).kind == "nat-gateway", "another region's service name"


def test_ids_as_text_still_serve_the_offline_journeys() -> None:
    prod = plan_for("prod").resources
    hop = vpc.s3_hop(prod, "network-private-us-east-1a-id", "us-east-1", ByValue(prod))
    assert (hop.kind, hop.target) == ("gateway-endpoint", "endpoints-s3")


@pytest.mark.parametrize(
    ("zone", "region"),
    [
        ("us-east-1a", "us-east-1"),
        ("us-east-1-bos-1a", "us-east-1"),
        ("us-gov-west-1b", "us-gov-west-1"),
        ("us-east-1-wl1-bos-wlz-1", "us-east-1"),
        ("", None),
    ],
)
def test_a_zone_names_its_region(zone: str, region: str | None) -> None:
    """Availability, Local and Wavelength Zone names all start with the Region's code (EC2 "Regions and Zones")."""
    assert vpc.region_of_zone(zone) == region
