"""Journeys of a tenant's identity on EKS: its people act in its namespace, its workloads reach its buckets.

Upstream behaviour relied on, all in `gpu_platform.behaviour`:
- EKS access entries map an IAM role session to Kubernetes groups (`eks_identity.authenticate_role`), and an
  associated access policy authorizes it besides RBAC (`eks_identity.access_policies`: AssociateAccessPolicy);
- the RBAC authorizer's subject match (`rbac.applies_to_user`, kubernetes
  pkg/registry/rbac/validation/rule.go appliesToUser);
- EKS Pod Identity: (cluster, namespace, service account) -> association -> role, served by the Pod
  Identity Agent add-on (`eks_identity.pod_role`);
- IAM policy evaluation (`iam_policy.decide`: explicit deny, allow, implicit deny; wildcards);
- VPC routing and endpoint DNS (`vpc.s3_hop`, `vpc.resolve`: route priority, gateway endpoint
  prefix-list routes, interface endpoint private DNS).
On-prem stacks refuse these settings (tests/eks/test_identity_spec.py): an existing cluster brings
its own authentication, so these journeys run on the EKS stacks.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from gpu_platform.behaviour import eks_identity, iam_policy, rbac, vpc
from gpu_platform.behaviour import security_groups as sg
from gpu_platform.plan_ids import CLUSTER_SECURITY_GROUP, planned_arn, planned_id
from gpu_platform.spec.models import PlatformSpec, Tenant
from tests.conftest import plan_for, spec_for

EKS_STACKS = ("prod", "staging")
TENANT_ROLE = "gpu-platform-tenant"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def fail(stage: str, detail: str) -> None:
    """Stop the journey at `stage`, naming it."""
    pytest.fail(f"stage '{stage}': {detail}", pytrace=False)


def bindings(plan: list[Any]) -> list[dict[str, Any]]:
    """Every RoleBinding manifest of the plan."""
    return [dict(r.inputs) for r in plan if r.type == "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"]


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_a_tenants_sso_role_acts_in_its_namespace_only(stack: str) -> None:
    """A tenant's SSO role authenticates, carries the tenant's groups, is bound in its namespace and in no other tenant's."""
    spec, plan = spec_for(stack), plan_for(stack).resources
    entries = eks_identity.entries(plan)
    tenants = [t for t in spec.tenants if t.groups]
    if not tenants:
        fail("tenants", f"{stack} has no tenant with groups")
    for t in tenants:
        # The plan decides: the principals whose access entries carry any of the tenant's groups.
        carriers = [e.principal_arn for e in entries if set(e.groups) & set(t.groups)]
        if not carriers:
            fail("access entry", f"tenant {t.name}: no access entry carries its groups {list(t.groups)}, so no IAM role can act as the tenant")
        # A stack file from before the setting existed has no accessRoleArns at all.
        declared = [a for a in getattr(t, "access_role_arns", ()) if a not in carriers]
        if declared:
            fail("access entry", f"tenant {t.name}: accessRoleArns {declared} have no access entry carrying the tenant's groups")
        for arn in carriers:
            user = eks_identity.authenticate_role(arn, "alice@example.com", entries)
            if user is None:
                fail("access entry", f"tenant {t.name}: no access entry for {arn}; its sessions cannot authenticate")
            assert user is not None
            missing = [g for g in t.groups if g not in user.groups]
            if missing:
                fail("groups", f"tenant {t.name}: {arn} authenticates without groups {missing}")
            mine = [rb for rb in rbac.bindings_for(user, bindings(plan)) if rb["metadata"]["namespace"] == t.ns]
            if not mine:
                fail("role binding", f"tenant {t.name}: no RoleBinding in namespace {t.ns} names a group of {arn}")
            if not any(rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TENANT_ROLE} for rb in mine):
                fail("role binding", f"tenant {t.name}: the bindings of {arn} in {t.ns} do not grant the {TENANT_ROLE} role")
            others = {o.ns for o in spec.tenants if o.ns != t.ns and not set(o.groups) & set(t.groups)}
            leaked = sorted({rb["metadata"]["namespace"] for rb in rbac.bindings_for(user, bindings(plan))} & others)
            if leaked:
                fail("isolation", f"tenant {t.name}: {arn} is also bound in other tenants' namespaces {leaked}")


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_a_platform_admin_administers_the_whole_cluster_and_a_tenant_does_not(stack: str) -> None:
    """An admin role's sessions authenticate and hold AmazonEKSClusterAdminPolicy at cluster scope; tenants' roles hold no access policy."""
    spec, plan = spec_for(stack), plan_for(stack).resources
    entries = eks_identity.entries(plan)
    admins = list(spec.cluster.admin_role_arns)
    if not admins:
        fail("admins", f"{stack} lists no cluster.adminRoleArns: only the cluster's creator can administer it")
    for arn in admins:
        if eks_identity.authenticate_role(arn, "ops@example.com", entries) is None:
            fail("access entry", f"admin {arn} has no access entry; its sessions cannot authenticate")
        policies = eks_identity.access_policies(plan, arn)
        if (eks_identity.CLUSTER_ADMIN_POLICY, "cluster", ()) not in policies:
            fail("access policy", f"admin {arn} holds {policies}, not AmazonEKSClusterAdminPolicy at cluster scope")
    for t in spec.tenants:
        for arn in t.access_role_arns:
            if arn not in admins and eks_identity.access_policies(plan, arn):
                fail(
                    "access policy",
                    f"tenant {t.name}'s role {arn} holds access policies {eks_identity.access_policies(plan, arn)}; RBAC alone should scope it",
                )


