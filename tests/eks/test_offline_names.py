"""The offline engine reports names the way the AWS provider does, so every reference in a plan resolves."""

from __future__ import annotations

import importlib
import inspect

import pytest
from pydantic.alias_generators import to_camel

from gpu_platform.engine import auto_name
from tests.conftest import plan_for

EKS_STACKS = ("dev", "staging", "prod")


def _required_args(type_token: str) -> list[str]:
    """Wire names of the arguments the provider's resource cannot be created without.

    Reads the pinned pulumi-aws SDK itself: `pulumi_aws.<module>.<Type>Args.__init__` marks required
    inputs as keyword-only parameters without a default (e.g. RolePolicyAttachmentArgs(policy_arn, role)).
    """
    module, cls = type_token.split(":")[1].split("/", maxsplit=1)[0], type_token.split(":")[2]
    args = getattr(importlib.import_module(f"pulumi_aws.{module}"), f"{cls}Args")
    params = inspect.signature(args.__init__).parameters.values()
    return [to_camel(p.name) for p in params if p.kind is p.KEYWORD_ONLY and p.default is inspect.Parameter.empty]


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_every_required_aws_argument_is_in_the_plan(stack: str) -> None:
    """An input fed from another resource's auto-named `name` (IAM `role`) must show, not vanish.

    Pulumi auto-names resources the program does not name (pulumi-terraform-bridge
    `tfbridge.AutoName` → `resource.NewUniqueHex(name+"-", 7, maxLen)`), so `aws.iam.Role.name` is
    known after create and `RolePolicyAttachment.role` carries it. The old mock returned no `name`,
    and the plan showed attachments with no role at all.
    """
    missing = []
    for r in plan_for(stack).resources:
        if r.type.startswith("aws:"):
            missing += [f"{r.name}.{arg}" for arg in _required_args(r.type) if r.inputs.get(arg) in (None, "")]
    assert not missing, f"required provider arguments absent from the plan: {missing}"


def test_policy_attachments_name_their_role() -> None:
    """Each RolePolicyAttachment names the auto-named Role of the same component, as AWS will see it."""
    plan = plan_for("prod")
    roles = {auto_name(r.type, r.name): r.name for r in plan.of_type("aws:iam/role:Role")}
    attachments = plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachments
    for a in attachments:
        role = roles.get(a.inputs["role"])
        assert role is not None, f"{a.name}.role = {a.inputs['role']!r} is not a Role of the plan"
        assert role == a.name.rsplit("-policy-", 1)[0] + "-role", (a.name, role)
    assert len(auto_name("aws:iam/role:Role", "cluster-node-role")) == len("cluster-node-role") + 8
    assert auto_name("aws:iam/role:Role", "x") == auto_name("aws:iam/role:Role", "x")
