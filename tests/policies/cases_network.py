"""Cases of the network and identity path rules (issue 16): each breaks the prod plan's real wiring.

Kept apart from cases.py so they read together; cases.py appends them to CASES.
"""

from __future__ import annotations

from gpu_platform_policies import Resource
from tests.policies.cases import SG_INGRESS, Case, add, drop, set_in

RESERVED_LT = "pool-train-h100-reserved-lt"
RESERVED_NG = "pool-train-h100-reserved-ng"
LLM_BINDING = "tenant-llm-training-rolebinding-llm-training-engineers"
LLM_ENTRY = "access-123456789012-awsreservedsso-llmtraining-8a41d2c7e9b05f13"
CLUSTER_SG = "sg-0mock0cluster"  # the EKS-created cluster group every node interface carries (engine mock)


def deployer_rule(group: str) -> Resource:
    """A TCP 443 ingress rule from a deployer CIDR on `group`."""
    return Resource(
        SG_INGRESS,
        "deployer-443",
        "cluster",
        {"securityGroupId": group, "cidrIpv4": "10.200.0.0/16", "ipProtocol": "tcp", "fromPort": 443, "toPort": 443},
    )


def efa_interfaces_only_cluster_group(res: list[Resource]) -> list[Resource]:
    """Today's main: every interface of the reserved pool's template carries only the cluster group."""
    lt = next(r for r in res if r.name == RESERVED_LT)
    for ni in lt.inputs["networkInterfaces"]:
        ni["securityGroups"] = [CLUSTER_SG]
    return res


NETWORK_CASES: list[Case] = [
    Case("efa-group-self-rules", "prod-compliant", "prod"),
    Case("efa-group-self-rules", "interfaces-carry-only-cluster-group", "prod", (efa_interfaces_only_cluster_group,), RESERVED_LT, "efa-only"),
    Case("efa-group-self-rules", "no-self-egress", "prod", (drop("efa-self-egress"),), RESERVED_LT, "egress"),
    Case(
        "efa-group-self-rules",
        "ingress-only-tcp",
        "prod",
        (set_in("efa-self-ingress", "ipProtocol", "tcp"), set_in("efa-self-ingress", "fromPort", 0), set_in("efa-self-ingress", "toPort", 65535)),
        RESERVED_LT,
        "ingress",
    ),
    Case("tenant-groups-have-principals", "prod-compliant", "prod"),
    Case("tenant-groups-have-principals", "onprem-cluster-maps-its-own", "onprem"),
    Case("tenant-groups-have-principals", "entry-dropped", "prod", (drop(LLM_ENTRY),), LLM_BINDING, "llm-training-engineers"),
    Case(
        "tenant-groups-have-principals",
        "entry-carries-another-group",
        "prod",
        (set_in(LLM_ENTRY, "kubernetesGroups", ["llm-training"]),),
        LLM_BINDING,
        "carried by no access entry",
    ),
    Case("training-s3-not-nat-only", "prod-compliant", "prod"),
    Case("training-s3-not-nat-only", "dev-has-no-training-pool", "dev"),
    Case("training-s3-not-nat-only", "no-gateway-endpoint", "prod", (drop("endpoints-s3"),), RESERVED_NG, "network-nat-us-east-1a"),
    Case(
        "training-s3-not-nat-only",
        "endpoint-misses-the-training-zone",
        "prod",
        (set_in("endpoints-s3", "routeTableIds", ["network-private-us-east-1b-id", "network-private-us-east-1c-id"]),),
        RESERVED_NG,
        "route table network-private-us-east-1a",
    ),
    Case("deployer-rule-off-node-groups", "prod-compliant", "prod"),
    Case("deployer-rule-off-node-groups", "on-control-plane-group", "prod", (add(deployer_rule("cluster-control-plane-sg-id")),)),
    Case("deployer-rule-off-node-groups", "on-cluster-group", "prod", (add(deployer_rule(CLUSTER_SG)),), "deployer-443", "sg-0mock0cluster"),
]
