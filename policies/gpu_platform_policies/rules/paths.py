"""Paths a tenant's workload walks, evaluated with the components' own semantics (gpu_platform.behaviour).

- `volume-claims-bind`: every claim the stack renders gets a StorageClass that exists and a provisioner that
  is installed with its credentials (behaviour.storage: DefaultStorageClass admission, PV controller,
  external-provisioner), the EBS and FSx CSI add-ons' controller roles on EKS included; and every FSx for
  Lustre class the stack creates carries parameters its driver and FSx accept (a tenant's claim on it binds).
- `tenant-data-egress`: a default-deny tenant namespace still reaches DNS and, on EKS, the Pod Identity agent,
  STS/ECR interface endpoints and S3 (behaviour.networkpolicy: Kubernetes NetworkPolicy semantics).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.aws import fsx
from gpu_platform.aws.storage import ADDON as EBS_ADDON
from gpu_platform.aws.storage import POD_IDENTITY_AGENT_ADDON, POLICY_ARN, PROVISIONER, SERVICE_ACCOUNT
from gpu_platform.behaviour.networkpolicy import Endpoint, connection, selecting
from gpu_platform.behaviour.storage import FSX_PROVISIONER, claim_binds
from gpu_platform.behaviour.wiring import UNKNOWN, Wiring
from gpu_platform.k8s.tenant_network import LABEL_OWNER, PLATFORM_OWNER, PREFIX_LIST_ANNOTATION
from gpu_platform.plan_ids import PLANNED_S3_ADDRESS
from gpu_platform_policies.model import Context, Finding, PlanView, rule
from gpu_platform_policies.view import get, helm_releases, is_provider_name_of, object_name, objects, tenant_namespaces, truthy

EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_ADDON = "aws:eks/addon:Addon"
IAM_ROLE = "aws:iam/role:Role"
POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
VPC = "aws:ec2/vpc:Vpc"
POD_IDENTITY_AGENT = ("169.254.170.23", 80)
DNS = Endpoint("kube-system", {"k8s-app": "kube-dns"})


# The CSI drivers EKS stacks install as add-ons: add-on, provisioner name, controller service account, AWS policy.
CSI_ADDONS = (
    (EBS_ADDON, PROVISIONER, SERVICE_ACCOUNT, POLICY_ARN),
    (fsx.ADDON, FSX_PROVISIONER, fsx.SERVICE_ACCOUNT, fsx.POLICY_ARN),
)


def _role_of(plan: PlanView, ids: Wiring, addon: Any, service_account: str) -> Any | None:
    """The Role a Pod Identity association gives the service account.

    Followed by the association's property dependency (behaviour.wiring) where it names one Role; else by the
    role name at the end of its ARN (the offline engine's or a real auto-name, `.../role/[path/]<name>`);
    unknown and ambiguous, the add-on's sibling role.
    """
    assoc = [
        a
        for a in get(addon.inputs, "podIdentityAssociations", default=[]) or []
        if isinstance(a, Mapping) and a.get("serviceAccount") == service_account
    ]
    if not assoc:
        return None
    arn = assoc[0].get("roleArn")
    followed = [r for t in ids.targets(addon, "podIdentityAssociations", [arn]) if (r := ids.resource(t, IAM_ROLE)) is not None]
    if len(followed) == 1:
        return followed[0]
    text = str(arn or "")
    name = text.rsplit("/", 1)[-1] if ":role/" in text else None
    roles = plan.of_type(IAM_ROLE)
    return next((r for r in roles if is_provider_name_of(name, r)), None) or next((r for r in roles if r.parent == addon.parent), None)


def _attaches_to(ids: Wiring, attachment: Any, role: Any) -> bool:
    """Whether a RolePolicyAttachment's `role` (the Role's name) is this role.

    By its property dependency where it names a Role; else by the name; unknown (a first preview), the role's sibling.
    """
    followed = ids.resource(ids.target(attachment, "role"), IAM_ROLE)
    if followed is not None:
        return followed is role
    value = attachment.inputs.get("role")
    if value == UNKNOWN:
        return attachment.parent == role.parent
    return is_provider_name_of(value, role)


def _driver_lacks(plan: PlanView, ids: Wiring, addon: Any, has_agent: bool, service_account: str, policy_arn: str) -> str | None:
    """What a CSI add-on's controller lacks to call AWS (agent, association, policy on its role), or None."""
    if not has_agent:
        return f"the {POD_IDENTITY_AGENT_ADDON} add-on is missing, so the controller gets no credentials"
    role = _role_of(plan, ids, addon, service_account)
    if role is None:
        return f"no Pod Identity association gives {service_account} an IAM role"
    attached = any(a.inputs.get("policyArn") == policy_arn and _attaches_to(ids, a, role) for a in plan.of_type(POLICY_ATTACHMENT))
    return None if attached else f"its IAM role {role.name} lacks {policy_arn.rsplit('/', 1)[-1]}"


