"""A tenant namespace's NetworkPolicies: default deny, then the paths a workload needs, then the stack's extras.

Always on: the tenant's own namespace, DNS (kube-dns), the monitoring scrape, the Kubernetes API; on EKS
also the Pod Identity agent, the VPC's interface endpoints (ECR, STS: private DNS resolves them to ENIs in
the VPC on TCP 443) and S3 (the CIDRs of its managed prefix list, `allow-s3`). Per tenant
(`tenants[].network`): egress to further CIDRs and ports, ingress from named namespaces (an ingress
controller) or from the VPC CIDR (load balancers with IP targets).

Every policy here carries `gpu-platform.io/owner: platform`; the admission policy in
gpu_platform.k8s.isolation stops tenants from creating, changing or deleting objects with that label. Tenants
may add their own NetworkPolicies in their namespace; policies are additive (docs, "Network Policies"), so a
tenant's own policy can open further paths for its pods but cannot close the platform's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from gpu_platform.aws.network import subnet_plan
from gpu_platform.behaviour.networkpolicy import Endpoint, Service, ServicePort, carves
from gpu_platform.k8s.objects import LABEL_TENANT, Manifest, metadata
from gpu_platform.plan_ids import PLANNED_S3_ADDRESS, s3_prefix_list_name
from gpu_platform.pools import DOMAIN
from gpu_platform.spec.models import PlatformSpec, Tenant

LABEL_OWNER = f"{DOMAIN}/owner"
PLATFORM_OWNER = "platform"
NAME_LABEL = "kubernetes.io/metadata.name"
# EKS Pod Identity agent: a host-network DaemonSet on this link-local address, TCP 80 (EKS user guide,
# "Understand how EKS Pod Identity works": 169.254.170.23 for IPv4, [fd00:ec2::23] for IPv6; IPv4 VPCs here).
POD_IDENTITY_AGENT = "169.254.170.23/32"
POD_IDENTITY_PORT = 80
HTTPS = 443
# On `allow-s3`: the managed prefix list whose CIDRs the policy names (com.amazonaws.<region>.s3).
PREFIX_LIST_ANNOTATION = f"{DOMAIN}/prefix-list"


def _tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": p} for p in ports]


def eks_service_cidr(vpc_cidr: str) -> str:
    """The Service CIDR EKS gives a cluster that names none (this program names none).

    EKS API, KubernetesNetworkConfigRequest `serviceIpv4Cidr`: "Kubernetes assigns addresses from either the
    10.100.0.0/16 or 172.20.0.0/16 CIDR blocks"; which one: 172.20.0.0/16 when the VPC has a 10.x CIDR, else
    10.100.0.0/16 (awslabs/amazon-eks-ami files/bootstrap.sh, `TEN_RANGE` -> DNS_CLUSTER_IP 172.20.0.10 or 10.100.0.10).
    """
    return "172.20.0.0/16" if ipaddress.ip_network(vpc_cidr).subnet_of(ipaddress.ip_network("10.0.0.0/8")) else "10.100.0.0/16"  # type: ignore[arg-type]


def kubernetes_service_ip(spec: PlatformSpec) -> str:
    """ClusterIP of `default/kubernetes`: the first address of the Service CIDR.

    kube-apiserver pkg/controlplane/services.go `ServiceIPRange`: the API server Service takes the range's first IP.
    """
    return str(ipaddress.ip_network(eks_service_cidr(spec.network.cidr)).network_address + 1)


def api_server_egress(spec: PlatformSpec) -> list[dict[str, Any]]:
    """Egress rules to the Kubernetes API.

    EKS: in-cluster clients dial `kubernetes.default`'s ClusterIP (client-go `InClusterConfig`:
    KUBERNETES_SERVICE_HOST), and the VPC CNI's policy agent judges egress before kube-proxy's DNAT, on the
    ClusterIP and Service port (gpu_platform.behaviour.networkpolicy `vpc_cni_service_connection`); the
    controller resolves Services only for selector peers, and `kubernetes` has no selector. So the rule names
    the ClusterIP itself, plus the private endpoint ENIs in the VPC for clients that use the cluster's endpoint
    hostname (both TCP 443). An existing cluster's API servers are `cluster.apiServerCidrs` on
    `cluster.apiServerPort` (CNIs such as Calico and Cilium judge after DNAT, on the endpoint).
    """
    if spec.is_eks:
        service = {"ipBlock": {"cidr": f"{kubernetes_service_ip(spec)}/32"}}
        if spec.cluster.endpoint_private_access:
            return [{"to": [service, {"ipBlock": {"cidr": spec.network.cidr}}], "ports": _tcp(HTTPS)}]
        # Public endpoint only: its addresses are AWS's and not published per cluster.
        return [{"to": [service, {"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": _tcp(HTTPS)}]
    if not spec.cluster.api_server_cidrs:
        return []  # an empty `to` would mean every destination; the spec check requires the CIDRs with tenants
    return [{"to": [{"ipBlock": {"cidr": c}} for c in spec.cluster.api_server_cidrs], "ports": _tcp(spec.cluster.api_server_port)}]


def aws_egress(spec: PlatformSpec) -> list[dict[str, Any]]:
    """EKS only: the Pod Identity agent (TCP 80) and the interface endpoints in the VPC (TCP 443)."""
    if not spec.is_eks:
        return []
    return [
        {"to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}], "ports": _tcp(POD_IDENTITY_PORT)},
        {"to": [{"ipBlock": {"cidr": spec.network.cidr}}], "ports": _tcp(HTTPS)},
    ]


def s3_peers(cidrs: Sequence[str]) -> list[dict[str, Any]]:
    """The `to` of the S3 rule: one ipBlock per CIDR of S3's managed prefix list.

    The gateway endpoint is a route-table target for that prefix list, and packets to S3 keep S3's public
    addresses, so a policy reaches S3 by naming the list's CIDRs (ipBlock takes CIDRs, not prefix lists).
    Empty would mean every destination (NetworkPolicy: an empty `to` matches all), so it is refused.
    """
    if not cidrs:
        raise ValueError("S3's prefix list has no CIDRs")
    return [{"ipBlock": {"cidr": c}} for c in cidrs]


def s3_policy_body(peers: Any) -> dict[str, Any]:
    """`allow-s3`'s spec: TCP 443 to `peers` (s3_peers of the prefix list; the program passes its live read as an Output)."""
    return {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": peers, "ports": _tcp(HTTPS)}]}


def _block(cidr: str, excepted: tuple[str, ...]) -> dict[str, Any]:
    """An ipBlock peer; `except` keeps only the carve-outs inside `cidr` (the API server rejects others)."""
    inside = [e for e in excepted if carves(e, cidr)]
    return {"ipBlock": {"cidr": cidr, "except": inside}} if inside else {"ipBlock": {"cidr": cidr}}


def extra_egress(tenant: Tenant) -> list[dict[str, Any]]:
    """The stack's `network.egress` entries, one rule each."""
    return [
        {"to": [_block(c, e.except_) for c in e.cidrs], "ports": [{"protocol": e.protocol, "port": p} for p in e.ports]}
        for e in tenant.network.egress
    ]


def load_balancer_cidrs(spec: PlatformSpec, scheme: str) -> list[str]:
    """Where the AWS Load Balancer Controller's load balancers of a scheme send from: their subnets' CIDRs.

    With IP targets the pod sees the load balancer's private addresses in its own subnets (an ALB always;
    an NLB unless client IP preservation is switched on), health checks included. The controller places
    internet-facing ones in subnets tagged `kubernetes.io/role/elb` and internal ones in
    `kubernetes.io/role/internal-elb` (pkg/networking/subnet_resolver.go ResolveViaDiscovery), which
    gpu_platform.aws.network puts on a new VPC's public and private subnets (subnet_plan). Subnets of an
    existing VPC are not known here: its CIDR stands for them.
    """
    if spec.network.mode != "new":
        return [spec.network.cidr]
    plan = subnet_plan(spec.network.cidr, spec.network.zones())
    return [public if scheme == "internet-facing" else private for private, public in plan.values()]


def extra_ingress(spec: PlatformSpec, tenant: Tenant) -> list[dict[str, Any]]:
    """The stack's `network.ingress`: load balancers' subnets and named namespaces, (EKS) the VPC CIDR, on the listed TCP ports or all."""
    ing = tenant.network.ingress
    peers: list[dict[str, Any]] = []
    if ing.load_balancers is not None and spec.is_eks:
        peers += [{"ipBlock": {"cidr": c}} for c in load_balancer_cidrs(spec, ing.load_balancers)]
    peers += [{"namespaceSelector": {"matchLabels": {NAME_LABEL: ns}}} for ns in ing.namespaces]
    if ing.vpc and spec.is_eks:
        peers.append({"ipBlock": {"cidr": spec.network.cidr}})
    if not peers:
        return []
    rule: dict[str, Any] = {"from": peers}
    if ing.ports:
        rule["ports"] = _tcp(*ing.ports)
    return [rule]


def network_policies(spec: PlatformSpec, tenant: Tenant, s3: Any) -> list[Manifest]:
    """Default deny, then allow: own namespace, DNS, monitoring scrape, API server, AWS paths, the stack's extras.

    `s3`: the `to` of the S3 rule on EKS (`s3_peers` of S3's prefix list: the program's live read, an
    Output; pure callers pass the offline engine's PLANNED_S3_PREFIX_LIST); unused elsewhere.
    """
    labels = {LABEL_TENANT: tenant.name, LABEL_OWNER: PLATFORM_OWNER}
    same_ns: list[dict[str, Any]] = [{"podSelector": {}}]
    dns_pods = {
        "namespaceSelector": {"matchLabels": {NAME_LABEL: "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    monitoring = {"namespaceSelector": {"matchLabels": {NAME_LABEL: spec.monitoring.namespace}}}
    specs: dict[str, dict[str, Any]] = {
        "default-deny": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        "allow-same-namespace": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": same_ns}],
            "egress": [{"to": same_ns}],
        },
        "allow-dns": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [dns_pods], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}],
        },
        "allow-monitoring-scrape": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [monitoring]}]},
        "allow-kubernetes-api": {"podSelector": {}, "policyTypes": ["Egress"], "egress": api_server_egress(spec)},
    }
    if spec.is_eks:
        specs["allow-aws-services"] = {"podSelector": {}, "policyTypes": ["Egress"], "egress": aws_egress(spec)}
        if tenant.network.s3:
            specs["allow-s3"] = s3_policy_body(s3)
    if tenant.network.egress:
        specs["allow-egress"] = {"podSelector": {}, "policyTypes": ["Egress"], "egress": extra_egress(tenant)}
    ingress = extra_ingress(spec, tenant)
    if ingress:
        specs["allow-ingress"] = {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": ingress}
    out = []
    for name, body in specs.items():
        meta = metadata(name, tenant.ns, labels)
        if name == "allow-s3":
            meta["annotations"] = {PREFIX_LIST_ANNOTATION: s3_prefix_list_name(str(spec.region))}
        out.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta, "spec": body})
    return out


