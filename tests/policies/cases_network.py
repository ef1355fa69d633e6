"""Cases of the network and identity path rules (issue 16): each breaks the prod plan's real wiring.

Kept apart from cases.py so they read together; cases.py appends them to CASES.
"""

from __future__ import annotations

from gpu_platform.behaviour.wiring import ref_key
from gpu_platform_policies import Resource
from tests.policies.builders import SG_INGRESS, Case, add, at, built_from, compliant, drop, fires, silent

RESERVED_LT = "pool-train-h100-reserved-lt"
RESERVED_NG = "pool-train-h100-reserved-ng"
LLM_BINDING = "tenant-llm-training-rolebinding-llm-training-engineers"
LLM_ENTRY = "access-123456789012-awsreservedsso-llmtraining-8a41d2c7e9b05f13"
CLUSTER_SG = "sg-0mock0cluster"  # the EKS-created cluster group every node interface carries (engine mock)
CLUSTER = ref_key("aws:eks/cluster:Cluster", "cluster-eks")  # the resource that group is read from
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"


def deployer_rule(group: str, *built_from: str) -> Resource:
    """A TCP 443 ingress rule from a deployer CIDR on `group` (an id built from `built_from`, as Pulumi records it)."""
    return Resource(
        SG_INGRESS,
        "deployer-443",
        "cluster",
        {"securityGroupId": group, "cidrIpv4": "10.200.0.0/16", "ipProtocol": "tcp", "fromPort": 443, "toPort": 443},
        refs={"securityGroupId": built_from} if built_from else {},
    )


def efa_interfaces_only_cluster_group(res: list[Resource]) -> list[Resource]:
    """Today's main: every interface of the reserved pool's template carries only the cluster group."""
    lt = next(r for r in res if r.name == RESERVED_LT)
    for ni in lt.inputs["networkInterfaces"]:
        ni["securityGroups"] = [CLUSTER_SG]
    return built_from(RESERVED_LT, "networkInterfaces", CLUSTER)(res)


def efa_self_rules_split(res: list[Resource]) -> list[Resource]:
    """The egress self-rule moved to a second group the interfaces also carry: reachable, yet no one group holds both rules."""
    second = Resource("aws:ec2/securityGroup:SecurityGroup", "efa-sg-2", "cluster", {"vpcId": "network-vpc-id"})
    group = ref_key(second.type, second.name)
    egress = next(r for r in res if r.name == "efa-self-egress")
    egress.inputs.update(securityGroupId="efa-sg-2-id", referencedSecurityGroupId="efa-sg-2-id")
    egress.refs.update(securityGroupId=(group,), referencedSecurityGroupId=(group,))  # type: ignore[attr-defined]
    lt = next(r for r in res if r.name == RESERVED_LT)
    for ni in lt.inputs["networkInterfaces"]:
        ni["securityGroups"] = [*ni["securityGroups"], "efa-sg-2-id"]
    lt.refs["networkInterfaces"] = (*lt.refs["networkInterfaces"], group)  # type: ignore[index]
    return [*res, second]