def installed_drivers(plan: PlanView) -> dict[str, str | None] | None:
    """Provisioner -> None if it can provision, else what it lacks; None off EKS (an existing cluster's drivers are its own).

    The CSI add-ons of CSI_ADDONS that the plan installs (EBS always, FSx for Lustre where the stack asks).
    """
    if not plan.of_type(EKS_CLUSTER):
        return None
    addons = {str(a.inputs.get("addonName")): a for a in plan.of_type(EKS_ADDON)}
    agent = POD_IDENTITY_AGENT_ADDON in addons
    ids = plan.wiring
    return {
        provisioner: _driver_lacks(plan, ids, addons[name], agent, account, policy)
        for name, provisioner, account, policy in CSI_ADDONS
        if name in addons
    }


def rendered_claims(plan: PlanView) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(resource, what, claim spec) of every claim the stack renders: chart values that become claims, PVCs, StatefulSets."""
    for r in helm_releases(plan, "kube-prometheus-stack"):
        values = r.inputs.get("values") or {}
        prom = get(values, "prometheus", "prometheusSpec", "storageSpec", "volumeClaimTemplate", "spec")
        if isinstance(prom, Mapping):
            yield r.name, "Prometheus's volumeClaimTemplate", prom
        am = get(values, "alertmanager", "alertmanagerSpec", "storage", "volumeClaimTemplate", "spec")
        if isinstance(am, Mapping):
            yield r.name, "Alertmanager's volumeClaimTemplate", am
        grafana = get(values, "grafana", "persistence", default={}) or {}
        if truthy(grafana.get("enabled", False)):
            yield r.name, "Grafana's persistence claim", {k: v for k, v in grafana.items() if k == "storageClassName"}
    for pvc in objects(plan, "PersistentVolumeClaim", ""):
        yield pvc.name, f"PersistentVolumeClaim {object_name(pvc)}", get(pvc.inputs, "spec", default={}) or {}
    for sts in objects(plan, "StatefulSet", "apps"):
        for t in get(sts.inputs, "spec", "volumeClaimTemplates", default=[]) or []:
            yield sts.name, f"StatefulSet {object_name(sts)} claim {get(t, 'metadata', 'name')}", t.get("spec") or {}


@rule(
    "volume-claims-bind",
    "Every claim the stack renders names a StorageClass that exists, served by an installed driver with its IAM role (EKS).",
    "mandatory",
    "stack",
    category="paths",
)
def volume_claims_bind(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """EKS from 1.30 creates no default StorageClass and no EBS driver: Prometheus stays Pending, and no GPU alert fires."""
    classes = [dict(c.inputs) for c in objects(plan, "StorageClass", "storage.k8s.io")]
    drivers = installed_drivers(plan)
    for resource, what, claim in rendered_claims(plan):
        if drivers is None:  # an existing cluster: its classes and drivers are its own; the claim must name one
            if not claim.get("storageClassName") and not any(c for c in classes):
                yield Finding(resource, f"{what} names no StorageClass; set storage.className to a class the cluster has")
            continue
        binding = claim_binds(claim, classes, drivers)
        if not binding.binds:
            yield Finding(resource, f"{what} stays Pending: {binding.reason}")
    # Classes the stack creates for tenants' claims (FSx for Lustre): a claim naming one must bind too.
    for sc in objects(plan, "StorageClass", "storage.k8s.io"):
        if drivers is None or sc.inputs.get("provisioner") != FSX_PROVISIONER:
            continue
        name = str(get(sc.inputs, "metadata", "name"))
        binding = claim_binds({"storageClassName": name, "accessModes": ["ReadWriteMany"]}, classes, drivers)
        if not binding.binds:
            yield Finding(sc.name, f"a tenant's claim on StorageClass {name!r} stays Pending: {binding.reason}")


def _vpc_endpoint_address(plan: PlanView) -> str | None:
    """An address inside the VPC (where interface endpoints' ENIs live), or None without a VPC in the plan."""
    vpcs = plan.of_type(VPC)
    if not vpcs:
        return None
    net = ipaddress.ip_network(str(vpcs[0].inputs.get("cidrBlock")))
    return str(net.network_address + 10)


def s3_ranges(manifests: list[dict[str, Any]], namespace: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The CIDRs the namespace's platform `allow-s3` names (annotated with S3's prefix list); empty without one.

    The program fills them from its live read of the list (gpu_platform.k8s.tenant_network), so in a real
    preview they are the region's S3 ranges.
    """
    out = []
    for m in manifests:
        meta = m.get("metadata") or {}
        owned = (meta.get("labels") or {}).get(LABEL_OWNER) == PLATFORM_OWNER
        if m.get("kind") != "NetworkPolicy" or meta.get("namespace") != namespace or not owned:
            continue
        if PREFIX_LIST_ANNOTATION not in (meta.get("annotations") or {}):
            continue
        for egress in get(m, "spec", "egress", default=[]) or []:
            for peer in egress.get("to") or []:
                try:
                    out.append(ipaddress.ip_network(str(get(peer, "ipBlock", "cidr")), strict=False))
                except ValueError:
                    continue  # not a CIDR (or none): the API server would refuse the policy
    return out


def not_s3(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str | None:
    """Why a range cannot be one of S3's prefix list: S3's addresses are public, and the list never holds every address."""
    if net.prefixlen == 0:
        return "every address (the internet through NAT, not S3's prefix list)"
    if not net.is_global:
        return "not a public range (S3's addresses are public)"
    return None


def s3_address(ranges: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> str:
    """Where a pod's packets to S3 go: an address of the S3 ranges `allow-s3` names.

    Every address of S3's list is routed through the gateway endpoint alike; without such a range,
    plan_ids.PLANNED_S3_ADDRESS (the offline plan's list).
    """
    planned = ipaddress.ip_address(PLANNED_S3_ADDRESS)
    for net in ranges:
        if not_s3(net) is None:
            return PLANNED_S3_ADDRESS if planned in net else str(next(iter(net.hosts()), net.network_address))
    return PLANNED_S3_ADDRESS


@rule(
    "tenant-data-egress",
    "Default-deny tenant namespaces still reach DNS and, on EKS, the Pod Identity agent, the VPC endpoints and S3.",
    "mandatory",
    "stack",
    category="paths",
)
def tenant_data_egress(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """NetworkPolicy semantics (behaviour.networkpolicy) from a tenant pod: a sealed namespace cannot read its data."""
    manifests = [dict(r.inputs) for r in plan if r.type.startswith("kubernetes:") and "apiVersion" in r.inputs]
    eks = bool(plan.of_type(EKS_CLUSTER))
    endpoint = _vpc_endpoint_address(plan)
    for ns, res_name in tenant_namespaces(plan).items():
        pod = Endpoint(ns, {}, "10.255.255.254")
        if not selecting(manifests, pod, "Egress"):
            continue  # not isolated for egress: everything is reachable
        probes: list[tuple[str, Endpoint, int, str]] = [("DNS (kube-dns, UDP 53)", DNS, 53, "UDP"), ("DNS (kube-dns, TCP 53)", DNS, 53, "TCP")]
        if eks:
            probes.append(("the EKS Pod Identity agent (169.254.170.23:80)", Endpoint(None, ip=POD_IDENTITY_AGENT[0]), POD_IDENTITY_AGENT[1], "TCP"))
            ranges = s3_ranges(manifests, ns)
            for net in ranges:
                why = not_s3(net)
                if why is not None:
                    yield Finding(res_name, f"allow-s3 in {ns} names {net}, which is {why}; it must name the CIDRs of S3's prefix list")
            s3 = s3_address(ranges)
            probes.append((f"S3 ({s3}:443 through the gateway endpoint)", Endpoint(None, ip=s3), 443, "TCP"))
            if endpoint is not None:
                probes.append((f"the STS and ECR interface endpoints in the VPC ({endpoint}:443)", Endpoint(None, ip=endpoint), 443, "TCP"))
        for what, dst, port, proto in probes:
            decision = connection(manifests, pod, dst, port, proto)
            if not decision.allowed:
                yield Finding(res_name, f"pods in {ns} cannot reach {what}: {decision.reason}")


# Where a node listens that a tenant pod must never reach: the kubelet's API and SSH, at an address of each
# private range (an EKS VPC's nodes, an on-prem cluster's). The instance metadata service is kept from pods by
# the launch templates' hop limit of 1 (imdsv2-required), not by NetworkPolicy.
NODE_PORTS = ((10250, "the kubelet API"), (22, "SSH"))
PRIVATE_PROBES = ("10.0.0.10", "172.16.0.10", "192.168.0.10", "100.64.0.10")


@rule(
    "tenant-egress-avoids-nodes",
    "A tenant's egress never opens the nodes' kubelet API or SSH (at any private address) to its pods.",
    "mandatory",
    "stack",
    category="paths",
)
def tenant_egress_avoids_nodes(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """An egress rule to 0.0.0.0/0 with no `except` on every port also reaches every node (NetworkPolicy semantics).

    Probed with the NetworkPolicy evaluator (behaviour.networkpolicy.connection) from a pod of each tenant
    namespace the platform isolates for egress; a path open there is open on the cluster.
    """
    manifests = [dict(r.inputs) for r in plan if r.type.startswith("kubernetes:") and "apiVersion" in r.inputs]
    for ns, res_name in tenant_namespaces(plan).items():
        pod = Endpoint(ns, {}, "10.255.255.254")
        if not selecting(manifests, pod, "Egress"):
            continue  # not isolated for egress: tenant-data-egress and the platform's default deny judge that
        for ip, port, what in ((ip, port, what) for ip in PRIVATE_PROBES for port, what in NODE_PORTS):
            decision = connection(manifests, pod, Endpoint(None, ip=ip), port, "TCP")
            if decision.allowed:
                yield Finding(
                    res_name,
                    f"pods in {ns} reach {what} at {ip}:{port} ({decision.reason}); an egress rule opens it: `except` the private "
                    "ranges from a wide CIDR, or list only the ports the tenant needs",
                )
                break
