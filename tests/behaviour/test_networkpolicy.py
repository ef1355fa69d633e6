"""gpu_platform.behaviour.networkpolicy against the semantics the Kubernetes docs ("Network Policies") and the
networking.k8s.io/v1 API reference spell out, each case one sentence of them."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.behaviour.networkpolicy import (
    Endpoint,
    Service,
    ServicePort,
    UnsupportedPolicy,
    connection,
    policy_types,
    vpc_cni_service_connection,
)

NS = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "labels": {"team": "x"}}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b", "labels": {"team": "y"}}},
]
A_WEB = Endpoint("a", {"app": "web"}, "10.0.1.1")
A_DB = Endpoint("a", {"app": "db"}, "10.0.1.2")
B_WEB = Endpoint("b", {"app": "web"}, "10.0.2.1")
B_CLIENT = Endpoint("b", {"role": "client"}, "10.0.2.2")
OUTSIDE = Endpoint(None, ip="203.0.113.7")


def np(ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"namespace": ns, "name": name}, "spec": spec}


def test_no_policy_means_not_isolated() -> None:
    """Docs: "By default, a pod is non-isolated for egress/ingress; all connections are allowed"."""
    assert connection(NS, A_WEB, B_WEB, 80).allowed


def test_a_selecting_policy_isolates_and_names_itself() -> None:
    deny = np("b", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    d = connection([*NS, deny], A_WEB, B_WEB, 80)
    assert not d.allowed and "b/deny" in d.reason
    assert connection([*NS, deny], B_WEB, A_WEB, 80).allowed, "only ingress of b is isolated"


def test_policy_types_default() -> None:
    """defaults.go SetDefaults_NetworkPolicy: Ingress always; Egress only with egress rules."""
    assert policy_types({"podSelector": {}}) == ("Ingress",)
    assert policy_types({"podSelector": {}, "egress": [{}]}) == ("Ingress", "Egress")
    assert policy_types({"podSelector": {}, "egress": []}) == ("Ingress",)
    egress_only_rules = np("a", "e", {"podSelector": {}, "egress": [{"to": [{"podSelector": {}}]}]})
    assert not connection([*NS, egress_only_rules], A_WEB, B_WEB, 80).allowed, "egress isolated by the defaulted type"
    assert not connection([*NS, egress_only_rules], B_WEB, A_WEB, 80).allowed, "and ingress too, with no ingress rules"


def test_pod_selector_only_selects_matching_pods() -> None:
    deny_db = np("a", "deny-db", {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress"]})
    assert not connection([*NS, deny_db], B_WEB, A_DB, 5432).allowed
    assert connection([*NS, deny_db], B_WEB, A_WEB, 80).allowed


def test_namespace_and_pod_selector_in_one_peer_is_and_in_two_peers_is_or() -> None:
    """Docs, "Behavior of to and from selectors": one element with both selectors vs two elements."""
    both = np(
        "a",
        "and",
        {
            "podSelector": {},
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "y"}}, "podSelector": {"matchLabels": {"role": "client"}}}]}],
        },
    )
    either = np(
        "a",
        "or",
        {
            "podSelector": {},
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "y"}}}, {"podSelector": {"matchLabels": {"role": "client"}}}]}],
        },
    )
    assert connection([*NS, both], B_CLIENT, A_WEB, 80).allowed
    assert not connection([*NS, both], B_WEB, A_WEB, 80).allowed
    assert connection([*NS, either], B_WEB, A_WEB, 80).allowed, "any pod of namespace b"
    a_client = Endpoint("a", {"role": "client"})
    assert connection([*NS, either], a_client, A_WEB, 80).allowed, "a client pod of the policy's own namespace"


def test_pod_selector_alone_means_the_policys_namespace() -> None:
    same = np("a", "same", {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]})
    assert connection([*NS, same], A_DB, A_WEB, 80).allowed
    assert not connection([*NS, same], B_WEB, A_WEB, 80).allowed


def test_namespace_name_label_is_set_by_the_api_server() -> None:
    by_name = np(
        "a", "from-c", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "c"}}}]}]}
    )
    assert connection([*NS, by_name], Endpoint("c", {}), A_WEB, 80).allowed, "namespace c has no rendered object, only its name label"


def test_match_expressions() -> None:
    sel = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["y", "z"]}, {"key": "frozen", "operator": "DoesNotExist"}]}
    pol = np("a", "expr", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": sel}]}]})
    assert connection([*NS, pol], B_WEB, A_WEB, 80).allowed
    frozen = [NS[0], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b", "labels": {"team": "y", "frozen": "1"}}}]
    assert not connection([*frozen, pol], B_WEB, A_WEB, 80).allowed


def test_ip_block_with_except() -> None:
    pol = np(
        "a", "out", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}]}]}
    )
    assert connection([*NS, pol], A_WEB, OUTSIDE, 443).allowed
    assert not connection([*NS, pol], A_WEB, B_WEB, 443).allowed, "10.0.2.1 is carved out"
    assert not connection([*NS, pol], A_WEB, Endpoint(None), 443).allowed, "no address, no ipBlock match"


def test_ports_protocol_default_tcp_and_end_port() -> None:
    pol = np(
        "a",
        "ports",
        {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 32000, "endPort": 32768}, {"protocol": "UDP", "port": 53}]}]},
    )
    objs = [*NS, pol]
    assert connection(objs, A_WEB, OUTSIDE, 32000).allowed and connection(objs, A_WEB, OUTSIDE, 32768).allowed
    assert not connection(objs, A_WEB, OUTSIDE, 32769).allowed
    assert not connection(objs, A_WEB, OUTSIDE, 32000, "UDP").allowed, "protocol defaults to TCP"
    assert connection(objs, A_WEB, OUTSIDE, 53, "UDP").allowed and not connection(objs, A_WEB, OUTSIDE, 53).allowed


def test_policies_are_additive() -> None:
    deny = np("a", "deny", {"podSelector": {}, "policyTypes": ["Egress"]})
    allow = np("a", "allow-dns", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]})
    d = connection([*NS, deny, allow], A_WEB, OUTSIDE, 53, "UDP")
    assert d.allowed and "a/allow-dns" in d.reason


def test_both_sides_must_allow() -> None:
    egress_ok = np("a", "out", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]})
    ingress_deny = np("b", "in", {"podSelector": {}, "policyTypes": ["Ingress"]})
    d = connection([*NS, egress_ok, ingress_deny], A_WEB, B_WEB, 80)
    assert not d.allowed and d.reason.startswith("destination") and "b/in" in d.reason


def test_named_ports_are_refused_not_guessed() -> None:
    pol = np("a", "named", {"podSelector": {}, "ingress": [{"ports": [{"port": "http"}]}]})
    with pytest.raises(UnsupportedPolicy, match="named port 'http'"):
        connection([*NS, pol], B_WEB, A_WEB, 80)


# Amazon VPC CNI: traffic to a Service ClusterIP (aws-network-policy-agent judges egress before DNAT;
# amazon-network-policy-controller-k8s resolves Service ClusterIPs for selector peers only).
API = Service("default", "kubernetes", "172.20.0.1", (ServicePort(443, 443),), Endpoint(None, ip="10.0.0.20"))
WEB_SVC = Service("b", "web", "172.20.5.5", (ServicePort(80, 8080),), B_WEB, selector={"app": "web"})
EGRESS_ONLY = {"podSelector": {}, "policyTypes": ["Egress"]}


def test_an_ipblock_of_the_endpoints_does_not_admit_the_clusterip() -> None:
    """ipBlocks are copied as they are (`resolveNetworkPeers`); the agent sees the ClusterIP, not 10.0.0.20."""
    to_endpoints = np("a", "api", {**EGRESS_ONLY, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16"}}], "ports": [{"port": 443}]}]})
    assert connection([*NS, to_endpoints], A_WEB, API.backend, 443).allowed
    d = vpc_cni_service_connection([*NS, to_endpoints], A_WEB, API, 443)
    assert not d.allowed and "172.20.0.1:443" in d.reason
    to_clusterip = np("a", "api", {**EGRESS_ONLY, "egress": [{"to": [{"ipBlock": {"cidr": "172.20.0.1/32"}}], "ports": [{"port": 443}]}]})
    assert vpc_cni_service_connection([*NS, to_clusterip], A_WEB, API, 443).allowed
    wrong_port = np("a", "api", {**EGRESS_ONLY, "egress": [{"to": [{"ipBlock": {"cidr": "172.20.0.1/32"}}], "ports": [{"port": 6443}]}]})
    assert not vpc_cni_service_connection([*NS, wrong_port], A_WEB, API, 443).allowed


def test_a_selector_peer_expands_to_the_services_its_pod_selector_matches() -> None:
    """`getMatchingServiceClusterIPs`: the peer's podSelector against the Service's selector; rule port = targetPort."""
    peer = {"namespaceSelector": {"matchLabels": {"team": "y"}}, "podSelector": {"matchLabels": {"app": "web"}}}
    by_target = np("a", "web", {**EGRESS_ONLY, "egress": [{"to": [peer], "ports": [{"port": 8080}]}]})
    assert vpc_cni_service_connection([*NS, by_target], A_WEB, WEB_SVC, 80).allowed, "8080 is the targetPort of Service port 80"
    by_service_port = np("a", "web", {**EGRESS_ONLY, "egress": [{"to": [peer], "ports": [{"port": 80}]}]})
    assert not vpc_cni_service_connection([*NS, by_service_port], A_WEB, WEB_SVC, 80).allowed, "80 is no targetPort of the Service"
    other_pods = np("a", "web", {**EGRESS_ONLY, "egress": [{"to": [{**peer, "podSelector": {"matchLabels": {"app": "db"}}}]}]})
    assert not vpc_cni_service_connection([*NS, other_pods], A_WEB, WEB_SVC, 80).allowed


def test_a_namespace_peer_without_pod_selector_reaches_selectorless_services() -> None:
    """An absent podSelector is `{}`, which matches every label set, the empty selector of `kubernetes` too."""
    default_ns = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}}
    pol = np("a", "api", {**EGRESS_ONLY, "egress": [{"to": [default_ns], "ports": [{"port": 443}]}]})
    assert vpc_cni_service_connection([*NS, pol], A_WEB, API, 443).allowed


def test_the_backend_ingress_is_judged_after_dnat_on_the_target_port() -> None:
    only_8080 = np("b", "in", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": 8080}]}]})
    assert vpc_cni_service_connection([*NS, only_8080], A_WEB, WEB_SVC, 80).allowed
    only_80 = np("b", "in", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": 80}]}]})
    d = vpc_cni_service_connection([*NS, only_80], A_WEB, WEB_SVC, 80)
    assert not d.allowed and d.reason.startswith("destination")
