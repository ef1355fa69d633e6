"""Journey: a tenant's pod reaches what it needs, and nothing of another tenant's (issue 16, item 7).

Relies on Kubernetes NetworkPolicy semantics as the API reference and docs define them, evaluated by
gpu_platform.behaviour.networkpolicy over the stack's rendered objects (a connection needs the source's
egress AND the destination's ingress; isolation only where a policy selects the pod; rules are a union), and on:
- CoreDNS on EKS (coredns add-on) and kubeadm clusters runs as pods labelled `k8s-app: kube-dns` in kube-system,
  serving UDP and TCP 53 (coredns deployment manifests, kubernetes/kubernetes cluster/addons/dns);
- the EKS Pod Identity agent answers on 169.254.170.23:80 (EKS user guide, "Understand how EKS Pod Identity works");
- the EKS private API endpoint is ENIs in the cluster's subnets, TCP 443 (EKS user guide, "Cluster API server
  endpoint"); an existing cluster's API servers are `cluster.apiServerCidrs` on `cluster.apiServerPort`;
- S3 through a gateway endpoint keeps S3's public destination addresses (VPC user guide, "Gateway endpoints":
  a route to the S3 prefix list); the route-table leg is the AWS side's (issue 16, integrator joins it).
Pods get addresses from the VPC CIDR on EKS (VPC CNI) and from the pod network on-prem.
"""

from __future__ import annotations

import ipaddress
from itertools import permutations

import pytest

from gpu_platform.aws.network import subnet_plan
from gpu_platform.behaviour.networkpolicy import Endpoint, connection, vpc_cni_service_connection
from gpu_platform.engine import run_program
from gpu_platform.plan_ids import PLANNED_S3_ADDRESS, PLANNED_S3_PREFIX_LIST
from gpu_platform.spec.loader import read_stack_config
from tests.conftest import plan_for, spec_for, stack_path
from tests.journeys.helpers import kube_dns_service, kubernetes_service, manifests, stage

STACKS = ("prod", "onprem")
DNS = Endpoint("kube-system", {"k8s-app": "kube-dns"}, "172.20.0.10")
# An address of S3's prefix list as the offline engine answers the program's read of it (plan_ids).
S3 = Endpoint(None, ip=PLANNED_S3_ADDRESS)
# Public HTTPS servers that are not S3 (a code host, a CDN): reachable only where the stack says.
INTERNET = (Endpoint(None, ip="140.82.112.3"), Endpoint(None, ip="104.16.0.1"))
POD_IDENTITY_AGENT = Endpoint(None, ip="169.254.170.23")
ONPREM_POD_NETWORK = "10.244.0.0/16"


def pod_network(stack: str) -> ipaddress.IPv4Network:
    spec = spec_for(stack)
    return ipaddress.IPv4Network(spec.network.cidr if spec.is_eks else ONPREM_POD_NETWORK)


def tenant_pod(stack: str, index: int, labels: dict[str, str] | None = None) -> Endpoint:
    """A pod of the index-th tenant, with an address of the pod network."""
    tenant = spec_for(stack).tenants[index]
    return Endpoint(tenant.ns, labels or {"app": "worker"}, str(pod_network(stack).network_address + 1000 + index))


@pytest.mark.parametrize("stack", STACKS)
def test_a_tenant_pod_resolves_dns(stack: str) -> None:
    objs = manifests(stack)
    for i, tenant in enumerate(spec_for(stack).tenants):
        pod = tenant_pod(stack, i)
        for proto in ("UDP", "TCP"):
            d = connection(objs, pod, DNS, 53, proto)
            stage(f"{tenant.name}: kube-dns {proto} 53", d.allowed, d.reason)


