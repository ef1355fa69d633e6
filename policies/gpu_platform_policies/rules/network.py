"""Network and identity paths on EKS: EFA reach, who carries the tenants' groups, S3 off NAT, the deployer rule's group.

Each rule follows the plan's real wiring (which security groups an interface carries, which rules
name those groups, which route table a node subnet uses, which access entry carries a group) with
the upstream behaviour in `gpu_platform.behaviour`, never by resource names, and follows references
by Pulumi's property dependencies (behaviour.wiring), never by the offline engine's ids.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_platform.behaviour import ecr, eks_identity, rbac, vpc
from gpu_platform.behaviour import security_groups as sg
from gpu_platform.behaviour.wiring import UNKNOWN, label
from gpu_platform_policies.model import Context, Finding, PlanView, rule
from gpu_platform_policies.rules.versions import image_refs
from gpu_platform_policies.view import EKS_CLUSTER, LAUNCH_TEMPLATE, NODE_GROUP, SUBNET, kind_of, namespace_of, pools, tenant_namespaces

ROLE_BINDING = "RoleBinding"


@rule(
    "efa-group-self-rules",
    "Every EFA interface carries a security group that allows all traffic to and from itself, so two nodes of the pool exchange EFA traffic.",
    "mandatory",
    "stack",
    category="network",
)
def efa_group_self_rules(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """EC2 User Guide, "Prepare an EFA-enabled security group"; evaluated between two nodes of each launch template.

    Groups are followed by Pulumi's property dependencies (behaviour.wiring), so a deployed stack's ids and a
    first preview's unknown ones are judged alike. On a first preview an interface whose groups are all unknown
    is taken to carry every group the template's interfaces are built from; which interface carries which is
    judged once the ids are known (a deployed stack's preview, the offline gate).
    """
    ids = plan.wiring
    rules = sg.rules_of(plan, ids)
    for lt in plan.of_type(LAUNCH_TEMPLATE):
        a = sg.launch_template_interfaces(lt, "node-a", ids)
        b = sg.launch_template_interfaces(lt, "node-b", ids)
        for mine, peer in zip(a, b, strict=True):
            if not mine.efa:
                continue
            verdict = sg.exchange_all(rules, mine, peer, efa=True)
            if verdict.allowed and sg.self_group(rules, mine) is not None:
                continue
            where = mine.name.split("/", 1)[1]
            why = f"{verdict.stage}: {verdict.reason}" if not verdict.allowed else "its ingress and egress self-rules sit on different groups"
            yield Finding(
                lt.name,
                f"EFA interface {where} carries [{sg.groups_text(mine)}], none with all-traffic ingress and egress rules referencing "
                f"itself ({why}); add a group whose rules allow all traffic to and from itself",
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
    """Datasets and checkpoints through NAT are billed per GB (VPC "Route priority": the endpoint's prefix-list route wins).

    Subnets and route tables are followed by Pulumi's property dependencies (behaviour.wiring), so the rule
    judges a real preview as it judges the offline plan.
    """
    resources = list(plan)
    ids = plan.wiring
    training = {p.resource for p in pools(plan, ctx.catalog) if p.workload_class == "training" and p.platform == "eks"}
    for ng in plan.of_type(NODE_GROUP):
        if ng.name not in training:
            continue
        for subnet in ids.targets(ng, "subnetIds"):
            created = ids.resource(subnet, SUBNET)
            region = vpc.region_of_zone(str(created.inputs.get("availabilityZone", ""))) if created is not None else None
            if created is None or region is None:
                continue  # an existing VPC's subnet: its routes are not in the plan
            hop = vpc.s3_hop(resources, subnet, region, ids)
            if hop.kind in ("nat-gateway", "internet-gateway"):
                yield Finding(
                    ng.name,
                    f"S3 traffic from subnet {label(subnet)} (route table {hop.route_table}) leaves through {hop.target}: no S3 gateway endpoint "
                    "on that route table, so training data and checkpoints pay NAT per-GB charges",
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
    ids = plan.wiring
    carried: dict[str, str] = {}
    for lt in plan.of_type(LAUNCH_TEMPLATE):
        for interface in sg.launch_template_interfaces(lt, lt.name, ids):
            for group in interface.groups:
                carried.setdefault(group, lt.name)
    for rule_ in sg.rules_of(plan, ids):
        # A group that cannot be followed (unknown and built from no resource) identifies no group.
        if rule_.direction != "ingress" or rule_.cidr is None or rule_.group_id == UNKNOWN or rule_.group_id not in carried:
            continue
        if rule_.all_traffic or (rule_.protocol == "6" and (rule_.from_port or 0) <= 443 <= (rule_.to_port or 65535)):
            yield Finding(
                rule_.resource,
                f"TCP 443 from {rule_.cidr} is opened on {label(rule_.group_id)}, which {carried[rule_.group_id]}'s node interfaces carry; "
                "put the deployers' rule on the control-plane security group (EKS vpcConfig.securityGroupIds)",
            )


@rule(
    "images-pulled-in-region",
    "Every image from an ECR registry is pulled from the stack's own region, where the VPC's ecr.dkr interface endpoint answers.",
    "mandatory",
    "stack",
    category="network",
)
def images_pulled_in_region(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """The ecr.dkr endpoint's private DNS answers `*.dkr.ecr.<its region>.amazonaws.com` only (behaviour.vpc).

    An image named in another region's registry resolves to public addresses: the pull leaves through NAT
    (billed per GB, cross-region), and a VPC without NAT cannot start the pod at all. EKS serves its own
    images in every region (behaviour.ecr, amazon-eks-ami get-ecr-uri.sh), so the fix is the node's region.
    """
    regions = {
        str(e.inputs.get("serviceName", "")).removeprefix("com.amazonaws.").removesuffix(".ecr.dkr")
        for e in plan.of_type(vpc.VPC_ENDPOINT)
        if str(e.inputs.get("serviceName", "")).endswith(".ecr.dkr")
    }
    if len(regions) != 1:
        return  # no endpoint (on-prem, or a VPC whose endpoints this stack does not create): nothing answers privately
    region = next(iter(regions))
    for r in plan:
        for path, repo, _, _ in image_refs(r.inputs):
            pulled = ecr.ecr_region(repo)
            if pulled is None or pulled == region:
                continue
            fix = f" (EKS serves it from {ecr.registry(region)})" if repo.split(".", 1)[0] in ecr.EKS_ACCOUNTS else ""
            yield Finding(
                r.name,
                f"{path}: image {repo} is pulled from {pulled}, but the stack runs in {region}: its ecr.dkr endpoint answers "
                f"only *.dkr.ecr.{region}.amazonaws.com, so this pull goes out through NAT, cross-region{fix}",
            )
