"""AWS's own API model as the judge: every enumerated value the program emits is one AWS accepts.

botocore ships the EC2 and EKS service models (the same JSON the AWS SDKs are generated from), so
a typo'd capacity type, a retired AMI type or a non-existent instance type fails here, not at apply.
"""

from __future__ import annotations

import re
from functools import cache

import botocore.session
import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.spec import aws_values
from gpu_platform.versions import load_lockfile
from tests.conftest import STACKS, plan_for, spec_for


@cache
def enum(service: str, shape: str) -> frozenset[str]:
    model = botocore.session.get_session().get_service_model(service)
    values = model.shape_for(shape).enum
    assert values, f"{service}:{shape} has no enum"
    return frozenset(values)


def test_every_catalog_instance_type_exists_in_ec2() -> None:
    known = enum("ec2", "InstanceType")
    missing = sorted(set(load_catalog().instance_types) - known)
    assert not missing, f"not EC2 instance types: {missing}"


def test_lockfile_ami_types_exist_in_eks() -> None:
    lock = load_lockfile()
    assert lock.eks.ami_type in enum("eks", "AMITypes")
    assert lock.eks.system_ami_type in enum("eks", "AMITypes")
    assert "NVIDIA" in lock.eks.ami_type


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "multi"])
def test_node_group_values_are_valid_eks_enums(stack: str) -> None:
    plan = plan_for(stack)
    groups = plan.of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups
    for ng in groups:
        i = ng.inputs
        assert i["capacityType"] in enum("eks", "CapacityTypes"), ng.name
        assert i["amiType"] in enum("eks", "AMITypes"), ng.name
        for t in i.get("instanceTypes", []):  # a Capacity Block group names none (its launch template does)
            assert t in enum("ec2", "InstanceType"), (ng.name, t)
        for taint in i.get("taints", []):
            assert taint["effect"] in enum("eks", "TaintEffect"), ng.name
    for cluster in plan.of_type("aws:eks/cluster:Cluster"):
        for log in cluster.inputs["enabledClusterLogTypes"]:
            assert log in enum("eks", "LogType")


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "multi"])
def test_launch_template_values_are_valid_ec2_enums(stack: str) -> None:
    for lt in plan_for(stack).of_type("aws:ec2/launchTemplate:LaunchTemplate"):
        i = lt.inputs
        assert i["metadataOptions"]["httpTokens"] in enum("ec2", "LaunchTemplateHttpTokensState")
        assert i["metadataOptions"]["httpEndpoint"] in enum("ec2", "LaunchTemplateInstanceMetadataEndpointState")
        for bdm in i["blockDeviceMappings"]:
            assert bdm["ebs"]["volumeType"] in enum("ec2", "VolumeType")
        for nic in i.get("networkInterfaces", []):
            assert nic["interfaceType"] in enum("ec2", "NetworkInterfaceType")
        market = i.get("instanceMarketOptions", {}).get("marketType")
        if market is not None:
            assert market in enum("ec2", "MarketType")
    for pg in plan_for(stack).of_type("aws:ec2/placementGroup:PlacementGroup"):
        assert pg.inputs["strategy"] in enum("ec2", "PlacementStrategy")


def launch_template_interface_types() -> frozenset[str]:
    """The `InterfaceType` values EC2 accepts in a launch template's network interface.

    The shape is a plain string; botocore's model (LaunchTemplateInstanceNetworkInterfaceSpecificationRequest)
    documents the accepted values as "Valid values: interface | efa | efa-only", and pulumi-aws passes the
    string through unchanged.
    """
    model = botocore.session.get_session().get_service_model("ec2")
    doc = model.shape_for("LaunchTemplateInstanceNetworkInterfaceSpecificationRequest").members["InterfaceType"].documentation
    valid = doc.split("Valid values:", 1)[1].split("</p>", 1)[0]
    return frozenset(re.findall(r"<code>([a-z-]+)</code>", valid))


def test_efa_interfaces_use_launch_template_interface_types_and_no_ip_on_efa_only() -> None:
    assert launch_template_interface_types() == {"interface", "efa", "efa-only"}
    seen = set()
    for stack in ("staging", "prod"):
        for lt in plan_for(stack).of_type("aws:ec2/launchTemplate:LaunchTemplate"):
            for nic in lt.inputs.get("networkInterfaces", []):
                seen.add(nic["interfaceType"])
                assert nic["interfaceType"] in launch_template_interface_types()
                if nic["interfaceType"] == "efa-only":  # "do not assign any IP addresses" (same doc)
                    assert not {k for k in nic if "ip" in k.lower() and "address" in k.lower()}, nic
    assert seen == {"interface", "efa", "efa-only"}  # prod's p5 layout and staging's p4d layout


def test_capacity_block_market_type_is_known_to_ec2() -> None:
    assert "capacity-block" in enum("ec2", "MarketType")
    assert "CAPACITY_BLOCK" in enum("eks", "CapacityTypes")


def test_every_stack_region_is_an_aws_region() -> None:
    regions = set(botocore.session.get_session().get_available_regions("ec2"))
    for name in STACKS:
        spec = spec_for(name)
        if spec.is_eks:
            assert spec.region in regions, (name, spec.region)
            assert all(z.removeprefix(str(spec.region))[:1].isalpha() for z in spec.network.availability_zones)


def test_runtime_aws_lists_agree_with_botocore() -> None:
    """The stack loader judges regions and instance types with pulumi_aws's enums (botocore is test-only)."""
    session = botocore.session.get_session()
    assert set(session.get_available_regions("ec2")) <= aws_values.aws_regions()
    assert set(session.get_available_regions("ec2", partition_name="aws-us-gov")) <= aws_values.aws_regions()
    botocore_types = enum("ec2", "InstanceType")
    runtime_types = aws_values.ec2_instance_types()
    # The provider may trail botocore by a release; it must never invent a type.
    assert runtime_types <= botocore_types
    assert len(botocore_types - runtime_types) < 0.05 * len(botocore_types)
    for spec in map(spec_for, STACKS):
        if spec.is_eks:
            assert spec.cluster.system_nodes.instance_type in runtime_types


def test_label_and_tag_limits_are_the_eks_api_model() -> None:
    model = botocore.session.get_session().get_service_model("eks")
    assert model.shape_for("labelKey").metadata == {"min": 1, "max": aws_values.EKS_LABEL_MAX}
    assert model.shape_for("labelValue").metadata == {"min": 1, "max": aws_values.EKS_LABEL_MAX}
    assert model.shape_for("TagKey").metadata == {"min": 1, "max": aws_values.TAG_KEY_MAX}
    assert model.shape_for("TagValue").metadata == {"max": aws_values.TAG_VALUE_MAX}