@pytest.mark.parametrize("stack", STACKS)
def test_a_tenant_pod_reaches_the_api_server(stack: str) -> None:
    """In-cluster clients dial kubernetes.default: on EKS the VPC CNI agent judges that at the ClusterIP (before DNAT)."""
    spec = spec_for(stack)
    objs = manifests(stack)
    for i, tenant in enumerate(spec.tenants):
        pod = tenant_pod(stack, i)
        if spec.is_eks:
            dns, api = kube_dns_service(spec), kubernetes_service(spec)
            d = vpc_cni_service_connection(objs, pod, dns, 53, "UDP")
            stage(f"{tenant.name}: resolve kubernetes.default at kube-dns {dns.cluster_ip}", d.allowed, d.reason)
            d = vpc_cni_service_connection(objs, pod, api, 443)
            stage(f"{tenant.name}: kubernetes.default {api.cluster_ip}:443 (VPC CNI agent, before DNAT)", d.allowed, d.reason)
            d = connection(objs, pod, api.backend, 443)
            stage(f"{tenant.name}: the cluster endpoint's ENI {api.backend.ip}:443 by hostname", d.allowed, d.reason)
        else:
            api = Endpoint(None, ip=str(ipaddress.IPv4Network(spec.cluster.api_server_cidrs[0]).network_address))
            d = connection(objs, pod, DNS, 53, "UDP")
            stage(f"{tenant.name}: resolve kubernetes.default", d.allowed, d.reason)
            d = connection(objs, pod, api, spec.cluster.api_server_port)
            stage(f"{tenant.name}: API server {api.ip}:{spec.cluster.api_server_port}", d.allowed, d.reason)


def test_an_api_rule_naming_only_the_endpoint_ips_is_caught() -> None:
    """The form this platform shipped before: an ipBlock of the VPC (the endpoint ENIs) admits no traffic to the ClusterIP."""
    spec = spec_for("prod")
    objs = [o for o in manifests("prod") if not (o["kind"] == "NetworkPolicy" and o["metadata"]["name"] != "default-deny")]
    old = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-kubernetes-api", "namespace": spec.tenants[0].ns},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": spec.network.cidr}}], "ports": [{"protocol": "TCP", "port": 443}]}],
        },
    }
    api = kubernetes_service(spec)
    pod = tenant_pod("prod", 0)
    assert connection([*objs, old], pod, api.backend, 443).allowed, "the old rule does admit the endpoint IPs"
    d = vpc_cni_service_connection([*objs, old], pod, api, 443)
    assert not d.allowed and "before kube-proxy's DNAT" in d.reason, d.reason


def test_a_tenant_pod_reads_s3_with_its_pod_identity_on_eks() -> None:
    """Stages in the order an SDK walks them: resolve the endpoint, fetch credentials from the agent, call S3."""
    stack = "prod"
    objs = manifests(stack)
    for i, tenant in enumerate(spec_for(stack).tenants):
        pod = tenant_pod(stack, i)
        d = connection(objs, pod, DNS, 53, "UDP")
        stage(f"{tenant.name}: resolve s3.us-east-1.amazonaws.com", d.allowed, d.reason)
        d = connection(objs, pod, POD_IDENTITY_AGENT, 80)
        stage(f"{tenant.name}: credentials from the Pod Identity agent", d.allowed, d.reason)
        d = connection(objs, pod, S3, 443)
        stage(f"{tenant.name}: S3 over HTTPS (NetworkPolicy leg)", d.allowed, d.reason)


@pytest.mark.parametrize("stack", STACKS)
def test_a_tenant_reaches_the_internet_only_where_its_stack_says(stack: str) -> None:
    """Issue 16: "egress to further CIDRs or 0.0.0.0/0 on chosen ports where the stack says"; S3 is not a reason to open it.

    On EKS S3 stays reachable for every tenant with `network.s3` (its prefix list's CIDRs, `allow-s3`), while
    a public HTTPS address outside that list is reachable only from a tenant whose `network.egress` covers it.
    """
    spec = spec_for(stack)
    objs = manifests(stack)
    for i, tenant in enumerate(spec.tenants):
        pod = tenant_pod(stack, i)
        declared = [r for r in tenant.network.egress if 443 in r.ports and r.protocol == "TCP"]
        for server in INTERNET:
            says = any(
                any(ipaddress.ip_address(server.ip) in ipaddress.ip_network(c) for c in r.cidrs)
                and not any(ipaddress.ip_address(server.ip) in ipaddress.ip_network(e) for e in r.except_)
                for r in declared
            )
            d = connection(objs, pod, server, 443)
            stage(f"{tenant.name}: {server.ip}:443 {'open (network.egress)' if says else 'refused'}", d.allowed == says, d.reason)
        if spec.is_eks and tenant.network.s3:
            d = connection(objs, pod, S3, 443)
            stage(f"{tenant.name}: S3 {S3.ip}:443", d.allowed, d.reason)
    if spec.is_eks:
        assert any(not t.network.egress for t in spec.tenants), f"{stack} has a tenant without egress of its own to judge"
        policies = [o for o in objs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "allow-s3"]
        assert policies, "allow-s3 is rendered"
        for o in policies:
            named = [p["ipBlock"]["cidr"] for r in o["spec"]["egress"] for p in r["to"]]
            assert named == list(PLANNED_S3_PREFIX_LIST), f"{o['metadata']['namespace']}/allow-s3 names {named}, not S3's prefix list"
            assert o["metadata"]["annotations"]["gpu-platform.io/prefix-list"] == f"com.amazonaws.{spec.region}.s3"


