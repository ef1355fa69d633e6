"""Security rules: instance metadata, encryption, API endpoint exposure, privilege, network isolation."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.plan_ids import planned_ip
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, default_production, rule
from gpu_platform_policies.view import (
    EKS_ADDON,
    EKS_CLUSTER,
    HELM_CHART,
    HELM_RELEASE,
    LAUNCH_TEMPLATE,
    configuration_values,
    get,
    kind_of,
    namespace_of,
    objects,
    tenant_namespaces,
    truthy,
    walk,
)

# Namespaces whose components legitimately need privileged containers (driver, toolkit, device
# plugin, MIG manager, DCGM and node agents run as host-level system software).
PRIVILEGED_NAMESPACES = frozenset({"kube-system", "gpu-operator"})
WORKLOAD_KINDS = ("Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob")


@rule(
    "imdsv2-required",
    "Launch templates require IMDSv2 session tokens and keep the metadata hop limit at the node.",
    "mandatory",
    "resource",
    category="security",
    types=(LAUNCH_TEMPLATE, "aws:ec2/instance:Instance"),
    thresholds={"imds-max-hop-limit": 1},
)
def imdsv2_required(r: Resource, ctx: Context) -> Iterator[str]:
    """IMDSv1 lets any pod on the node read the node role's credentials with one GET."""
    meta = r.inputs.get("metadataOptions") or {}
    tokens = meta.get("httpTokens")
    if tokens != "required":
        yield f"metadataOptions.httpTokens is {tokens!r}; set it to 'required' (IMDSv2 only)"
    if str(meta.get("httpEndpoint", "enabled")) == "enabled":
        hops = meta.get("httpPutResponseHopLimit")
        limit = ctx.threshold("imds-max-hop-limit")
        if hops is None or float(hops) > limit:
            yield f"metadataOptions.httpPutResponseHopLimit is {hops!r}; allowed: at most {limit:g} so pods cannot reach IMDS"


@rule(
    "ebs-encrypted",
    "Every EBS volume a launch template or instance creates is encrypted.",
    "mandatory",
    "resource",
    category="security",
    types=(LAUNCH_TEMPLATE, "aws:ebs/volume:Volume", "aws:ec2/instance:Instance"),
)
def ebs_encrypted(r: Resource, ctx: Context) -> Iterator[str]:
    """Training data, checkpoints and container layers land on these volumes."""
    if r.type == "aws:ebs/volume:Volume":
        if not truthy(r.inputs.get("encrypted")):
            yield "encrypted is not true"
        return
    mappings = r.inputs.get("blockDeviceMappings") or []
    if r.type == "aws:ec2/instance:Instance":
        mappings = [{"deviceName": "root", "ebs": r.inputs.get("rootBlockDevice") or {}}, *r.inputs.get("ebsBlockDevices", [])]
    for m in mappings:
        ebs = m.get("ebs") if isinstance(m, Mapping) and "ebs" in m else m
        if isinstance(ebs, Mapping) and not truthy(ebs.get("encrypted")):
            yield f"volume {m.get('deviceName', '?')} is not encrypted; set ebs.encrypted to true"


@rule(
    "eks-endpoint-restricted",
    "In production the EKS API endpoint is private, or public only to CIDRs that together stay small (eks-public-max-addresses).",
    "mandatory",
    "resource",
    category="security",
    types=(EKS_CLUSTER,),
    thresholds={"eks-public-max-addresses": 65536},
)
def eks_endpoint_restricted(r: Resource, ctx: Context) -> Iterator[str]:
    """A world-reachable control plane is one leaked token away from the whole cluster.

    EKS (`vpcConfig.publicAccessCidrs`, EKS User Guide "Cluster API server endpoint") admits a source
    address if any listed CIDR contains it, so what is exposed is the union of the CIDRs: two /1s are the
    whole internet just as 0.0.0.0/0 is. The union is measured in addresses, after merging overlaps.
    """
    # Without a stack context (a CrossGuard run given no config), the cluster's environment tag decides.
    undecided = ctx.production_setting is None and not ctx.environment
    production = default_production(get(r.inputs, "tags", "gpu-platform:environment")) if undecided else ctx.production
    if not production:
        return
    vpc = r.inputs.get("vpcConfig") or {}
    public = vpc.get("endpointPublicAccess", True)  # EKS default: public
    if not truthy(public) and public is not None:
        return
    cidrs = list(vpc.get("publicAccessCidrs") or [])
    if not cidrs:
        yield "vpcConfig.endpointPublicAccess is on with no publicAccessCidrs (open to the internet); make it private or list CIDRs"
        return
    nets: list[ipaddress.IPv4Network] = []
    for cidr in cidrs:
        try:
            net = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            yield f"publicAccessCidrs entry {cidr!r} is not a CIDR"
            continue
        if isinstance(net, ipaddress.IPv4Network):
            nets.append(net)
    union = list(ipaddress.collapse_addresses(nets))
    total = sum(n.num_addresses for n in union)
    limit = ctx.threshold("eks-public-max-addresses")
    if any(n.prefixlen == 0 for n in union):
        shown = ", ".join(map(str, cidrs))
        yield f"publicAccessCidrs ({shown}) together cover 0.0.0.0/0, the whole internet; list only your egress ranges"
    elif total > limit:
        broadest = min(union, key=lambda n: n.prefixlen)
        yield (
            f"publicAccessCidrs together cover {total:,} addresses ({total / 2**32:.2%} of IPv4, broadest {broadest}); "
            f"allowed: at most {limit:,.0f} (threshold eks-public-max-addresses)"
        )