NETWORK_CASES: list[Case] = [
    *compliant("efa-group-self-rules", "prod"),
    fires(
        "efa-group-self-rules",
        "interfaces-carry-only-cluster-group",
        efa_interfaces_only_cluster_group,
        on=RESERVED_LT,
        says="EFA interface card0-dev1-efa-only carries [cluster-eks's cluster security group], none with all-traffic ingress and egress rules",
    ),
    fires(
        "efa-group-self-rules",
        "no-self-egress",
        drop("efa-self-egress"),
        on=RESERVED_LT,
        says="(egress: no egress rule of node-a/card0-dev1-efa-only's groups",
    ),
    fires(
        "efa-group-self-rules",
        "ingress-only-tcp",
        at("efa-self-ingress", {"ipProtocol": "tcp", "fromPort": 0, "toPort": 65535}),
        on=RESERVED_LT,
        says="(ingress: no ingress rule of node-b/card0-dev1-efa-only's groups",
    ),
    fires(
        "efa-group-self-rules",
        "self-rules-on-two-groups",
        efa_self_rules_split,
        on=RESERVED_LT,
        says="(its ingress and egress self-rules sit on different groups)",
    ),
    *compliant("tenant-groups-have-principals", "prod"),
    silent("tenant-groups-have-principals", "onprem-cluster-maps-its-own", stack="onprem"),
    fires(
        "tenant-groups-have-principals",
        "entry-dropped",
        drop(LLM_ENTRY),
        on=LLM_BINDING,
        says="group 'llm-training-engineers' bound in tenant namespace llm-training is carried by no access entry",
    ),
    fires(
        "tenant-groups-have-principals",
        "entry-carries-another-group",
        at(LLM_ENTRY, {"kubernetesGroups": ["llm-training"]}),
        on=LLM_BINDING,
        says="carried by no access entry",
    ),
    # Only STANDARD entries carry Kubernetes groups (EKS API CreateAccessEntry): a node-type entry listing them gives nobody the group.
    fires(
        "tenant-groups-have-principals",
        "entry-of-a-node-type",
        at(LLM_ENTRY, {"type": "EC2_LINUX"}),
        on=LLM_BINDING,
        says="carried by no access entry",
    ),
    # A first preview does not know a principal the stack creates: its entry still carries the group (and no error).
    silent("tenant-groups-have-principals", "principal-unknown-in-preview", at(LLM_ENTRY, {"principalArn": "<computed>"})),
    *compliant("training-s3-not-nat-only", "prod"),
    silent("training-s3-not-nat-only", "dev-has-no-training-pool", stack="dev"),
    fires(
        "training-s3-not-nat-only",
        "no-gateway-endpoint",
        drop("endpoints-s3"),
        on=RESERVED_NG,
        says="leaves through network-nat-us-east-1a: no S3 gateway endpoint on that route table",
    ),
    fires(
        "training-s3-not-nat-only",
        "endpoint-misses-the-training-zone",
        at("endpoints-s3", {"routeTableIds": ["network-private-us-east-1b-id", "network-private-us-east-1c-id"]}),
        built_from("endpoints-s3", "routeTableIds", *(ref_key(ROUTE_TABLE, f"network-private-us-east-1{z}") for z in "bc")),
        on=RESERVED_NG,
        says="route table network-private-us-east-1a",
    ),
    *compliant("images-pulled-in-region", "prod", "staging", "dev"),
    silent("images-pulled-in-region", "on-prem-has-no-endpoint", stack="onprem"),
    fires(
        "images-pulled-in-region",
        "efa-plugin-from-the-charts-default-region",
        at("efa-device-plugin-release", {"values.image.repository": "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"}),
        on="efa-device-plugin-release",
        says="is pulled from us-west-2, but the stack runs in us-east-1: its ecr.dkr endpoint answers only *.dkr.ecr.us-east-1.amazonaws.com, "
        "so this pull goes out through NAT, cross-region (EKS serves it from 602401143452.dkr.ecr.us-east-1.amazonaws.com)",
    ),
    fires(
        "images-pulled-in-region",
        "own-registry-in-another-region",
        at("autoscaler-release", {"values.image.repository": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/mirror/cluster-autoscaler"}),
        on="autoscaler-release",
        says="image 123456789012.dkr.ecr.eu-west-1.amazonaws.com/mirror/cluster-autoscaler is pulled from eu-west-1",
    ),
    *compliant("deployer-rule-off-node-groups", "prod"),
    silent("deployer-rule-off-node-groups", "on-control-plane-group", add(deployer_rule("cluster-control-plane-sg-id"))),
    fires(
        "deployer-rule-off-node-groups",
        "on-cluster-group",
        add(deployer_rule(CLUSTER_SG, CLUSTER)),
        on="deployer-443",
        says="opened on cluster-eks's cluster security group, which pool-batch-l40s-ondemand-lt's node interfaces carry",
    ),
]

LLM_EGRESS = "tenant-llm-training-netpol-allow-egress"
NETWORK_CASES += [
    *compliant("tenant-egress-avoids-nodes", "prod", "staging", "dev", "onprem"),
    fires(
        "tenant-egress-avoids-nodes",
        "everywhere-on-ssh-without-except",
        at(LLM_EGRESS, {"spec.egress.0": {"ports": [{"protocol": "TCP", "port": 22}], "to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}}),
        on="tenant-llm-training-namespace",
        says="pods in llm-training reach SSH at 10.0.0.10:22",
    ),
    fires(
        "tenant-egress-avoids-nodes",
        "every-port-to-the-world",
        at(LLM_EGRESS, {"spec.egress.0": {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}}),
        on="tenant-llm-training-namespace",
        says="pods in llm-training reach the kubelet API at 10.0.0.10:10250",
    ),
    silent(
        "tenant-egress-avoids-nodes",
        "everywhere-on-443-except-private",
        at(LLM_EGRESS, {"spec.egress.0.ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 80}]}),
    ),
]