def test_an_onprem_tenant_reaches_the_data_its_stack_opens() -> None:
    """On-prem the data lives where the stack's `network.egress` says (vision: the dataset mirror)."""
    stack = "onprem"
    spec = spec_for(stack)
    objs = manifests(stack)
    for i, tenant in enumerate(spec.tenants):
        pod = tenant_pod(stack, i)
        for rule in tenant.network.egress:
            for cidr in rule.cidrs:
                target = Endpoint(None, ip=str(ipaddress.IPv4Network(cidr).network_address + 5))
                d = connection(objs, pod, DNS, 53, "UDP")
                stage(f"{tenant.name}: resolve the mirror", d.allowed, d.reason)
                for port in rule.ports:
                    d = connection(objs, pod, target, port, rule.protocol)
                    stage(f"{tenant.name}: {target.ip}:{port}", d.allowed, d.reason)
    assert any(t.network.egress for t in spec.tenants), "the onprem stack declares a data path to walk"


@pytest.mark.parametrize("stack", STACKS)
def test_a_tenant_pod_cannot_reach_another_tenants_pods(stack: str) -> None:
    """Every ordered pair of tenants, on the ports tenants open to the world (HTTPS, HTTP, serving, SSH, DNS)."""
    objs = manifests(stack)
    count = len(spec_for(stack).tenants)
    for a, b in permutations(range(count), 2):
        src, dst = tenant_pod(stack, a), tenant_pod(stack, b)
        for port, proto in ((443, "TCP"), (80, "TCP"), (8080, "TCP"), (22, "TCP"), (53, "UDP"), (9000, "TCP")):
            d = connection(objs, src, dst, port, proto)
            stage(f"{src.namespace} -> {dst.namespace} {proto}/{port} is refused", not d.allowed, d.reason)


def test_the_serving_namespace_accepts_traffic_from_the_ingress_namespace() -> None:
    """The gateway's pods (in the namespace the stack names; not the stack's, so no policy isolates them)."""
    stack = "onprem"
    spec = spec_for(stack)
    objs = manifests(stack)
    served = [(i, t) for i, t in enumerate(spec.tenants) if t.network.ingress.namespaces]
    stage("a tenant names an ingress namespace", bool(served), f"no tenant of {stack} sets network.ingress.namespaces")
    for i, tenant in served:
        for ns in tenant.network.ingress.namespaces:
            controller = Endpoint(ns, {"app.kubernetes.io/name": "envoy"}, str(pod_network(stack).network_address + 50))
            for port in tenant.network.ingress.ports or (8080,):
                d = connection(objs, controller, tenant_pod(stack, i, {"app": "model-server"}), port)
                stage(f"{ns} -> {tenant.ns}:{port}", d.allowed, d.reason)
            # Only the named namespace: another tenant's pod on the same port is still refused.
            other = next(j for j in range(len(spec.tenants)) if j != i)
            d = connection(objs, tenant_pod(stack, other), tenant_pod(stack, i), (tenant.network.ingress.ports or (8080,))[0])
            stage(f"{spec.tenants[other].ns} -> {tenant.ns} stays refused", not d.allowed, d.reason)


