"""The rules on a stack as a real `pulumi preview` hands it to the CrossGuard pack, not as the offline engine plans it.

The offline engine gives every resource the id `<logical name>-id` (plan_ids.planned_id), every unnamed
resource a hash-derived auto-name (engine.auto_name) and mock ARNs, so references between resources match
by construction. A real preview does not:
- `steady` (a stack already deployed): ids are AWS's (`sg-0…`, `subnet-0…`), ARNs carry the account, and
  auto-names end in 7 random hex digits (pulumi-terraform-bridge tfbridge.AutoName);
- `first` (nothing deployed yet): every id, ARN and auto-name is unknown, and the CrossGuard wrapper hands
  each one to the rules as the same string (gpu_platform_policies.view.UNKNOWN).
What both do carry is each input's property dependencies (the resources it was built from), which the
rules follow (behaviour.wiring). A compliant stack must stay free of mandatory violations under both; a rule
that matched resources by the offline engine's names blocked every real pull request (volume-claims-bind,
deployer-rule-off-node-groups), and one that joined by the offline ids never fired on a real preview
(training-s3-not-nat-only) or missed its violation on a first one (efa-group-self-rules).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from gpu_platform.behaviour.wiring import ref_key
from gpu_platform.plan_ids import CLUSTER_SECURITY_GROUP
from gpu_platform_policies import Resource, evaluate
from gpu_platform_policies.view import UNKNOWN
from tests.conftest import spec_for
from tests.policies.builders import at, built_from, chain, drop
from tests.policies.cases import CASES, context, resources
from tests.policies.test_crossguard import crossguard_findings

ID_PREFIX = {
    "aws:ec2/subnet:Subnet": "subnet-",
    "aws:ec2/securityGroup:SecurityGroup": "sg-",
    "aws:ec2/routeTable:RouteTable": "rtb-",
    "aws:ec2/natGateway:NatGateway": "nat-",
    "aws:ec2/vpc:Vpc": "vpc-",
    "aws:ec2/internetGateway:InternetGateway": "igw-",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "vpce-",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt-",
}


NODE_ROLE = ref_key("aws:iam/role:Role", "cluster-node-role")


def _hex(text: str, n: int) -> str:
    return hashlib.sha256(f"real:{text}".encode()).hexdigest()[:n]


def as_previewed(plan: list[Resource], mode: str) -> list[Resource]:
    """The plan's resources with the values a real preview shows for ids, ARNs and auto-names.

    An offline id `<name>-id` does not say which resource of that logical name it is (a VPC's subnet, route
    table and association share one); the input's property dependencies do, so each resource gets its own
    AWS-style id, as in AWS.
    """
    logical = {r.name for r in plan}
    types = {r.name: r.type for r in plan}

    def aws_id(type_token: str, name: str) -> str:
        return UNKNOWN if mode == "first" else ID_PREFIX.get(type_token, "id-") + "0" + _hex(f"{type_token}::{name}", 16)

    def real(value: Any, deps: tuple[str, ...]) -> Any:
        if isinstance(value, dict):
            return {k: real(v, deps) for k, v in value.items()}
        if isinstance(value, list):
            return [real(v, deps) for v in value]
        if not isinstance(value, str):
            return value
        if value.endswith("-id") and value[: -len("-id")] in logical:
            name = value[: -len("-id")]
            typed = [d.rsplit("::", 1)[0] for d in deps if d.rsplit("::", 1)[-1] == name]
            return aws_id(typed[0] if len(typed) == 1 else types[name], name)
        if value == CLUSTER_SECURITY_GROUP:
            return UNKNOWN if mode == "first" else "sg-0" + _hex("cluster", 16)
        arn = re.fullmatch(r"arn:aws:mock:::(\w+)/(.+)", value)
        if arn:
            return UNKNOWN if mode == "first" else f"arn:aws:iam::123456789012:{arn[1]}/{arn[2]}-{_hex(value, 7)}"
        auto = re.fullmatch(r"(.+)-[0-9a-f]{7}", value)
        if auto and auto[1] in logical:
            return UNKNOWN if mode == "first" else f"{auto[1]}-{_hex(value, 7)}"
        return value

    out = []
    for r in plan:
        inputs = {k: real(v, r.refs.get(k, ())) for k, v in r.inputs.items()}
        if r.type == "aws:eks/cluster:Cluster":  # a stack policy sees outputs: the group EKS made for the cluster among them
            inputs["vpcConfig"] = {**(inputs.get("vpcConfig") or {}), "clusterSecurityGroupId": real(CLUSTER_SECURITY_GROUP, ())}
        # Property dependencies are what a real preview does carry (the engine's state, PolicyResource.property_dependencies).
        out.append(Resource(r.type, r.name, r.parent, inputs, None, dict(r.refs)))
    return out


def mandatory(plan: list[Resource], stack: str) -> list[str]:
    """Mandatory violations at the stack's own enforcement levels (`policy.enforcement`), as `check` reports them."""
    levels = spec_for(stack).policy.enforcement
    found = evaluate(plan, context(stack), levels, repository=False)
    return [f"{v.policy} {v.resource}: {v.message}" for v in found if v.level == "mandatory"]


