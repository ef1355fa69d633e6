"""Journey: a tenant's pod reads an object of its bucket, walked as one path over one EKS stack's planned objects.

Stages, in the order the request meets them (each judged by gpu_platform.behaviour, which cites upstream):
1. pod in tenant namespace: the pod runs in the tenant's namespace as its workload ServiceAccount;
2. service account: the ServiceAccount exists there (a pod naming a missing one is refused by the
   ServiceAccount admission plugin, plugin/pkg/admission/serviceaccount/admission.go `Admit`);
3. pod identity association: EKS Pod Identity maps (cluster, namespace, service account) to a role
   (`eks_identity.pod_role`; EKS user guide, "Understand how EKS Pod Identity works");
4. pod identity agent: the agent add-on serves the credentials, and the pod's egress reaches it at
   169.254.170.23:80 (`networkpolicy.connection`);
5. role: the association's role exists and trusts pods.eks.amazonaws.com for sts:AssumeRole and sts:TagSession
   (`iam_policy.trusts_service`);
6. iam policy: the role's policies allow s3:GetObject on the object (`iam_policy.decide`: IAM User Guide,
   "Policy evaluation logic");
7. dns: the SDK resolves s3.<region>.amazonaws.com through kube-dns's ClusterIP, judged as the VPC CNI's policy
   agent judges it, before DNAT (`networkpolicy.vpc_cni_service_connection`);
8. network policy egress: the tenant's NetworkPolicies let the pod open TCP 443 to an S3 address (the gateway
   endpoint keeps S3's public addresses) (`networkpolicy.connection`: Kubernetes NetworkPolicy semantics);
9. route table: every node subnet's route table sends S3's prefix list to the gateway endpoint, not a NAT gateway
   (`vpc.s3_hop`: VPC user guide, "Route priority"; PrivateLink guide, "Gateway endpoints");
10. endpoint policy: the gateway endpoint's policy (AWS's default when none is set) allows the request
   (`vpc.endpoint_policy` + `iam_policy.decide`).
Each breakage below breaks one leg and the walk must stop at exactly that stage.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from gpu_platform.behaviour import eks_identity, iam_policy, vpc
from gpu_platform.behaviour.networkpolicy import Endpoint, connection, vpc_cni_service_connection
from gpu_platform.engine import PlannedResource
from gpu_platform.plan_ids import PLANNED_S3_ADDRESS, planned_arn, planned_id
from gpu_platform.spec.models import PlatformSpec, Tenant
from tests.conftest import plan_for, spec_for
from tests.journeys.helpers import kube_dns_service, manifests, stage

EKS_STACKS = ("prod", "staging")
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
# Where the SDK's packets go: an address of S3's prefix list as the offline engine answers the program's read
# of it (plan_ids), which is also what the gateway endpoint routes.
S3_ADDRESS = PLANNED_S3_ADDRESS
AGENT = Endpoint(None, ip="169.254.170.23")


@dataclass(frozen=True)
class World:
    """One EKS stack as the request meets it: its spec, its planned AWS/Kubernetes resources, its manifests."""

    spec: PlatformSpec
    plan: list[PlannedResource]
    objects: list[dict[str, Any]]


def world(stack: str) -> World:
    return World(spec_for(stack), list(plan_for(stack).resources), [dict(o) for o in manifests(stack)])


def reader(w: World, sealed: bool = False) -> tuple[Tenant, str]:
    """The first tenant with a workload identity (`sealed`: and no egress of its own), and its first bucket."""
    tenant = next((t for t in w.spec.tenants if t.workload_identity is not None and not (sealed and t.network.egress)), None)
    stage("pod in tenant namespace", tenant is not None, f"no tenant of {w.spec.stack} has a workloadIdentity")
    assert tenant is not None and tenant.workload_identity is not None
    return tenant, tenant.workload_identity.buckets[0]


def walk(w: World, tenant: Tenant, bucket: str, key: str = "datasets/shard-00001.tar") -> None:
    """The whole path of one GetObject, failing at the first stage that breaks, with that stage's name."""
    spec, plan, objs = w.spec, w.plan, w.objects
    wi = tenant.workload_identity
    assert wi is not None
    namespaces = {o["metadata"]["name"] for o in objs if o["kind"] == "Namespace"}
    stage("pod in tenant namespace", tenant.ns in namespaces, f"namespace {tenant.ns} is not created by the stack")
    pod = Endpoint(tenant.ns, {"app": "trainer"}, str(ipaddress.ip_network(spec.network.cidr).network_address + 1234))

    has_sa = any(
        r.type == SERVICE_ACCOUNT and (r.inputs["metadata"].get("namespace"), r.inputs["metadata"].get("name")) == (tenant.ns, wi.service_account)
        for r in plan
    )
    stage("service account", has_sa, f"no ServiceAccount {tenant.ns}/{wi.service_account}: the pod is refused at admission")

    association = eks_identity.pod_role(plan, spec.cluster.name, tenant.ns, wi.service_account)
    stage("pod identity association", association is not None, f"no association for {tenant.ns}/{wi.service_account}: no AWS credentials")
    assert association is not None

    agent = any(r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == eks_identity.POD_IDENTITY_AGENT for r in plan)
    stage("pod identity agent", agent, "the eks-pod-identity-agent add-on is not installed")
    d = connection(objs, pod, AGENT, 80)
    stage("pod identity agent", d.allowed, f"the pod cannot reach the agent at 169.254.170.23:80: {d.reason}")

    role = next((r for r in plan if r.type == ROLE and planned_arn(ROLE, r.name) == association["roleArn"]), None)
    stage("role", role is not None, f"the association names {association['roleArn']}, which the stack does not create")
    assert role is not None
    missing = iam_policy.trusts_service(role.inputs["assumeRolePolicy"], "pods.eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession"))
    stage("role", not missing, f"{role.name} does not let EKS Pod Identity call {missing}")

    docs = [str(r.inputs["policy"]) for r in plan if r.type == ROLE_POLICY and r.inputs.get("role") == planned_id(role.name)]
    resource = f"arn:aws:s3:::{bucket}/{key}"
    decision = iam_policy.decide(docs, "s3:GetObject", resource)
    stage("iam policy", decision == iam_policy.ALLOW, f"s3:GetObject on {resource} is {decision} for {role.name}")

    d = vpc_cni_service_connection(objs, pod, kube_dns_service(spec), 53, "UDP")
    stage("dns", d.allowed, f"s3.{spec.region}.amazonaws.com does not resolve: {d.reason}")

    d = connection(objs, pod, Endpoint(None, ip=S3_ADDRESS), 443)
    stage("network policy egress", d.allowed, d.reason)

    subnets = vpc.private_subnet_ids(plan)
    stage("route table", bool(subnets), "no node group names a subnet")
    endpoints = set()
    for subnet in subnets:
        hop = vpc.s3_hop(plan, subnet, str(spec.region))
        stage("route table", hop.kind == "gateway-endpoint", f"S3 from node subnet {subnet} goes to {hop.kind} {hop.target}")
        endpoints.add(hop.target)

    for name in sorted(endpoints):
        endpoint = next(r for r in plan if r.name == name)
        decision = iam_policy.decide([vpc.endpoint_policy(endpoint)], "s3:GetObject", resource)
        stage("endpoint policy", decision == iam_policy.ALLOW, f"{name}'s policy gives s3:GetObject on {resource}: {decision}")


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_a_tenant_pod_reads_its_bucket_end_to_end(stack: str) -> None:
    w = world(stack)
    tenant, bucket = reader(w)
    walk(w, tenant, bucket)