@rule(
    "eks-secrets-encryption",
    "EKS envelope-encrypts Kubernetes Secrets with a KMS key.",
    "mandatory",
    "resource",
    category="security",
    types=(EKS_CLUSTER,),
)
def eks_secrets_encryption(r: Resource, ctx: Context) -> Iterator[str]:
    """Without it, Secrets sit in etcd encrypted only by the volume."""
    enc = r.inputs.get("encryptionConfig") or {}
    if "secrets" not in (enc.get("resources") or []):
        yield "encryptionConfig does not cover 'secrets'; enable secrets encryption with a KMS key"
    elif not get(enc, "provider", "keyArn"):
        yield "encryptionConfig.provider.keyArn is empty; name the KMS key"


def _privileged_paths(node: Any) -> Iterator[str]:
    for path, key, value in walk(node):
        if key == "privileged" and truthy(value) and ("securityContext" in path or "SecurityContext" in path):
            yield path


@rule(
    "no-privileged-containers",
    "No privileged container outside the system namespaces (kube-system, gpu-operator).",
    "mandatory",
    "stack",
    category="security",
)
def no_privileged_containers(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Privileged pods own the node; only host-level GPU system software may run that way."""
    for r in plan:
        kind = kind_of(r)
        if kind in WORKLOAD_KINDS:
            ns = namespace_of(r) or "default"
            body: Any = r.inputs.get("spec")
        elif r.type in (HELM_RELEASE, HELM_CHART):
            ns = namespace_of(r) or "default"
            body = r.inputs.get("values")
        else:
            continue
        if ns in PRIVILEGED_NAMESPACES:
            continue
        for path in _privileged_paths(body):
            yield Finding(r.name, f"{path} is privileged in namespace {ns}; allowed only in {', '.join(sorted(PRIVILEGED_NAMESPACES))}")


def _is_default_deny(r: Resource) -> bool:
    spec = r.inputs.get("spec") or {}
    selector = spec.get("podSelector")
    selects_all = isinstance(selector, Mapping) and not selector.get("matchLabels") and not selector.get("matchExpressions")
    types = spec.get("policyTypes") or []
    return selects_all and "Ingress" in types and not spec.get("ingress")


@rule(
    "tenant-default-deny",
    "Every tenant namespace has a default-deny NetworkPolicy (all pods, Ingress, no allow rules).",
    "mandatory",
    "stack",
    category="security",
)
def tenant_default_deny(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Tenants share nodes; isolation starts from deny and adds explicit allows, and something must enforce it."""
    tenants = tenant_namespaces(plan)
    if tenants and any(r.type == EKS_CLUSTER for r in plan):
        yield from _eks_enforces_network_policy(plan)
    covered = {namespace_of(r) for r in objects(plan, "NetworkPolicy", "networking.k8s.io") if _is_default_deny(r)}
    for ns, resource in sorted(tenants.items()):
        if ns not in covered:
            yield Finding(
                resource,
                f"tenant namespace {ns} has no default-deny NetworkPolicy (podSelector: {{}}, policyTypes: [Ingress, ...], no ingress rules)",
            )


def _eks_enforces_network_policy(plan: PlanView) -> Iterator[Finding]:
    """On EKS the VPC CNI add-on enforces NetworkPolicies only with `enableNetworkPolicy` "true" in its configuration values."""
    cni = next((r for r in plan if r.type == EKS_ADDON and r.inputs.get("addonName") == "vpc-cni"), None)
    if cni is None:
        cluster = next(r for r in plan if r.type == EKS_CLUSTER)
        yield Finding(cluster.name, "no vpc-cni add-on: nothing on this EKS cluster enforces the tenants' NetworkPolicies")
        return
    if str(get(configuration_values(cni), "enableNetworkPolicy", default="false")).lower() != "true":
        yield Finding(
            cni.name,
            'vpc-cni configurationValues has no enableNetworkPolicy "true": tenant NetworkPolicies are accepted but not enforced',
        )


SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def _opens_api(r: Resource) -> bool:
    """A security-group ingress rule that admits TCP 443 from a CIDR (the private API's port)."""
    port_ok = str(r.inputs.get("fromPort")) in ("443", "443.0") or str(r.inputs.get("ipProtocol")) == "-1"
    return port_ok and bool(r.inputs.get("cidrIpv4") or r.inputs.get("cidrIpv6"))


@rule(
    "eks-api-reachable",
    "pulumi up can reach the EKS API it creates: a public endpoint, or a private one in an existing VPC opened to deployer CIDRs.",
    "mandatory",
    "stack",
    category="security",
)
def eks_api_reachable(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """EKS user guide, "Cluster API server endpoint": a private endpoint answers only inside its VPC and connected networks."""
    creates_vpc = any(r.type == "aws:ec2/vpc:Vpc" for r in plan)
    # A rule on an interface VPC endpoint's group (HTTPS from the VPC to ECR/STS) does not front the API.
    # Groups followed by Pulumi's property dependencies (behaviour.wiring): unknown ids on a first preview read alike.
    ids = plan.wiring
    endpoint_groups = {g for r in plan.of_type("aws:ec2/vpcEndpoint:VpcEndpoint") for g in ids.targets(r, "securityGroupIds")}
    opened = any(r.type == SG_INGRESS_RULE and _opens_api(r) and ids.target(r, "securityGroupId") not in endpoint_groups for r in plan)
    for r in plan:
        if r.type != EKS_CLUSTER:
            continue
        vpc = r.inputs.get("vpcConfig") or {}
        public = vpc.get("endpointPublicAccess", True)  # EKS default: public
        if truthy(public) or public is None:
            continue
        if creates_vpc:
            yield Finding(
                r.name,
                "the API endpoint is private-only in a VPC this plan creates: nothing outside that VPC can reach it during pulumi up, "
                "so every Kubernetes resource fails; make it public to the deployers' CIDRs, or deploy into an existing routed VPC",
            )
        elif not opened:
            yield Finding(r.name, "the API endpoint is private-only and no security-group rule opens TCP 443 to a deployer CIDR")


# RFC 5737 section 3 (IPv4 TEST-NET-1/2/3) and RFC 3849 (IPv6): reserved for documentation, never routed
# on the internet, so an allow-list holding one admits nobody real.
DOCUMENTATION_RANGES = tuple(ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"))
# Where a planned input came from in the stack file (resource type, input path prefix -> stack key).
CIDR_KEYS = {
    (EKS_CLUSTER, "vpcConfig.publicAccessCidrs"): "gpu-platform:cluster.publicAccessCidrs",
    (SG_INGRESS_RULE, "cidrIpv4"): "gpu-platform:cluster.deployerCidrs",
}


def documentation_network(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The documentation range a CIDR lies inside, else None (0.0.0.0/0 contains one but is not one); non-CIDRs are None."""
    if "/" not in value:
        return None
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None
    return next((d for d in DOCUMENTATION_RANGES if d.version == net.version and net.subnet_of(d)), None)  # type: ignore[arg-type]


def _engine_addresses(r: Resource) -> set[str]:
    """The /32s the offline engine gives Elastic IPs this resource's inputs are built from (plan_ids.planned_ip, TEST-NET-3).

    A MultiKueue worker's endpoint admits the manager's NAT addresses, read from the Eips when `pulumi up` runs
    (program.build_workers); offline they are placeholders in a documentation range, not a stack's typo.
    """
    eips = {ref.split("::", 1)[1] for refs in r.refs.values() for ref in refs if ref.startswith("aws:ec2/eip:Eip::")}
    return {f"{planned_ip(name)}/32" for name in eips}


@rule(
    "documentation-cidr",
    "A production stack's CIDRs hold no documentation address range (RFC 5737 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24; RFC 3849).",
    "mandatory",
    "stack",
    category="security",
)
def documentation_cidr(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A placeholder left in an allow-list: the API (or whatever it guards) is open to no real network."""
    if not ctx.production:
        return
    for r in plan:
        built = _engine_addresses(r)
        for path, _, value in walk(r.inputs):
            for i, item in enumerate(value if isinstance(value, list) else [value]):
                if not isinstance(item, str) or (doc := documentation_network(item)) is None or item in built:
                    continue
                key = next((k for (t, p), k in CIDR_KEYS.items() if r.type == t and path.startswith(p)), None)
                at = f"{path}[{i}]" if isinstance(value, list) else path
                yield Finding(
                    r.name,
                    # The key in the words too: CrossGuard reports only the message.
                    f"{at} is {item}{f' ({key})' if key else ''}, inside the documentation range {doc} that no real network uses; "
                    "put the real egress CIDR of whoever must reach it",
                    key=f"{key}[{i}]" if key and isinstance(value, list) else key,
                )