def cluster_services(spec: PlatformSpec) -> list[tuple[str, Service]]:
    """EKS: the Services in-cluster clients dial, as EKS creates them, for `vpc_cni_service_connection`.

    kube-system/kube-dns (coredns add-on: ClusterIP .10 of the Service CIDR, the kubelet's clusterDNS;
    selector k8s-app=kube-dns; UDP and TCP 53) and default/kubernetes (no selector; 443 -> the private
    endpoint ENIs in the VPC on 443, or AWS's public addresses without a private endpoint).
    """
    if not spec.is_eks:
        return []
    net = ipaddress.ip_network(eks_service_cidr(spec.network.cidr))
    dns_ip = str(net.network_address + 10)
    dns = Service(
        "kube-system", "kube-dns", dns_ip, (ServicePort(53, 53, "UDP"), ServicePort(53, 53, "TCP")),
        Endpoint("kube-system", {"k8s-app": "kube-dns"}, dns_ip), {"k8s-app": "kube-dns"},
    )  # fmt: skip
    private = spec.cluster.endpoint_private_access
    eni = str(ipaddress.ip_network(spec.network.cidr).network_address + 20) if private else "54.80.0.10"
    api = Service("default", "kubernetes", kubernetes_service_ip(spec), (ServicePort(HTTPS, HTTPS),), Endpoint(None, ip=eni))
    return [("DNS (kube-dns)", dns), ("Kubernetes API (kubernetes.default)", api)]