@pytest.mark.parametrize("mode", ["steady", "first"])
@pytest.mark.parametrize("stack", ["prod", "staging", "dev", "onprem"])
def test_a_compliant_stack_passes_as_a_real_preview_shows_it(stack: str, mode: str) -> None:
    offline = resources(stack)
    assert mandatory(offline, stack) == []
    assert mandatory(as_previewed(offline, mode), stack) == []


def test_the_transformation_leaves_no_offline_identity() -> None:
    """So the test above cannot pass on names only the offline engine produces."""
    text = repr([r.inputs for r in as_previewed(resources("prod"), "steady")])
    assert "arn:aws:mock" not in text and CLUSTER_SECURITY_GROUP not in text
    assert not re.search(r"'[a-z0-9-]+-id'", text), "an offline id survived"


@pytest.mark.parametrize(
    ("case", "edit", "says"),
    [
        ("ebs-policy-missing", drop("ebs-csi-policy-ebs"), "its IAM role ebs-csi-role lacks AmazonEBSCSIDriverPolicy"),
        ("fsx-policy-missing", drop("fsx-lustre-policy-fsx"), "its IAM role fsx-lustre-role lacks AmazonFSxFullAccess"),
        (
            "ebs-policy-on-another-role",
            # The attachment re-pointed, as a program change registers it: its `role` built from the node role.
            chain(at("ebs-csi-policy-ebs", {"role": "cluster-node-role-0a1b2c3"}), built_from("ebs-csi-policy-ebs", "role", NODE_ROLE)),
            "its IAM role ebs-csi-role lacks AmazonEBSCSIDriverPolicy",
        ),
    ],
)
@pytest.mark.parametrize("mode", ["steady", "first"])
def test_a_missing_driver_policy_still_fires_on_a_real_preview(case: str, edit: Any, says: str, mode: str) -> None:
    """Matching real auto-names must not match everything: the violation survives a steady and a first preview."""
    plan = as_previewed(edit(resources("prod")), mode)
    found = mandatory(plan, "prod")
    assert any("volume-claims-bind" in f and says in f for f in found), f"{case}: {found}"


# Every violating case of the rules that follow references between AWS resources.
JOINING = ("efa-group-self-rules", "training-s3-not-nat-only", "deployer-rule-off-node-groups")
JOIN_CASES = [c for c in CASES if c.rule in JOINING and c.fires_on is not None]


@pytest.mark.parametrize("mode", ["steady", "first"])
@pytest.mark.parametrize("case", JOIN_CASES, ids=[f"{c.rule}:{c.id}" for c in JOIN_CASES])
def test_a_broken_path_still_fires_on_a_real_preview(case: Any, mode: str) -> None:
    """The broken wiring (no S3 endpoint on the training subnet's table, EFA interfaces without a self-referencing group,
    the deployers' rule on the nodes' group) is found when ids are AWS's and when none is known yet."""
    plan = resources(case.stack)
    for edit in case.edits:
        plan = edit(plan)
    found = [v for v in evaluate(as_previewed(plan, mode), context(case.stack), repository=False) if v.policy == case.rule]
    assert any(v.resource == case.fires_on for v in found), f"{case.rule}:{case.id} ({mode}): {found}"


def test_the_joining_rules_have_violating_cases() -> None:
    """So the test above cannot pass by having nothing to run."""
    assert {c.rule for c in JOIN_CASES} == set(JOINING)


def as_the_engine_sends(value: Any) -> Any:
    """Unknowns as the engine serializes them to a policy pack (the wire's unknown sentinel, pulumi_policy.proxy)."""
    if isinstance(value, dict):
        return {k: as_the_engine_sends(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_the_engine_sends(v) for v in value]
    return UNKNOWN_STRING_VALUE if value == UNKNOWN else value


@pytest.mark.parametrize("case", JOIN_CASES, ids=[f"{c.rule}:{c.id}" for c in JOIN_CASES])
def test_the_policy_pack_itself_fires_on_a_first_preview(case: Any) -> None:
    """Through the CrossGuard wrapper: unknowns read through pulumi_policy's proxy, dependencies as PolicyResources (refs_of)."""
    plan = resources(case.stack)
    for edit in case.edits:
        plan = edit(plan)
    first = [Resource(r.type, r.name, r.parent, as_the_engine_sends(dict(r.inputs)), None, dict(r.refs)) for r in as_previewed(plan, "first")]
    assert any(name == case.fires_on for name, _ in crossguard_findings(case, first)), case.id
