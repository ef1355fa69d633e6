"""The one security-group rule helper (gpu_platform.aws.sg_rules): what EC2 receives for the rules it builds.

`sg_rule` is pure: its arguments pass through the Pulumi SDK's own name translation (pulumi
`runtime/rpc.py` `serialize_properties` -> `_types.input_type_py_to_pulumi_names` of the provider's Args
class) to the wire inputs, then through what the provider does with them
(`behaviour.security_groups.authorize_request`: terraform-provider-aws vpc_security_group_ingress_rule.go
`expandIPPermission` and each rule resource's `create`), checked against botocore's EC2 model of
AuthorizeSecurityGroupIngress/Egress, and evaluated as EC2 evaluates rules (`security_groups.flow`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import botocore.session
import pulumi._types
import pulumi_aws as aws
import pytest
from botocore.validate import ParamValidator

from gpu_platform.aws.sg_rules import SgRule, sg_rule
from gpu_platform.behaviour import security_groups as sg
from gpu_platform.engine import PlannedResource
from tests.conftest import plan_for

ARGS = {sg.INGRESS_RULE: aws.vpc.SecurityGroupIngressRuleArgs, sg.EGRESS_RULE: aws.vpc.SecurityGroupEgressRuleArgs}
TAGS = {"managed-by": "pulumi"}


def wire(rule: SgRule) -> dict[str, Any]:
    """The rule's inputs as the engine receives them: the SDK's Args class accepts them, its names translate them."""
    args_type = ARGS[rule.type]
    args_type(**rule.args)  # a keyword the provider's resource does not take fails here (TypeError)
    names = pulumi._types.input_type_py_to_pulumi_names(args_type)
    return {names[k]: v for k, v in rule.args.items()}


@cache
def _ec2() -> Any:
    return botocore.session.get_session().get_service_model("ec2")


def ec2_request(rule: SgRule) -> tuple[str, dict[str, Any]]:
    """The EC2 call the provider makes for the rule, refused here if EC2's API model would refuse its shape."""
    operation, params = sg.authorize_request(rule.type, wire(rule))
    report = ParamValidator().validate(params, _ec2().operation_model(operation).input_shape)
    assert not report.has_errors(), f"{rule.name}: {operation} {report.generate_report()}"
    return operation, params


def planned(*rules: SgRule) -> list[sg.Rule]:
    """The rules as EC2 holds them once created."""
    return sg.rules_of(PlannedResource(r.type, r.name, None, wire(r)) for r in rules)


def efa_pair(peer: str = "sg-efa") -> tuple[SgRule, SgRule]:
    inbound = sg_rule("efa-self-ingress", "ingress", "sg-efa", peer_group_id=peer, description="EFA: from members", tags=TAGS)
    outbound = sg_rule("efa-self-egress", "egress", "sg-efa", peer_group_id=peer, description="EFA: to members", tags=TAGS)
    return inbound, outbound