# Breakages: (stage the walk must stop at, how the stack is broken).
Edit = Callable[[World, Tenant, str], World]


def _plan(w: World, keep: Callable[[PlannedResource], bool], change: Callable[[PlannedResource], PlannedResource] = lambda r: r) -> World:
    return replace(w, plan=[change(r) for r in w.plan if keep(r)])


def _drop_policy(name: str) -> Edit:
    def edit(w: World, t: Tenant, b: str) -> World:
        gone = [o for o in w.objects if o["kind"] == "NetworkPolicy" and o["metadata"] == {**o["metadata"], "name": name, "namespace": t.ns}]
        assert gone, f"{t.ns} has no NetworkPolicy {name} to drop"
        return replace(w, objects=[o for o in w.objects if o not in gone])

    return edit


def _s3_policy_elsewhere(w: World, t: Tenant, b: str) -> World:
    """`allow-s3` naming a range that is not S3's prefix list (a documentation range)."""

    def move(o: dict[str, Any]) -> dict[str, Any]:
        if o["kind"] != "NetworkPolicy" or (o["metadata"]["namespace"], o["metadata"]["name"]) != (t.ns, "allow-s3"):
            return o
        rules = [{**r, "to": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]} for r in o["spec"]["egress"]]
        return {**o, "spec": {**o["spec"], "egress": rules}}

    moved = [move(o) for o in w.objects]
    assert moved != w.objects, f"{t.ns} has no allow-s3"
    return replace(w, objects=moved)