def _role_behind(plan: list[Any], association: dict[str, Any]) -> Any:
    return next((r for r in plan if r.type == ROLE and planned_arn(ROLE, r.name) == association["roleArn"]), None)


def _policies_of(plan: list[Any], role: Any) -> list[str]:
    return [str(r.inputs["policy"]) for r in plan if r.type == ROLE_POLICY and r.inputs.get("role") == planned_id(role.name)]


def _identity_tenants(spec: PlatformSpec) -> list[Tenant]:
    # getattr: a stack file from before the setting existed has none.
    found = [t for t in spec.tenants if getattr(t, "workload_identity", None) is not None]
    if not found:
        fail("workload identity", f"no tenant of {spec.stack} declares workloadIdentity: tenant pods get no AWS role")
    return found


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_a_tenant_workload_reads_its_bucket_and_not_anothers(stack: str) -> None:
    """A pod running as the tenant's ServiceAccount gets a role that may read and write its buckets and no other tenant's."""
    spec, plan = spec_for(stack), plan_for(stack).resources
    tenants = _identity_tenants(spec)
    buckets_of = {t.name: t.workload_identity.buckets for t in tenants if t.workload_identity is not None}
    for t in tenants:
        wi = t.workload_identity
        assert wi is not None
        sa = next(
            (
                r
                for r in plan
                if r.type == "kubernetes:core/v1:ServiceAccount"
                and (r.inputs["metadata"].get("namespace"), r.inputs["metadata"].get("name")) == (t.ns, wi.service_account)
            ),
            None,
        )
        if sa is None:
            fail("service account", f"tenant {t.name}: no ServiceAccount {wi.service_account} in namespace {t.ns}")
        agent = [r for r in plan if r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == eks_identity.POD_IDENTITY_AGENT]
        if not agent:
            fail("pod identity agent", "the eks-pod-identity-agent add-on is not installed: pods get no credentials from associations")
        association = eks_identity.pod_role(plan, spec.cluster.name, t.ns, wi.service_account)
        if association is None:
            fail("association", f"tenant {t.name}: no Pod Identity association for {t.ns}/{wi.service_account}")
        assert association is not None
        role = _role_behind(plan, association)
        if role is None:
            fail("role", f"tenant {t.name}: the association names {association['roleArn']}, which the plan does not create")
        missing = iam_policy.trusts_service(role.inputs["assumeRolePolicy"], "pods.eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession"))
        if missing:
            fail("trust", f"tenant {t.name}: role {role.name} does not let EKS Pod Identity call {missing}")
        docs = _policies_of(plan, role)
        for bucket in wi.buckets:
            for action, resource in (
                ("s3:ListBucket", f"arn:aws:s3:::{bucket}"),
                ("s3:GetObject", f"arn:aws:s3:::{bucket}/datasets/shard-00001.tar"),
                ("s3:PutObject", f"arn:aws:s3:::{bucket}/checkpoints/step-1000/model.pt"),
                ("s3:DeleteObject", f"arn:aws:s3:::{bucket}/checkpoints/step-0500/model.pt"),
            ):
                if iam_policy.decide(docs, action, resource) != iam_policy.ALLOW:
                    fail("own bucket", f"tenant {t.name}: {action} on {resource} is {iam_policy.decide(docs, action, resource)}")
        foreign = [b for other, bs in buckets_of.items() if other != t.name for b in bs] + [f"{wi.buckets[0]}-archive"]
        for bucket in foreign:
            for action, resource in (("s3:GetObject", f"arn:aws:s3:::{bucket}/x"), ("s3:ListBucket", f"arn:aws:s3:::{bucket}")):
                if iam_policy.decide(docs, action, resource) == iam_policy.ALLOW:
                    fail("other buckets", f"tenant {t.name}: {action} on {resource} is allowed")
        for action in ("s3:DeleteBucket", "s3:PutBucketPolicy", "iam:PassRole"):
            if iam_policy.decide(docs, action, f"arn:aws:s3:::{wi.buckets[0]}") == iam_policy.ALLOW:
                fail("least privilege", f"tenant {t.name}: {action} is allowed")
        for subnet in vpc.private_subnet_ids(plan):
            hop = vpc.s3_hop(plan, subnet, str(spec.region))
            if hop.kind != "gateway-endpoint":
                fail("network path", f"S3 from node subnet {subnet} goes to {hop.kind} {hop.target}, not the S3 gateway endpoint")


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_nodes_pull_images_and_get_credentials_through_endpoints(stack: str) -> None:
    """ECR (api, dkr) and STS names resolve to interface endpoints in the VPC, whose group admits HTTPS from the nodes."""
    spec, plan = spec_for(stack), plan_for(stack).resources
    vpc_res = next((r for r in plan if r.type == vpc.VPC), None)
    if vpc_res is None:
        pytest.skip(f"{stack} uses an existing VPC: its endpoints are not the stack's")
    assert vpc_res is not None
    region = str(spec.region)
    rules = sg.rules_of(plan) + sg.eks_cluster_group_rules(CLUSTER_SECURITY_GROUP)
    first_subnet = next(r for r in plan if r.type == "aws:ec2/subnet:Subnet" and planned_id(r.name) == vpc.private_subnet_ids(plan)[0])
    hosts = ipaddress.ip_network(first_subnet.inputs["cidrBlock"]).hosts()
    node = sg.Interface("gpu-node/primary", (CLUSTER_SECURITY_GROUP,), address=str(next(hosts)))
    endpoint_address = str(next(hosts))  # interface endpoints put an ENI in each subnet they are given
    account = "123456789012"
    for stage, host in (
        ("ecr api", f"api.ecr.{region}.amazonaws.com"),
        ("ecr dkr", f"{account}.dkr.ecr.{region}.amazonaws.com"),
        ("sts", f"sts.{region}.amazonaws.com"),
    ):
        endpoint, why = vpc.resolve(plan, planned_id(vpc_res.name), host, region)
        if endpoint is None:
            fail(stage, why)
        assert endpoint is not None
        if first_subnet.inputs and planned_id(first_subnet.name) not in (endpoint.inputs.get("subnetIds") or []):
            fail(stage, f"{endpoint.name} has no ENI in the node subnet {first_subnet.name}")
        eni = sg.Interface(f"{endpoint.name}/eni", tuple(str(g) for g in endpoint.inputs.get("securityGroupIds") or ()), address=endpoint_address)
        verdict = sg.flow(rules, node, eni, "tcp", 443)
        if not verdict.allowed:
            fail(f"{stage} https", f"{host} -> {endpoint.name}: {verdict.stage}: {verdict.reason}")
    s3 = json.dumps([vpc.s3_hop(plan, s, region).kind for s in vpc.private_subnet_ids(plan)])
    if "nat-gateway" in s3:
        fail("s3 layers", f"image layers come from S3, whose traffic goes {s3} from the node subnets")
