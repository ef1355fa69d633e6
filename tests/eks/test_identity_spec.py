"""Identity settings: bad ARNs, bucket names and groups are one clear line and exit 2; on-prem refuses them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.aws.identity import access_entries, bucket_policy
from gpu_platform.behaviour import iam_policy
from gpu_platform.spec.aws_names import bucket_name, role_arn
from tests.conftest import spec_for
from tests.foundation.bad_stack import assert_one_clear_line

Mutation = Callable[[dict[str, Any]], None]
SSO = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_LlmTraining_8a41d2c7e9b05f13"


def tenant(index: int, **keys: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        doc["config"]["gpu-platform:tenants"][index].update(keys)

    return mutate


def cluster(**keys: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        doc["config"]["gpu-platform:cluster"].update(keys)

    return mutate


P = "gpu-platform:"
CASES = [
    (
        "sts-session-arn",
        "prod",
        tenant(0, accessRoleArns=["arn:aws:sts::123456789012:assumed-role/LlmTraining/alice"]),
        f"{P}tenants[0].accessRoleArns[0]",
        "STS session ARN",
    ),
    (
        "user-not-role",
        "prod",
        tenant(0, accessRoleArns=["arn:aws:iam::123456789012:user/alice"]),
        f"{P}tenants[0].accessRoleArns[0]",
        "not an IAM role ARN",
    ),
    ("short-account", "prod", cluster(adminRoleArns=["arn:aws:iam::12345:role/admin"]), f"{P}cluster.adminRoleArns[0]", "not an IAM role ARN"),
    ("system-group", "prod", tenant(0, groups=["system:masters"]), f"{P}tenants[0].groups[0]", "starts with 'system:'"),
    ("roles-without-groups", "prod", tenant(0, groups=[]), f"{P}tenants[0].accessRoleArns", "no groups"),
    ("bucket-wildcard", "prod", tenant(0, workloadIdentity={"buckets": ["acme-prod-*"]}), f"{P}tenants[0].workloadIdentity.buckets[0]", "wildcard"),
    (
        "bucket-uppercase",
        "prod",
        tenant(0, workloadIdentity={"buckets": ["Acme-Datasets"]}),
        f"{P}tenants[0].workloadIdentity.buckets[0]",
        "S3 refuses",
    ),
    ("bucket-ip", "prod", tenant(0, workloadIdentity={"buckets": ["192.168.5.4"]}), f"{P}tenants[0].workloadIdentity.buckets[0]", "IP address"),
    (
        "bucket-double-dot",
        "prod",
        tenant(0, workloadIdentity={"buckets": ["acme..data"]}),
        f"{P}tenants[0].workloadIdentity.buckets[0]",
        "two adjacent",
    ),
    (
        "bucket-reserved-suffix",
        "prod",
        tenant(0, workloadIdentity={"buckets": ["acme-data-s3alias"]}),
        f"{P}tenants[0].workloadIdentity.buckets[0]",
        "reserved suffix",
    ),
    ("no-buckets", "prod", tenant(0, workloadIdentity={"buckets": []}), f"{P}tenants[0].workloadIdentity.buckets", "no buckets listed"),
    (
        "shared-bucket",
        "prod",
        tenant(1, workloadIdentity={"buckets": ["acme-prod-llm-datasets"]}),
        f"{P}tenants[1].workloadIdentity.buckets[0]",
        "already tenant 'llm-training''s",
    ),
    ("onprem-access-roles", "onprem", tenant(0, accessRoleArns=[SSO]), f"{P}tenants[0].accessRoleArns", "only on EKS stacks"),
    (
        "onprem-workload-identity",
        "onprem",
        tenant(0, workloadIdentity={"buckets": ["acme-onprem-data"]}),
        f"{P}tenants[0].workloadIdentity",
        "only on EKS stacks",
    ),
    ("onprem-admins", "onprem", cluster(adminRoleArns=[SSO]), f"{P}cluster.adminRoleArns", "only on EKS stacks"),
]


@pytest.mark.parametrize(("case", "base", "mutate", "key", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_bad_identity_setting_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, base: str, mutate: Mutation, key: str, fragment: str
) -> None:
    assert_one_clear_line(tmp_path, capsys, case, base, mutate, key, fragment)


@pytest.mark.parametrize("value", [SSO, "arn:aws:iam::123456789012:role/ci/data-platform-pipelines", "arn:aws-cn:iam::123456789012:role/ops"])
def test_role_arns_aws_accepts(value: str) -> None:
    """EKS "Create access entries": a role ARN may include a path (unlike aws-auth entries)."""
    assert role_arn(value) == value


@pytest.mark.parametrize("value", ["acme-prod-llm-datasets", "a.b-c", "abc", "x" * 63])
def test_bucket_names_s3_accepts(value: str) -> None:
    assert bucket_name(value) == value


@pytest.mark.parametrize("value", ["ab", "x" * 64, "-acme", "acme-", "xn--acme", "acme.mrap", "ac_me"])
def test_bucket_names_s3_refuses(value: str) -> None:
    with pytest.raises(ValueError):
        bucket_name(value)


def test_a_role_two_tenants_list_is_one_entry_with_both_groups() -> None:
    """botocore eks CreateAccessEntry.principalArn: "You can't specify the same ARN in more than one access entry"."""
    spec = spec_for("prod")
    shared = spec.model_copy(
        update={"tenants": (spec.tenants[0], spec.tenants[1].model_copy(update={"access_role_arns": spec.tenants[0].access_role_arns}))}
    )
    entries = [e for e in access_entries(shared) if e.principal_arn == spec.tenants[0].access_role_arns[0]]
    assert len(entries) == 1
    assert entries[0].groups == (*spec.tenants[0].groups, *spec.tenants[1].groups)


def test_bucket_policy_is_least_privilege() -> None:
    """ListBucket only on the bucket ARN, object actions only on bucket/*; nothing on a bucket whose name merely starts the same."""
    doc = bucket_policy(("acme-data",), "us-east-1")
    assert iam_policy.decide([doc], "s3:ListBucket", "arn:aws:s3:::acme-data") == iam_policy.ALLOW
    assert iam_policy.decide([doc], "s3:GetObject", "arn:aws:s3:::acme-data") == iam_policy.IMPLICIT_DENY
    assert iam_policy.decide([doc], "s3:ListBucket", "arn:aws:s3:::acme-data/x") == iam_policy.IMPLICIT_DENY
    assert iam_policy.decide([doc], "s3:GetObject", "arn:aws:s3:::acme-data-2/x") == iam_policy.IMPLICIT_DENY
    assert iam_policy.decide([doc], "S3:getobject", "arn:aws:s3:::acme-data/a/b") == iam_policy.ALLOW  # action names are case-insensitive
    assert bucket_policy(("acme-data",), "cn-north-1")["Statement"][0]["Resource"] == ["arn:aws-cn:s3:::acme-data"]


def test_a_multipart_writer_can_abort_resume_and_clean_up() -> None:
    """S3 User Guide, "Multipart upload API and permissions": Create/UploadPart/Complete are s3:PutObject; an SDK's
    transfer manager also aborts failed uploads (AbortMultipartUpload), lists parts to resume (ListParts:
    s3:ListMultipartUploadParts) and lists incomplete uploads (s3:ListBucketMultipartUploads, a bucket action)."""
    doc = bucket_policy(("acme-ckpt",), "us-east-1")
    obj, bucket = "arn:aws:s3:::acme-ckpt/run-7/step-1000.pt", "arn:aws:s3:::acme-ckpt"
    for action in ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"):
        assert iam_policy.decide([doc], action, obj) == iam_policy.ALLOW, action
        assert iam_policy.decide([doc], action, bucket) == iam_policy.IMPLICIT_DENY, action
    assert iam_policy.decide([doc], "s3:ListBucketMultipartUploads", bucket) == iam_policy.ALLOW
    assert iam_policy.decide([doc], "s3:ListBucketMultipartUploads", "arn:aws:s3:::other") == iam_policy.IMPLICIT_DENY


def test_iam_explicit_deny_wins_and_wildcards_follow_iam() -> None:
    """IAM "Policy evaluation logic": an explicit Deny beats any Allow; `?` is one character, resources are case-sensitive."""
    allow = {"Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::acme-?/*"}]}
    deny = {"Statement": {"Effect": "Deny", "NotAction": "s3:GetObject", "Resource": "*"}}
    assert iam_policy.decide([allow], "s3:PutObject", "arn:aws:s3:::acme-1/k") == iam_policy.ALLOW
    assert iam_policy.decide([allow], "s3:PutObject", "arn:aws:s3:::acme-12/k") == iam_policy.IMPLICIT_DENY
    assert iam_policy.decide([allow], "s3:PutObject", "arn:aws:s3:::ACME-1/k") == iam_policy.IMPLICIT_DENY
    assert iam_policy.decide([allow, deny], "s3:PutObject", "arn:aws:s3:::acme-1/k") == iam_policy.EXPLICIT_DENY
    assert iam_policy.decide([allow, deny], "s3:GetObject", "arn:aws:s3:::acme-1/k") == iam_policy.ALLOW
