"""Kubernetes NetworkPolicy semantics (networking.k8s.io/v1), as the API reference and the docs define them.

Sources, Kubernetes v1.35:
- API reference, NetworkPolicy v1 (`NetworkPolicySpec`, `NetworkPolicyIngressRule`, `NetworkPolicyEgressRule`,
  `NetworkPolicyPeer`, `NetworkPolicyPort`, `IPBlock`): staging/src/k8s.io/api/networking/v1/types.go.
- Concepts, "Network Policies" (kubernetes.io/docs/concepts/services-networking/network-policies/): "The two
  sorts of pod isolation", "Behavior of to and from selectors", "Targeting a range of ports".
- Defaulting: pkg/apis/networking/v1/defaults.go `SetDefaults_NetworkPolicy` (policyTypes) and
  `SetDefaults_NetworkPolicyPort` (protocol TCP).
- Label selectors: staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go `LabelSelectorAsSelector`.

What a CNI does with an ipBlock that covers pod IPs is left to the implementation (the docs: ipBlock
"should be cluster-external IPs"); here an endpoint's `ip` is matched against ipBlocks wherever it is
given, so a pod given an IP inside an allowed block counts as reachable (the AWS VPC CNI's network
policy agent matches pod IPs against ipBlock CIDRs).

Traffic to a Service ClusterIP is implementation-defined too; `vpc_cni_service_connection` models the
Amazon VPC CNI (the vpc-cni add-on pinned in the lockfile ships the aws-network-policy-agent release its
amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml `nodeAgent.image.tag` names; the lockfile's comment says
which releases were read). See that function.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gpu_platform.behaviour import apimachinery

Direction = Literal["Ingress", "Egress"]
# kube-apiserver sets this label on every Namespace (KEP-2161, GA in 1.22): namespaceSelectors may name one.
NAME_LABEL = "kubernetes.io/metadata.name"
PROTOCOLS = ("TCP", "UDP", "SCTP")


class UnsupportedPolicy(ValueError):
    """A policy feature this evaluator refuses to guess about (named ports: they need the pod's container spec)."""


@dataclass(frozen=True)
class Endpoint:
    """One end of a connection: a pod (namespace and labels) or, with namespace None, an address outside the cluster."""

    namespace: str | None
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    ip: str | None = None


@dataclass(frozen=True)
class Decision:
    """Whether a connection is allowed, and why (naming the policy, namespace/name, that allows or isolates)."""

    allowed: bool
    reason: str


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Label selector match (`apimachinery.selector_matches`); an absent selector here means `{}`, all pods.

    A nil selector matches nothing in apimachinery, but NetworkPolicy never passes nil for a present peer
    field (types.go: an empty podSelector "selects all pods"); callers handle absent fields themselves.
    """
    try:
        return apimachinery.selector_matches(selector or {}, labels)
    except ValueError as err:
        raise UnsupportedPolicy(str(err)) from None


def policy_types(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """defaults.go `SetDefaults_NetworkPolicy`: unset policyTypes is Ingress, plus Egress when `egress` has rules."""
    declared = spec.get("policyTypes") or []
    if declared:
        return tuple(declared)
    return ("Ingress", "Egress") if spec.get("egress") else ("Ingress",)


def namespace_labels(objects: Sequence[Mapping[str, Any]], namespace: str) -> dict[str, str]:
    """A namespace's labels as the API server stores them: the rendered Namespace's labels plus its name label."""
    for o in objects:
        if o.get("kind") == "Namespace" and o["metadata"]["name"] == namespace:
            return {**(o["metadata"].get("labels") or {}), NAME_LABEL: namespace}
    return {NAME_LABEL: namespace}


def _policies(objects: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    return (o for o in objects if o.get("kind") == "NetworkPolicy")


def _name(policy: Mapping[str, Any]) -> str:
    return f"{policy['metadata'].get('namespace', 'default')}/{policy['metadata']['name']}"


def selecting(objects: Sequence[Mapping[str, Any]], pod: Endpoint, direction: Direction) -> list[Mapping[str, Any]]:
    """Policies that isolate this pod for `direction`: in its namespace, podSelector matching, the type listed.

    types.go `NetworkPolicySpec.podSelector`: "Selects the pods to which this NetworkPolicy object applies ...
    An empty podSelector selects all pods in this namespace."
    """
    if pod.namespace is None:
        return []  # outside the cluster: no NetworkPolicy applies
    return [
        p
        for p in _policies(objects)
        if p["metadata"].get("namespace", "default") == pod.namespace
        and selector_matches(p["spec"].get("podSelector"), pod.pod_labels)
        and direction in policy_types(p["spec"])
    ]


def carves(excepted: str, cidr: str) -> bool:
    """Whether `excepted` may be an `except` of an ipBlock on `cidr`: a strict subset of it, same IP family.

    pkg/apis/networking/validation/validation.go `ValidateIPBlock` ("must be a strict subset of `cidr`").
    """
    inner, outer = ipaddress.ip_network(excepted, strict=False), ipaddress.ip_network(cidr, strict=False)
    return inner.version == outer.version and inner != outer and inner.subnet_of(outer)  # type: ignore[arg-type]


def _in_block(block: Mapping[str, Any], ip: str | None) -> bool:
    """types.go `IPBlock`: inside `cidr` and in none of `except`."""
    if ip is None:
        return False
    addr = ipaddress.ip_address(ip)
    cidr = ipaddress.ip_network(block["cidr"], strict=False)
    if addr.version != cidr.version or addr not in cidr:
        return False
    return not any(
        addr in ipaddress.ip_network(e, strict=False) for e in block.get("except") or [] if ipaddress.ip_network(e).version == addr.version
    )


def peer_matches(objects: Sequence[Mapping[str, Any]], policy_namespace: str, peer: Mapping[str, Any], other: Endpoint) -> bool:
    """types.go `NetworkPolicyPeer` and the docs' "Behavior of to and from selectors".

    ipBlock alone; podSelector alone: pods of the policy's namespace; namespaceSelector alone: every pod of
    the matching namespaces; both in one peer: pods matching podSelector in matching namespaces (AND).
    """
    if "ipBlock" in peer:
        return _in_block(peer["ipBlock"], other.ip)
    if other.namespace is None:
        return False  # selectors only select pods
    has_ns, has_pods = "namespaceSelector" in peer, "podSelector" in peer
    if has_ns:
        if not selector_matches(peer["namespaceSelector"], namespace_labels(objects, other.namespace)):
            return False
    elif other.namespace != policy_namespace:
        return False
    return not has_pods or selector_matches(peer["podSelector"], other.pod_labels)


def port_matches(ports: Sequence[Mapping[str, Any]] | None, port: int, protocol: str) -> bool:
    """types.go `NetworkPolicyPort`: no ports means all; protocol defaults to TCP (defaults.go); `endPort` makes a range.

    A named port (a string) means the container port of that name on the destination pod; the
    rendered objects carry no pod specs to resolve it, so it is refused rather than guessed.
    """
    if not ports:
        return True
    for p in ports:
        if (p.get("protocol") or "TCP") != protocol:
            continue
        number = p.get("port")
        if number is None:
            return True  # every port of the protocol
        if isinstance(number, str) and not number.isdigit():
            raise UnsupportedPolicy(f"named port {number!r}: named ports need the destination pod's container ports; use a number")
        low = int(number)
        high = int(p.get("endPort") or low)
        if low <= port <= high:
            return True
    return False


def _rules_allow(
    objects: Sequence[Mapping[str, Any]], policy: Mapping[str, Any], direction: Direction, other: Endpoint, port: int, protocol: str
) -> bool:
    """Does any rule of this policy admit `other` on port/protocol? A rule with no peers admits every peer."""
    key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    ns = policy["metadata"].get("namespace", "default")
    for rule in policy["spec"].get(key) or []:
        peers = rule.get(peers_key) or []
        if (not peers or any(peer_matches(objects, ns, peer, other) for peer in peers)) and port_matches(rule.get("ports"), port, protocol):
            return True
    return False


def side(objects: Sequence[Mapping[str, Any]], pod: Endpoint, other: Endpoint, direction: Direction, port: int, protocol: str) -> Decision:
    """One side of a connection: the docs' "isolated for ingress/egress" and "policies are additive" (union of rules)."""
    isolating = selecting(objects, pod, direction)
    if not isolating:
        where = "outside the cluster" if pod.namespace is None else f"no {direction} policy selects the pod in {pod.namespace}"
        return Decision(True, f"{direction.lower()} not isolated ({where})")
    for policy in isolating:
        if _rules_allow(objects, policy, direction, other, port, protocol):
            return Decision(True, f"{direction.lower()} allowed by {_name(policy)}")
    names = ", ".join(_name(p) for p in isolating)
    return Decision(False, f"{direction.lower()} isolated by {names}; no rule admits {protocol}/{port}")


def connection(objects: Sequence[Mapping[str, Any]], src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP") -> Decision:
    """Allowed only if src's egress AND dst's ingress both allow it; a side outside the cluster has no policy.

    Docs, "Network Policies": "both the egress policy on the source pod and the ingress policy on the
    destination pod need to allow the connection".
    """
    if protocol not in PROTOCOLS:
        raise UnsupportedPolicy(f"protocol {protocol!r}; NetworkPolicy knows {', '.join(PROTOCOLS)}")
    egress = side(objects, src, dst, "Egress", port, protocol)
    if not egress.allowed:
        return Decision(False, f"source {egress.reason}")
    ingress = side(objects, dst, src, "Ingress", port, protocol)
    if not ingress.allowed:
        return Decision(False, f"destination {ingress.reason}")
    return Decision(True, f"source {egress.reason}; destination {ingress.reason}")


# Amazon VPC CNI: egress to a Service ClusterIP.
#
# aws-network-policy-agent (the release vpc-cni ships) pkg/ebpf/bpf_client.go `attachEgressBPFProbe` attaches the egress program
# (pkg/ebpf/c/tc.v4egress.bpf.c `handle_egress`) at TC ingress of the pod's host-side veth, and `handle_egress`
# looks the packet's `ip->daddr` up in the policy's LPM trie. TC runs before netfilter, so kube-proxy has
# not yet DNAT'ed the packet: a pod calling a Service is judged on the ClusterIP and the Service port, never
# on the endpoint IPs. amazon-network-policy-controller-k8s (pkg/resolvers/endpoints.go `resolveServiceClusterIPs`
# / `getMatchingServiceClusterIPs`; the same in its newest release's `computeEgressEndpoints`)
# compensates only for selector peers: for each namespace a peer selects, every non-headless Service whose
# `spec.selector` the peer's podSelector matches (an absent podSelector matches every Service, selector-less
# ones too) gets its ClusterIP added, on the Service ports whose targetPort is the rule's port
# (pkg/k8s/service_utils.go `LookupServiceListenPort`). ipBlock peers are copied as they are
# (`resolveNetworkPeers`), so an ipBlock of the endpoint IPs does not admit traffic addressed to the ClusterIP.
# The destination's ingress probe sits on the path into the destination pod, after DNAT: judged as usual.


@dataclass(frozen=True)
class ServicePort:
    """One port of a Service: what clients dial (`port`) and where kube-proxy sends it (`target_port`)."""

    port: int
    target_port: int
    protocol: str = "TCP"


@dataclass(frozen=True)
class Service:
    """A ClusterIP Service: `selector` None for a selector-less one (the `kubernetes` Service); `backend` one endpoint."""

    namespace: str
    name: str
    cluster_ip: str
    ports: tuple[ServicePort, ...]
    backend: Endpoint
    selector: Mapping[str, str] | None = None


def _expanded_port(ports: Sequence[Mapping[str, Any]] | None, sport: ServicePort) -> bool:
    """`getMatchingServiceClusterIPs` ports: no rule ports, every port; else a rule port that is a targetPort of `sport`."""
    if not ports:
        return True
    for p in ports:
        if (p.get("protocol") or "TCP") != sport.protocol:
            continue
        number = p.get("port")
        if number is None:
            return True
        if isinstance(number, str) and not number.isdigit():
            raise UnsupportedPolicy(f"named port {number!r}: named ports need the destination pod's container ports; use a number")
        if int(number) == sport.target_port:
            return True  # LookupServiceListenPort: rule port == targetPort -> the entry carries the Service port
    return False


def _vpc_cni_egress_admits(objects: Sequence[Mapping[str, Any]], policy: Mapping[str, Any], service: Service, sport: ServicePort) -> bool:
    """Whether one egress policy, as the controller resolves it, admits a packet to `service`'s ClusterIP on `sport`."""
    clusterip = Endpoint(None, ip=service.cluster_ip)
    ns = policy["metadata"].get("namespace", "default")
    for rule in policy["spec"].get("egress") or []:
        peers = rule.get("to")
        if not peers:  # `buildAllowAllEgress`: 0.0.0.0/0 on the rule's ports
            if port_matches(rule.get("ports"), sport.port, sport.protocol):
                return True
            continue
        for peer in peers:
            if "ipBlock" in peer:
                if _in_block(peer["ipBlock"], clusterip.ip) and port_matches(rule.get("ports"), sport.port, sport.protocol):
                    return True
                continue
            if "namespaceSelector" in peer:
                if not selector_matches(peer["namespaceSelector"], namespace_labels(objects, service.namespace)):
                    continue
            elif service.namespace != ns:
                continue
            if selector_matches(peer.get("podSelector"), service.selector or {}) and _expanded_port(rule.get("ports"), sport):
                return True
    return False


def vpc_cni_service_connection(objects: Sequence[Mapping[str, Any]], src: Endpoint, service: Service, port: int, protocol: str = "TCP") -> Decision:
    """A pod dials `service`'s ClusterIP:port under the Amazon VPC CNI's network policy agent (see the comment above).

    Egress: judged on the ClusterIP before DNAT (ipBlocks containing it; selector peers the controller expands
    to it). Ingress: at the backend after DNAT, on the targetPort, by the ordinary rules (`side`).
    """
    sport = next((p for p in service.ports if p.port == port and p.protocol == protocol), None)
    if sport is None:
        return Decision(False, f"service {service.namespace}/{service.name} has no {protocol} port {port}")
    isolating = selecting(objects, src, "Egress")
    if isolating and not any(_vpc_cni_egress_admits(objects, p, service, sport) for p in isolating):
        names = ", ".join(_name(p) for p in isolating)
        return Decision(
            False,
            f"source egress isolated by {names}; the VPC CNI agent judges the packet before kube-proxy's DNAT, on "
            f"ClusterIP {service.cluster_ip}:{port}/{protocol} of {service.namespace}/{service.name}, and no ipBlock contains "
            "it and no selector peer resolves to that Service (an ipBlock of its endpoint IPs does not count)",
        )
    egress = "egress not isolated" if not isolating else f"egress to ClusterIP {service.cluster_ip}:{port} allowed"
    ingress = side(objects, service.backend, src, "Ingress", sport.target_port, protocol)
    if not ingress.allowed:
        return Decision(False, f"destination {ingress.reason}")
    return Decision(True, f"source {egress}; destination {ingress.reason}")