def destinations(spec: PlatformSpec, tenant: Tenant) -> list[tuple[str, str | None, dict[str, str], str, int, str]]:
    """What a tenant's GPU workload must reach by address, as (name, namespace, pod labels, address, port, protocol).

    The same paths `network_policies` opens: CoreDNS (pods `k8s-app: kube-dns` in kube-system, UDP 53; on EKS
    a Service of `cluster_services` instead), the API server (on-prem `cluster.apiServerCidrs`; on EKS the
    `kubernetes` Service of `cluster_services`, plus the private endpoint ENIs dialled by hostname), on EKS
    the Pod Identity agent and an interface endpoint (ECR, STS) in the VPC, S3 at an address of its prefix
    list (plan_ids.PLANNED_S3_ADDRESS, inside the offline engine's stand-in list), and the first address and
    port of each `network.egress` entry. `explain` asks the NetworkPolicy evaluator about each.
    """
    vpc = ipaddress.ip_network(spec.network.cidr) if spec.is_eks else None
    out: list[tuple[str, str | None, dict[str, str], str, int, str]] = []
    if vpc is None:
        # On EKS DNS and the API are Services (`cluster_services`); elsewhere the CNI judges the pod after DNAT.
        out.append(("DNS (kube-dns)", "kube-system", {"k8s-app": "kube-dns"}, "10.96.0.10", 53, "UDP"))
    if vpc is not None:
        if spec.cluster.endpoint_private_access:
            out.append(("Kubernetes API endpoint ENI (by hostname)", None, {}, str(vpc.network_address + 20), HTTPS, "TCP"))
        out.append(("EKS Pod Identity agent", None, {}, POD_IDENTITY_AGENT.split("/", maxsplit=1)[0], POD_IDENTITY_PORT, "TCP"))
        out.append(("ECR/STS interface endpoint", None, {}, str(vpc.network_address + 30), HTTPS, "TCP"))
        if tenant.network.s3:
            out.append(("S3 (gateway endpoint)", None, {}, PLANNED_S3_ADDRESS, HTTPS, "TCP"))
    elif spec.cluster.api_server_cidrs:
        api_net = ipaddress.ip_network(spec.cluster.api_server_cidrs[0])
        out.append(("Kubernetes API", None, {}, str(api_net.network_address), spec.cluster.api_server_port, "TCP"))
    for i, rule in enumerate(tenant.network.egress):
        net = ipaddress.ip_network(rule.cidrs[0])
        # A representative address of the range, outside its `except` carve-outs (the middle of a large range).
        excepted = [ipaddress.ip_network(c) for c in rule.except_]
        candidates = [net.network_address + net.num_addresses // 2 + 1, net.network_address + min(1, net.num_addresses - 1)]
        address = str(next((a for a in candidates if a in net and not any(a in e for e in excepted)), net.network_address))
        for port in list(rule.ports)[:1] or [HTTPS]:
            out.append((f"network.egress[{i}] {rule.cidrs[0]}", None, {}, address, int(port), rule.protocol))
    return out
