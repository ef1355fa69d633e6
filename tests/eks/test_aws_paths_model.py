"""The new AWS wiring read against botocore's own EC2 and EKS models (the JSON the SDKs are generated from).

Pulumi's wire names map onto the API's: a launch template interface's `securityGroups` is the EC2
`LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.Groups`, `interfaceType` its
`InterfaceType` ("Valid values: interface | efa | efa-only"; "If you specify efa-only, do not assign
any IP addresses"), and so on.
"""

from __future__ import annotations

import re
from functools import cache

import botocore.session
import pytest
from botocore.model import ServiceModel

from gpu_platform.plan_ids import planned_id
from tests.conftest import plan_for

WIRE_TO_EC2 = {
    "securityGroups": "Groups",
    "interfaceType": "InterfaceType",
    "networkCardIndex": "NetworkCardIndex",
    "deviceIndex": "DeviceIndex",
    "deleteOnTermination": "DeleteOnTermination",
}
ADDRESS_MEMBERS = (
    "PrivateIpAddress",
    "PrivateIpAddresses",
    "SecondaryPrivateIpAddressCount",
    "Ipv6AddressCount",
    "Ipv6Addresses",
    "AssociatePublicIpAddress",
    "Ipv4PrefixCount",
    "Ipv6PrefixCount",
)


@cache
def model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def interface_types() -> set[str]:
    shape = model("ec2").shape_for("LaunchTemplateInstanceNetworkInterfaceSpecificationRequest").members["InterfaceType"]
    return set(re.findall(r"<code>([a-z-]+)</code>", shape.documentation.split("Valid values:")[1]))


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_efa_interfaces_are_valid_ec2_requests_and_carry_the_efa_group(stack: str) -> None:
    plan = plan_for(stack)
    members = model("ec2").shape_for("LaunchTemplateInstanceNetworkInterfaceSpecificationRequest").members
    efa_group = planned_id("efa-sg")
    templates = [lt for lt in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate") if lt.inputs.get("networkInterfaces")]
    assert templates
    for lt in templates:
        interfaces = lt.inputs["networkInterfaces"]
        assert {"interface", "efa"} & {interfaces[0]["interfaceType"]}, f"{lt.name}: the primary interface must carry an IP (not efa-only)"
        assert (interfaces[0]["networkCardIndex"], interfaces[0]["deviceIndex"]) == (0, 0)
        for ni in interfaces:
            assert set(ni) <= set(WIRE_TO_EC2), f"{lt.name}: unmapped interface field {set(ni) - set(WIRE_TO_EC2)}"
            assert {WIRE_TO_EC2[k] for k in ni} <= set(members)
            assert ni["interfaceType"] in interface_types() == {"interface", "efa", "efa-only"}
            if ni["interfaceType"] == "efa-only":
                assert not set(ni) & {k for k, v in WIRE_TO_EC2.items() if v in ADDRESS_MEMBERS}
            assert efa_group in ni["securityGroups"], f"{lt.name}: an interface without the EFA group"
        assert "vpcSecurityGroupIds" not in lt.inputs, "EC2 refuses SecurityGroupIds together with NetworkInterfaces"


def test_endpoints_and_identity_use_values_the_apis_accept() -> None:
    plan = plan_for("prod")
    endpoint_types = set(model("ec2").shape_for("VpcEndpointType").enum)
    endpoints = plan.of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    assert {e.inputs["vpcEndpointType"] for e in endpoints} <= endpoint_types
    assert {e.inputs["serviceName"] for e in endpoints} == {f"com.amazonaws.us-east-1.{s}" for s in ("s3", "ecr.api", "ecr.dkr", "sts")}
    for r in plan.of_type("aws:eks/accessEntry:AccessEntry"):
        assert set(model("eks").operation_model("CreateAccessEntry").input_shape.required_members) <= set(r.inputs)
        assert r.inputs["type"] == "STANDARD"
        assert not any(g.startswith("system:") for g in r.inputs.get("kubernetesGroups") or [])
    for r in plan.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation"):
        assert r.inputs["accessScope"]["type"] in model("eks").shape_for("AccessScopeType").enum
    for r in plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation"):
        assert set(model("eks").operation_model("CreatePodIdentityAssociation").input_shape.required_members) <= set(r.inputs)
