"""Journey: a training job's dataset claim on FSx for Lustre binds, and its GPU nodes mount the file system (prod).

Stages, each judged by gpu_platform.behaviour (which cites upstream):
1. class: the claim names `storage.fsxLustre.className`, which the stack creates (PV controller `provisionClaim`);
2. provisioner, credentials: the aws-fsx-csi-driver add-on is installed (external-provisioner `shouldProvision`
   matches `fsx.csi.aws.com`) and its controller has credentials (Pod Identity association to a role with
   AmazonFSxFullAccess);
3. parameters: the class carries parameters aws-fsx-csi-driver's `CreateVolume` parses and FSx `CreateFileSystem`
   accepts (behaviour.storage `fsx_lustre_parameter_problems`, inside `claim_binds`);
4. zone: the file system's subnet is in the zone of the EFA training pools that read it (Lustre works across
   zones, at inter-zone transfer cost and latency);
5. lustre ports: a GPU node (EKS cluster group) and the file system's ENIs exchange TCP 988 and 1018-1023 both ways
   (behaviour.security_groups `flow`; FSx for Lustre User Guide, "Amazon VPC security groups").
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.aws.fsx import LUSTRE_PORTS
from gpu_platform.behaviour import resourcequota
from gpu_platform.behaviour import security_groups as sg
from gpu_platform.behaviour.storage import FSX_PROVISIONER, claim_binds, claim_class, on_claim_deleted
from gpu_platform.plan_ids import CLUSTER_SECURITY_GROUP, planned_id
from gpu_platform_policies import PlanView, Resource
from gpu_platform_policies.rules.paths import installed_drivers
from tests.conftest import plan_for, spec_for
from tests.journeys.helpers import stage

STACK = "prod"


def test_a_training_dataset_claim_on_fsx_binds_and_the_nodes_mount_it() -> None:
    spec, plan = spec_for(STACK), plan_for(STACK).resources
    fsx = spec.storage.fsx_lustre
    stage("class", fsx.enabled, f"{STACK} does not enable storage.fsxLustre")
    claim = {"storageClassName": fsx.class_name, "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2400Gi"}}}
    classes = [dict(r.inputs) for r in plan if r.type == "kubernetes:storage.k8s.io/v1:StorageClass"]
    drivers = installed_drivers(PlanView(Resource(r.type, r.name, r.parent, r.inputs) for r in plan)) or {}
    tenant = next(t for t in spec.tenants if t.priority == "production-training")
    quotas = [dict(r.inputs) for r in plan if r.type == "kubernetes:core/v1:ResourceQuota" and r.inputs["metadata"]["namespace"] == tenant.ns]
    refusal = resourcequota.admit_claim(quotas, claim, claim_class(claim, classes))
    stage("quota", refusal is None, f"the claim in {tenant.ns} is refused at admission: {refusal}")
    binding = claim_binds(claim, classes, drivers)
    stage(binding.reason.split(":", 1)[0] if not binding.binds else "parameters", binding.binds, binding.reason)

    sc = next(c for c in classes if c["metadata"]["name"] == fsx.class_name)
    assert sc["provisioner"] == FSX_PROVISIONER
    subnet = next((r for r in plan if r.type == "aws:ec2/subnet:Subnet" and planned_id(r.name) == sc["parameters"]["subnetId"]), None)
    stage("zone", subnet is not None, f"subnetId {sc['parameters']['subnetId']} is no subnet of the stack")
    assert subnet is not None
    efa_zones = {z for p in spec.node_pools if p.efa and p.workload_class == "training" for z in p.availability_zones}
    zone = subnet.inputs["availabilityZone"]
    stage("zone", zone in efa_zones, f"the file systems live in {zone}, the EFA training pools in {sorted(efa_zones)}")

    rules = sg.rules_of(plan) + sg.eks_cluster_group_rules(CLUSTER_SECURITY_GROUP)
    groups = tuple(str(g) for g in sc["parameters"]["securityGroupIds"].split(","))
    node = sg.Interface("gpu-node/primary", (CLUSTER_SECURITY_GROUP,), address="10.40.1.10")
    eni = sg.Interface("fsx/eni", groups, address="10.40.1.50")
    for low, high in LUSTRE_PORTS:
        for port in {low, high}:
            for src, dst in ((node, eni), (eni, node)):
                verdict = sg.flow(rules, src, dst, "tcp", port)
                stage("lustre ports", verdict.allowed, f"{src.name} -> {dst.name} tcp/{port}: {verdict.stage}: {verdict.reason}")


@pytest.mark.parametrize("dropped", ["fsx-lustre-nodes-in-988", "fsx-lustre-in-nodes-1018"])
def test_a_missing_lustre_rule_is_caught_at_the_ports_stage(dropped: str) -> None:
    plan = [r for r in plan_for(STACK).resources if r.name != dropped]
    assert len(plan) == len(plan_for(STACK).resources) - 1
    rules = sg.rules_of(plan) + sg.eks_cluster_group_rules(CLUSTER_SECURITY_GROUP)
    node = sg.Interface("gpu-node/primary", (CLUSTER_SECURITY_GROUP,), address="10.40.1.10")
    eni = sg.Interface("fsx/eni", (planned_id("fsx-lustre-sg"),), address="10.40.1.50")
    port = int(dropped.rsplit("-", 1)[1])
    assert not (sg.flow(rules, node, eni, "tcp", port).allowed and sg.flow(rules, eni, node, "tcp", port).allowed)


def test_deleting_a_dataset_claim_keeps_its_file_system_and_a_second_file_system_needs_quota() -> None:
    """FSx spend and data are bounded: the class keeps the file system when the claim goes (pv_controller.go
    reclaimVolume, Retain), and each tenant holds `fsxClaims` file systems at most (persistent_volume_claims.go Usage)."""
    spec, plan = spec_for(STACK), plan_for(STACK).resources
    fsx = spec.storage.fsx_lustre
    classes = [dict(r.inputs) for r in plan if r.type == "kubernetes:storage.k8s.io/v1:StorageClass"]
    claim = {"storageClassName": fsx.class_name, "resources": {"requests": {"storage": "1200Gi"}}}
    stage("reclaim", on_claim_deleted(claim, classes) == "kept", f"deleting the claim deletes the {fsx.class_name} file system and its data")
    for tenant in spec.tenants:
        quotas = [dict(r.inputs) for r in plan if r.type == "kubernetes:core/v1:ResourceQuota" and r.inputs["metadata"]["namespace"] == tenant.ns]
        used: dict[str, Any] = {}
        for _ in range(tenant.resources.fsx_claims):
            assert resourcequota.admit_claim(quotas, claim, fsx.class_name, used) is None
            used = resourcequota.add(used, resourcequota.claim_usage(claim, fsx.class_name))
        refusal = resourcequota.admit_claim(quotas, claim, fsx.class_name, used)
        stage("quota", refusal is not None, f"{tenant.ns} can create file system {tenant.resources.fsx_claims + 1}: nothing bounds FSx spend")