def test_a_self_referencing_pair_is_one_ingress_and_one_egress_authorization_on_the_group_itself() -> None:
    inbound, outbound = efa_pair()
    assert ec2_request(inbound) == (
        "AuthorizeSecurityGroupIngress",
        {
            "GroupId": "sg-efa",
            "IpPermissions": [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": "sg-efa", "Description": "EFA: from members"}]}],
        },
    )
    assert ec2_request(outbound) == (
        "AuthorizeSecurityGroupEgress",
        {"GroupId": "sg-efa", "IpPermissions": [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": "sg-efa", "Description": "EFA: to members"}]}]},
    )


def test_two_members_exchange_efa_traffic_only_with_both_self_rules() -> None:
    """EC2 User Guide, EFA security group: all traffic to and from the group itself, both directions."""
    a, b = sg.Interface("node-a/efa", ("sg-efa",), kind="efa"), sg.Interface("node-b/efa", ("sg-efa",), kind="efa")
    inbound, outbound = efa_pair()
    assert sg.exchange_all(planned(inbound, outbound), a, b, efa=True).allowed
    assert sg.exchange_all(planned(inbound), a, b, efa=True).stage == "egress"
    assert sg.exchange_all(planned(outbound), a, b, efa=True).stage == "ingress"
    # The self-reference lost (peer another group): the members no longer match the rules.
    assert not sg.exchange_all(planned(*efa_pair(peer="sg-nodes")), a, b, efa=True).allowed


def test_a_cidr_rule_with_ports_admits_that_port_from_that_network_only() -> None:
    https = sg_rule(
        "endpoints-https-from-vpc",
        "ingress",
        "sg-endpoints",
        cidr_ipv4="10.40.0.0/16",
        protocol="tcp",
        ports=(443, 443),
        description="HTTPS",
        tags=TAGS,
    )
    assert ec2_request(https) == (
        "AuthorizeSecurityGroupIngress",
        {
            "GroupId": "sg-endpoints",
            "IpPermissions": [
                {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "10.40.0.0/16", "Description": "HTTPS"}]}
            ],
        },
    )
    rules = planned(https) + sg.eks_cluster_group_rules("sg-cluster")
    endpoint = sg.Interface("sts-endpoint/eni", ("sg-endpoints",), address="10.40.2.9")
    node, outside = sg.Interface("node", ("sg-cluster",), address="10.40.1.5"), sg.Interface("vpn", ("sg-cluster",), address="10.99.0.5")
    assert sg.flow(rules, node, endpoint, "tcp", 443).allowed
    assert sg.flow(rules, node, endpoint, "tcp", 80).stage == "ingress"
    assert sg.flow(rules, outside, endpoint, "tcp", 443).stage == "ingress"


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({}, "exactly one of"),
        ({"peer_group_id": "sg-a", "cidr_ipv4": "10.0.0.0/8"}, "exactly one of"),
        ({"peer_group_id": "sg-a", "ports": (443, 443)}, "never with all traffic"),
        ({"peer_group_id": "sg-a", "protocol": "tcp"}, "ports go with a single protocol"),
    ],
)
def test_a_rule_the_provider_or_ec2_would_refuse_is_refused_when_built(kwargs: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        sg_rule("bad", "ingress", "sg-a", description="x", tags=TAGS, **kwargs)


def test_every_rule_prod_plans_is_an_authorization_ec2_accepts_on_the_intended_group() -> None:
    """prod builds every helper shape: EFA self pair, endpoint CIDR rule, FSx for Lustre group and client rules."""
    calls = []
    for r in plan_for("prod").resources:
        if r.type in (sg.INGRESS_RULE, sg.EGRESS_RULE):
            operation, params = sg.authorize_request(r.type, r.inputs)
            report = ParamValidator().validate(params, _ec2().operation_model(operation).input_shape)
            assert not report.has_errors(), f"{r.name}: {report.generate_report()}"
            (permission,) = params["IpPermissions"]
            peer = permission["UserIdGroupPairs"][0]["GroupId"] if "UserIdGroupPairs" in permission else permission["IpRanges"][0]["CidrIp"]
            calls.append((r.name, operation.removeprefix("AuthorizeSecurityGroup"), params["GroupId"], peer))
    by_name = {name: (direction, group, peer) for name, direction, group, peer in calls}
    assert by_name["efa-self-ingress"] == ("Ingress", "efa-sg-id", "efa-sg-id")
    assert by_name["efa-self-egress"] == ("Egress", "efa-sg-id", "efa-sg-id")
    assert by_name["fsx-lustre-out-nodes-988"][:2] == ("Egress", "fsx-lustre-sg-id")
    # The clients' side sits on the nodes' group, admitting the file systems' group.
    assert by_name["fsx-lustre-nodes-in-988"][0] == "Ingress" and by_name["fsx-lustre-nodes-in-988"][2] == "fsx-lustre-sg-id"
    assert by_name["endpoints-https-from-vpc"][0] == "Ingress"


def test_a_peer_in_another_account_is_sent_as_user_id_and_group_id() -> None:
    """expandIPPermission splits `referenced_security_group_id` of the form `[UserID/]GroupID`."""
    shared = sg_rule("peering", "ingress", "sg-a", peer_group_id="123456789012/sg-b", description="peer VPC", tags=TAGS)
    _, params = ec2_request(shared)
    assert params["IpPermissions"][0]["UserIdGroupPairs"] == [{"GroupId": "sg-b", "UserId": "123456789012", "Description": "peer VPC"}]
