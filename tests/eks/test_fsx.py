"""FSx for Lustre on prod (`storage.fsxLustre`): the pinned add-on and its role, the Lustre group, the class's parameters.

Sources: aws-fsx-csi-driver (the lockfile's tag) docs/install.md (the controller's service account `fsx-csi-controller-sa`
with AmazonFSxFullAccess), pkg/driver/controller.go `CreateVolume` (parameter names), the FSx for Lustre User
Guide "Amazon VPC security groups" (TCP 988 and 1018-1023, from the group itself and the clients).
"""

from __future__ import annotations

import json

import pytest

from gpu_platform.aws import fsx
from gpu_platform.behaviour import security_groups as sg
from gpu_platform.behaviour.storage import FSX_PROVISIONER, fsx_lustre_parameter_problems
from gpu_platform.engine import auto_name
from gpu_platform.k8s.storage import fsx_storage_class
from gpu_platform.plan_ids import CLUSTER_SECURITY_GROUP, planned_id
from gpu_platform.versions import load_lockfile
from tests.conftest import plan_for, spec_for

SC = "kubernetes:storage.k8s.io/v1:StorageClass"


def test_fsx_addon_with_its_pod_identity_role_on_prod() -> None:
    plan = plan_for("prod")
    addon = next(r.inputs for r in plan.of_type("aws:eks/addon:Addon") if r.inputs["addonName"] == fsx.ADDON)
    assert addon["addonVersion"] == load_lockfile().eks.addons[fsx.ADDON]
    (assoc,) = addon["podIdentityAssociations"]
    assert assoc["serviceAccount"] == "fsx-csi-controller-sa"
    role = next(r for r in plan.of_type("aws:iam/role:Role") if assoc["roleArn"].endswith(f"role/{r.name}"))
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    attached = [
        a.inputs["policyArn"]
        for a in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.inputs["role"] == auto_name(role.type, role.name)
    ]
    assert attached == [fsx.POLICY_ARN]


@pytest.mark.parametrize("stack", ("dev", "staging", "onprem"))
def test_fsx_is_opt_in(stack: str) -> None:
    plan = plan_for(stack)
    assert not [r for r in plan.of_type("aws:eks/addon:Addon") if r.inputs["addonName"] == fsx.ADDON]
    assert not [r for r in plan.of_type(SC) if r.inputs["provisioner"] == FSX_PROVISIONER]


def test_the_class_names_the_lustre_group_and_a_subnet_of_its_zone() -> None:
    spec, plan = spec_for("prod"), plan_for("prod")
    (sc,) = [r.inputs for r in plan.of_type(SC) if r.inputs["provisioner"] == FSX_PROVISIONER]
    params = sc["parameters"]
    assert fsx_lustre_parameter_problems(params) == []
    assert params["deploymentType"] == "PERSISTENT_2" and params["perUnitStorageThroughput"] == "250"
    group = next(r for r in plan.of_type("aws:ec2/securityGroup:SecurityGroup") if r.name == "fsx-lustre-sg")
    assert params["securityGroupIds"] == planned_id(group.name)
    subnet = next(r for r in plan.of_type("aws:ec2/subnet:Subnet") if planned_id(r.name) == params["subnetId"])
    assert subnet.inputs["availabilityZone"] == fsx.fsx_zone(spec) == "us-east-1a"
    assert not (sc["metadata"].get("annotations") or {}), "never the default class: claims ask for it by name"


@pytest.mark.parametrize("port", (988, 1018, 1021, 1023))
def test_a_node_and_the_file_system_exchange_lustre_traffic(port: int) -> None:
    """EC2 evaluates both ends: the node (cluster group) dials the file system's ENI, and the servers dial back."""
    plan = plan_for("prod")
    rules = sg.rules_of(plan.resources) + sg.eks_cluster_group_rules(CLUSTER_SECURITY_GROUP)
    group = planned_id("fsx-lustre-sg")
    node = sg.Interface("gpu-node/primary", (CLUSTER_SECURITY_GROUP,), address="10.40.1.10")
    eni = sg.Interface("fsx/eni", (group,), address="10.40.1.50")
    peer = sg.Interface("fsx/eni-2", (group,), address="10.40.1.51")
    for src, dst in ((node, eni), (eni, node), (eni, peer)):
        verdict = sg.flow(rules, src, dst, "tcp", port)
        assert verdict.allowed, f"{src.name} -> {dst.name} tcp/{port}: {verdict.stage}: {verdict.reason}"
    assert not sg.flow(rules, node, eni, "tcp", 1024).allowed, "only the Lustre ports"


def test_the_class_builder_takes_the_stacks_throughput_default() -> None:
    spec = spec_for("prod")
    cheaper = spec.model_copy(
        update={
            "storage": spec.storage.model_copy(
                update={"fsx_lustre": spec.storage.fsx_lustre.model_copy(update={"per_unit_storage_throughput": None})}
            )
        }
    )
    assert fsx_storage_class(cheaper, "subnet-1", "sg-1")["parameters"]["perUnitStorageThroughput"] == "125"
