"""The EBS CSI driver on EKS: pinned add-on, its controller's role through Pod Identity, the default gp3 class."""

from __future__ import annotations

import json

import pytest

from gpu_platform.aws.storage import ADDON, POLICY_ARN, PROVISIONER, SERVICE_ACCOUNT
from gpu_platform.behaviour.storage import default_class, on_claim_deleted
from gpu_platform.engine import auto_name
from gpu_platform.versions import load_lockfile
from tests.conftest import plan_for, spec_for

EKS_STACKS = ("dev", "staging", "prod")


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_ebs_csi_addon_with_its_pod_identity_role(stack: str) -> None:
    """EKS CreateAddon `podIdentityAssociations` (botocore eks CreateAddonRequest: serviceAccount, roleArn) binds the
    add-on's controller service account to a role trusted by pods.eks.amazonaws.com (EKS user guide, "Pod Identity":
    sts:AssumeRole and sts:TagSession) that carries the AWS managed AmazonEBSCSIDriverPolicy."""
    plan = plan_for(stack)
    addons = {r.inputs["addonName"]: r for r in plan.of_type("aws:eks/addon:Addon")}
    ebs = addons[ADDON].inputs
    assert ebs["addonVersion"] == load_lockfile().eks.addons[ADDON]
    assert "eks-pod-identity-agent" in addons, "Pod Identity credentials come from the agent add-on"
    (assoc,) = ebs["podIdentityAssociations"]
    assert assoc["serviceAccount"] == SERVICE_ACCOUNT == "ebs-csi-controller-sa"
    role = next(r for r in plan.of_type("aws:iam/role:Role") if assoc["roleArn"].endswith(f"role/{r.name}"))
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"} and set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    attached = [
        a.inputs["policyArn"]
        for a in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.inputs["role"] == auto_name(role.type, role.name)
    ]
    assert attached == [POLICY_ARN]


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_gp3_classes_are_encrypted_wait_for_the_pod_and_only_the_default_deletes_data(stack: str) -> None:
    """gp3 (default, scratch) deletes its volume with the claim; gp3-retain keeps it (pv_controller.go reclaimVolume)."""
    spec = spec_for(stack)
    classes = [dict(r.inputs) for r in plan_for(stack).of_type("kubernetes:storage.k8s.io/v1:StorageClass")]
    ebs = {c["metadata"]["name"]: c for c in classes if c["provisioner"] == PROVISIONER}
    assert set(ebs) == {"gp3", "gp3-retain"} == {spec.storage_class, spec.retain_storage_class}
    for sc in ebs.values():
        assert sc["parameters"]["type"] == "gp3" and sc["parameters"]["encrypted"] == "true"
        assert sc["volumeBindingMode"] == "WaitForFirstConsumer" and sc["allowVolumeExpansion"] is True
    assert ebs["gp3"]["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert "annotations" not in ebs["gp3-retain"]["metadata"], "two default classes: the newest wins (GetDefaultClass)"
    assert default_class(classes) == "gp3"
    assert on_claim_deleted({"resources": {"requests": {"storage": "100Gi"}}}, classes) == "deleted"
    assert on_claim_deleted({"storageClassName": "gp3-retain"}, classes) == "kept"
    if spec.storage.fsx_lustre.enabled:
        assert on_claim_deleted({"storageClassName": spec.storage.fsx_lustre.class_name}, classes) == "kept", "FSx keeps its file system"


def test_onprem_creates_no_class() -> None:
    assert plan_for("onprem").of_type("kubernetes:storage.k8s.io/v1:StorageClass") == []