def _no_sa(w: World, t: Tenant, b: str) -> World:
    assert t.workload_identity is not None
    sa = (t.ns, t.workload_identity.service_account)
    return _plan(w, lambda r: not (r.type == SERVICE_ACCOUNT and (r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"]) == sa))


def _no_association(w: World, t: Tenant, b: str) -> World:
    return _plan(w, lambda r: not (r.type == eks_identity.POD_IDENTITY_ASSOCIATION and r.inputs.get("namespace") == t.ns))


def _no_agent(w: World, t: Tenant, b: str) -> World:
    return _plan(w, lambda r: r.inputs.get("addonName") != eks_identity.POD_IDENTITY_AGENT)


def _untrusted_role(w: World, t: Tenant, b: str) -> World:
    assoc = eks_identity.pod_role(w.plan, w.spec.cluster.name, t.ns, t.workload_identity.service_account if t.workload_identity else "")
    assert assoc is not None
    ec2_only = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    )
    hit = lambda r: r.type == ROLE and planned_arn(ROLE, r.name) == assoc["roleArn"]  # noqa: E731
    return _plan(w, lambda r: True, lambda r: replace(r, inputs={**r.inputs, "assumeRolePolicy": ec2_only}) if hit(r) else r)


def _other_bucket_policy(w: World, t: Tenant, b: str) -> World:
    other = json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{b}-archive/*"}]})
    return _plan(w, lambda r: True, lambda r: replace(r, inputs={**r.inputs, "policy": other}) if r.type == ROLE_POLICY else r)


def _no_endpoint_route(w: World, t: Tenant, b: str) -> World:
    gateway = lambda r: r.type == vpc.VPC_ENDPOINT and r.inputs.get("vpcEndpointType") == "Gateway"  # noqa: E731
    return _plan(w, lambda r: True, lambda r: replace(r, inputs={**r.inputs, "routeTableIds": []}) if gateway(r) else r)


def _endpoint_denies(w: World, t: Tenant, b: str) -> World:
    only_other = json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::ecr-layers/*"}]})
    gateway = lambda r: r.type == vpc.VPC_ENDPOINT and r.inputs.get("vpcEndpointType") == "Gateway"  # noqa: E731
    return _plan(w, lambda r: True, lambda r: replace(r, inputs={**r.inputs, "policy": only_other}) if gateway(r) else r)


BREAKAGES: list[tuple[str, str, Edit]] = [
    ("no-service-account", "service account", _no_sa),
    ("no-association", "pod identity association", _no_association),
    ("no-agent-addon", "pod identity agent", _no_agent),
    ("role-trusts-ec2-only", "role", _untrusted_role),
    ("policy-names-another-bucket", "iam policy", _other_bucket_policy),
    ("no-dns-policy", "dns", _drop_policy("allow-dns")),
    ("no-s3-policy", "network policy egress", _drop_policy("allow-s3")),
    ("s3-policy-names-other-ranges", "network policy egress", _s3_policy_elsewhere),
    ("no-aws-services-policy", "pod identity agent", _drop_policy("allow-aws-services")),
    ("endpoint-not-in-route-tables", "route table", _no_endpoint_route),
    ("endpoint-policy-for-other-buckets", "endpoint policy", _endpoint_denies),
]


@pytest.mark.parametrize(("case", "stage_name", "edit"), BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_one_broken_leg_stops_the_walk_at_its_stage(case: str, stage_name: str, edit: Edit) -> None:
    w = world("prod")
    tenant, bucket = reader(w, sealed=True)  # a tenant whose own egress does not also open S3's addresses
    broken = edit(w, tenant, bucket)
    with pytest.raises(AssertionError) as failure:
        walk(broken, tenant, bucket)
    assert str(failure.value).startswith(f"stage '{stage_name}':"), f"{case}: {failure.value}"