def test_a_load_balancer_in_the_vpc_reaches_a_tenant_that_admits_the_vpc() -> None:
    """`network.ingress.vpc` (EKS): an ALB or NLB with IP targets connects from its ENIs in the VPC straight to the pods
    (AWS Load Balancer Controller, "IP mode"), so the tenant's policy admits the VPC CIDR on the ports the stack lists;
    a tenant that does not set it still refuses the same source. Evaluated on a prod variant whose serving tenant sets it."""
    config = read_stack_config(stack_path("prod"))
    tenants = config["gpu-platform:tenants"]
    i = next(j for j, t in enumerate(tenants) if (t.get("network") or {}).get("ingress"))
    ingress = tenants[i]["network"]["ingress"]
    tenants[i]["network"]["ingress"] = {**ingress, "vpc": True, "ports": [8080]}
    plan = run_program(config, "prod-lb")
    objs = [dict(r.inputs) for r in plan.resources if r.type.startswith("kubernetes:") and "apiVersion" in r.inputs]
    spec = spec_for("prod")
    balancer = Endpoint(None, ip=str(pod_network("prod").network_address + 77))  # an ALB ENI in a VPC subnet
    served = tenant_pod("prod", i, {"app": "model-server"})
    d = connection(objs, balancer, served, 8080)
    stage(f"a load balancer in the VPC -> {served.namespace}:8080", d.allowed, d.reason)
    d = connection(objs, balancer, served, 9090)
    stage(f"a load balancer in the VPC -> {served.namespace}:9090 (not listed) is refused", not d.allowed, d.reason)
    outside = Endpoint(None, ip="192.168.7.7")
    assert ipaddress.ip_address("192.168.7.7") not in pod_network("prod")
    d = connection(objs, outside, served, 8080)
    stage(f"an address outside the VPC -> {served.namespace}:8080 is refused", not d.allowed, d.reason)
    other = next(j for j, t in enumerate(spec.tenants) if j != i and not t.network.ingress.vpc)
    d = connection(objs, balancer, tenant_pod("prod", other), 8080)
    stage(f"a load balancer in the VPC -> {spec.tenants[other].ns} (no ingress.vpc) is refused", not d.allowed, d.reason)


def test_a_public_alb_reaches_the_serving_pods_and_nothing_else_does() -> None:
    """prod's `serving` sets `ingress.loadBalancers: internet-facing` on 8080. The AWS Load Balancer Controller puts an
    internet-facing ALB in the subnets tagged `kubernetes.io/role/elb` (subnet_resolver.go ResolveViaDiscovery): the new
    VPC's public subnets (gpu_platform.aws.network). With IP targets the pod sees the ALB's private address there.
    Another tenant's pod, which lives in the private subnets, is still refused on the same port."""
    spec = spec_for("prod")
    objs = manifests("prod")
    i = next(j for j, t in enumerate(spec.tenants) if t.network.ingress.load_balancers == "internet-facing")
    _, public = subnet_plan(spec.network.cidr, spec.network.zones())[spec.network.zones()[1]]
    alb = Endpoint(None, ip=str(ipaddress.IPv4Network(public).network_address + 9))  # an ALB node's ENI, second zone
    served = tenant_pod("prod", i, {"app": "model-server"})
    d = connection(objs, alb, served, 8080)
    stage(f"internet-facing ALB in {public} -> {served.namespace}:8080", d.allowed, d.reason)
    d = connection(objs, alb, served, 9090)
    stage(f"the ALB -> {served.namespace}:9090 (not listed) is refused", not d.allowed, d.reason)
    other = next(j for j in range(len(spec.tenants)) if j != i)
    d = connection(objs, tenant_pod("prod", other), served, 8080)
    stage(f"{spec.tenants[other].ns} (a pod in a private subnet) -> {served.namespace}:8080 is refused", not d.allowed, d.reason)
    # The controller the stack installs places it: the release, its Pod Identity, and the `alb` class.
    values = next(
        r.inputs["values"] for r in plan_for("prod").of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "aws-load-balancer-controller"
    )
    stage("the AWS Load Balancer Controller is installed with ingress class alb", values["ingressClass"] == "alb", str(values))
