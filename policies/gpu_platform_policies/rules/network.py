"""Network and identity paths on EKS: EFA reach, who carries the tenants' groups, S3 off NAT, the deployer rule's group.

Each rule follows the plan's real wiring (which security groups an interface carries, which rules
name those groups, which route table a node subnet uses, which access entry carries a group) with
the upstream behaviour in `gpu_platform.behaviour`, never by resource names.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_platform.behaviour import eks_identity, rbac, vpc
from gpu_platform.behaviour import security_groups as sg
from gpu_platform.plan_ids import planned_id
from gpu_platform_policies.model import Context, Finding, PlanView, rule
from gpu_platform_policies.view import EKS_CLUSTER, LAUNCH_TEMPLATE, NODE_GROUP, UNKNOWN, kind_of, namespace_of, pools, tenant_namespaces

ROLE_BINDING = "RoleBinding"
SUBNET = "aws:ec2/subnet:Subnet"


@rule(
    "efa-group-self-rules",
    "Every EFA interface carries a security group that allows all traffic to and from itself, so two nodes of the pool exchange EFA traffic.",
    "mandatory",
    "stack",
    category="network",
)
def efa_group_self_rules(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """EC2 User Guide, "Prepare an EFA-enabled security group"; evaluated between two nodes of each launch template."""
    rules = sg.rules_of(plan)
    for lt in plan.of_type(LAUNCH_TEMPLATE):
        a = sg.launch_template_interfaces(lt, "node-a")
        b = sg.launch_template_interfaces(lt, "node-b")
        for mine, peer in zip(a, b, strict=True):
            if not mine.efa:
                continue
            verdict = sg.exchange_all(rules, mine, peer, efa=True)
            if not verdict.allowed:
                where = mine.name.split("/", 1)[1]
                yield Finding(
                    lt.name,
                    f"EFA interface {where} carries {list(mine.groups)}, none with all-traffic ingress and egress rules referencing itself "
                    f"({verdict.stage}: {verdict.reason}); add a group whose rules allow all traffic to and from itself",
                )
                break


@rule(
    "tenant-groups-have-principals",
    "On EKS every group bound in a tenant namespace is carried by an access entry, so some IAM role can act as the tenant.",
    "mandatory",
    "stack",
    category="network",
)
def tenant_groups_have_principals(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """With `authenticationMode: API` a group no access entry carries matches no authenticated user (RBAC appliesToUser)."""
    if not plan.of_type(EKS_CLUSTER):
        return
    entries = eks_identity.entries(plan)
    users = [eks_identity.authenticate_role(e.principal_arn, "check", [e]) for e in entries]
    # A principal the stack creates is unknown during a first preview: its STANDARD entry still carries the groups.
    pending = {g for e in entries if e.principal_arn == UNKNOWN and e.type == "STANDARD" for g in e.groups}
    tenants = tenant_namespaces(plan)
    for r in plan:
        if kind_of(r) != ROLE_BINDING or namespace_of(r) not in tenants:
            continue
        ns = namespace_of(r) or ""
        for subject in r.inputs.get("subjects") or []:
            if subject.get("kind") != "Group" or subject.get("name") in pending:
                continue
            if not any(u is not None and rbac.applies_to_user(u, subject, ns) for u in users):
                yield Finding(
                    r.name,
                    f"group {subject.get('name')!r} bound in tenant namespace {ns} is carried by no access entry, so no IAM principal gets it; "
                    "list the tenant's roles in tenants[].accessRoleArns",
                )


@rule(
    "training-s3-not-nat-only",
    "Subnets of GPU training pools in a VPC the stack creates route S3 through a gateway endpoint, not only through NAT gateways.",
    "mandatory",
    "stack",
    category="network",
)
def training_s3_not_nat_only(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Datasets and checkpoints through NAT are billed per GB (VPC "Route priority": the endpoint's prefix-list route wins)."""
    resources = list(plan)
    training = {p.resource for p in pools(plan, ctx.catalog) if p.workload_class == "training" and p.platform == "eks"}
    zones = {planned_id(r.name): str(r.inputs.get("availabilityZone", "")) for r in plan.of_type(SUBNET)}
    for ng in plan.of_type(NODE_GROUP):
        if ng.name not in training:
            continue
        for subnet in ng.inputs.get("subnetIds") or []:
            if subnet not in zones:
                continue  # an existing VPC's subnet: its routes are not in the plan
            hop = vpc.s3_hop(resources, subnet, zones[subnet][:-1])
            if hop.kind in ("nat-gateway", "internet-gateway"):
                yield Finding(
                    ng.name,
                    f"S3 traffic from subnet {subnet} (route table {hop.route_table}) leaves through {hop.target}: no S3 gateway endpoint on that "
                    "route table, so training data and checkpoints pay NAT per-GB charges",
                )
                break


@rule(
    "deployer-rule-off-node-groups",
    "No rule admitting TCP 443 from a CIDR sits on a security group that node or EFA interfaces carry; it belongs on the control-plane group.",
    "mandatory",
    "stack",
    category="network",
)
def deployer_rule_off_node_groups(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A group's rules apply to every interface carrying it (VPC "Security group rules"): on the cluster group they open every node."""
    carried: dict[str, str] = {}
    for lt in plan.of_type(LAUNCH_TEMPLATE):
        for interface in sg.launch_template_interfaces(lt, lt.name):
            for group in interface.groups:
                carried.setdefault(group, lt.name)
    for rule_ in sg.rules_of(plan):
        # A group id unknown during a first preview identifies no group: every such value reads alike.
        if rule_.direction != "ingress" or rule_.cidr is None or rule_.group_id == UNKNOWN or rule_.group_id not in carried:
            continue
        if rule_.all_traffic or (rule_.protocol == "6" and (rule_.from_port or 0) <= 443 <= (rule_.to_port or 65535)):
            yield Finding(
                rule_.resource,
                f"TCP 443 from {rule_.cidr} is opened on {rule_.group_id}, which {carried[rule_.group_id]}'s node interfaces carry; "
                "put the deployers' rule on the control-plane security group (EKS vpcConfig.securityGroupIds)",
            )
