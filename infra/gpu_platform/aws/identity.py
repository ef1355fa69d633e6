"""Who may use the cluster, and as what: EKS access entries for people, Pod Identity for tenant workloads.

People: the cluster authenticates with access entries only (`authenticationMode: API`), so a tenant's
Kubernetes groups mean something only when an access entry carries them: each role listed in a
tenant's `accessRoleArns` gets an access entry whose `kubernetesGroups` are the tenant's groups, which
the tenant RoleBindings bind. Platform admins get an entry with the EKS cluster admin access policy.
Workloads: a tenant's `workloadIdentity` is a ServiceAccount in its namespace, associated through EKS
Pod Identity with a role that may list, read, write and delete objects in exactly the tenant's buckets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform.aws.iam import assume_role_policy
from gpu_platform.k8s.objects import create
from gpu_platform.provenance import source
from gpu_platform.spec.models import PlatformSpec, Tenant

# EKS user guide, "Review access policy permissions": the cluster-wide admin access policy.
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
# Multipart writers (every SDK's transfer manager above ~8 MiB: boto3 TransferConfig multipart_threshold, the AWS
# CLI, s5cmd) need more than PutObject: AbortMultipartUpload when an upload fails, ListParts (IAM action
# s3:ListMultipartUploadParts) to resume, ListMultipartUploads (s3:ListBucketMultipartUploads, a bucket action)
# to find and clean up incomplete uploads. CreateMultipartUpload, UploadPart and CompleteMultipartUpload are
# authorised as s3:PutObject (S3 User Guide, "Multipart upload API and permissions").
BUCKET_ACTIONS = ("s3:ListBucket", "s3:ListBucketMultipartUploads")
OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"


@dataclass(frozen=True)
class AccessEntryPlan:
    """One access entry: the principal, the Kubernetes groups it carries, and whether it is a platform admin."""

    principal_arn: str
    groups: tuple[str, ...]
    admin: bool
    key: str = ""  # the stack key that first lists the principal (a tenant's accessRoleArns, else cluster.adminRoleArns)

    @property
    def slug(self) -> str:
        """A resource-name-safe, unique part: account and role name."""
        parts = self.principal_arn.split(":", 5)  # arn:partition:iam::account:role/path/name
        account, role = parts[4], parts[5].rsplit("/", 1)[-1]
        return re.sub(r"[^a-z0-9]+", "-", f"{account}-{role}".lower()).strip("-")


def access_entries(spec: PlatformSpec) -> list[AccessEntryPlan]:
    """One access entry per principal, carrying the union of the groups of every tenant that lists it.

    botocore eks CreateAccessEntry.principalArn: "You can't specify the same ARN in more than one access
    entry", so a role listed by several tenants (or also as an admin) gets one entry.
    """
    groups: dict[str, list[str]] = {}
    admins: set[str] = set()
    keys: dict[str, str] = {}
    for i, t in enumerate(spec.tenants):
        for j, arn in enumerate(t.access_role_arns):
            have = groups.setdefault(arn, [])
            have += [g for g in t.groups if g not in have]
            keys.setdefault(arn, f"gpu-platform:tenants[{i}].accessRoleArns[{j}]")
    for j, arn in enumerate(spec.cluster.admin_role_arns):
        groups.setdefault(arn, [])
        admins.add(arn)
        keys.setdefault(arn, f"gpu-platform:cluster.adminRoleArns[{j}]")
    return [AccessEntryPlan(arn, tuple(gs), arn in admins, keys[arn]) for arn, gs in groups.items()]


def partition(region: str | None) -> str:
    """The ARN partition of a region (IAM User Guide, "IAM ARNs")."""
    if region and region.startswith("cn-"):
        return "aws-cn"
    if region and region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def bucket_policy(buckets: tuple[str, ...], region: str | None) -> dict[str, Any]:
    """Least privilege on exactly these buckets: ListBucket on the bucket ARN, object actions on `bucket/*`.

    S3 User Guide, "Policy actions for Amazon S3": ListBucket is a bucket-resource action, Get/Put/
    DeleteObject are object-resource actions, so each is granted only on its own resource type.
    """
    p = partition(region)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "ListTenantBuckets", "Effect": "Allow", "Action": list(BUCKET_ACTIONS), "Resource": [f"arn:{p}:s3:::{b}" for b in buckets]},
            {
                "Sid": "ReadWriteTenantObjects",
                "Effect": "Allow",
                "Action": list(OBJECT_ACTIONS),
                "Resource": [f"arn:{p}:s3:::{b}/*" for b in buckets],
            },
        ],
    }


@dataclass(frozen=True)
class ClusterAccessArgs:
    """Inputs of the ClusterAccess component."""

    spec: PlatformSpec
    cluster_name: pulumi.Input[str]
    tags: dict[str, str]


class ClusterAccess(pulumi.ComponentResource):
    """Access entries (type STANDARD) from the stack's settings, and the admin policy association."""

    def __init__(self, name: str, args: ClusterAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:ClusterAccess", name, None, opts)
        for entry in access_entries(args.spec):
            with source(entry.key):
                self._entry(name, entry, args)
        self.register_outputs({})

    def _entry(self, name: str, entry: AccessEntryPlan, args: ClusterAccessArgs) -> None:
        child = pulumi.ResourceOptions(parent=self)
        created = aws.eks.AccessEntry(
            f"{name}-{entry.slug}",
            cluster_name=args.cluster_name,
            principal_arn=entry.principal_arn,
            kubernetes_groups=list(entry.groups) or None,
            type="STANDARD",
            tags=args.tags,
            opts=child,
        )
        if entry.admin:
            aws.eks.AccessPolicyAssociation(
                f"{name}-{entry.slug}-admin",
                cluster_name=args.cluster_name,
                principal_arn=entry.principal_arn,
                policy_arn=ADMIN_POLICY,
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[created]),
            )


@dataclass(frozen=True)
class WorkloadIdentityArgs:
    """Inputs of one tenant's WorkloadIdentity component."""

    spec: PlatformSpec
    tenant: Tenant
    cluster_name: pulumi.Input[str]
    provider: k8s.Provider
    namespace: pulumi.Resource
    tags: dict[str, str]


class WorkloadIdentity(pulumi.ComponentResource):
    """ServiceAccount, IAM role (trust: EKS Pod Identity) with the tenant's bucket policy, and the association."""

    def __init__(self, name: str, args: WorkloadIdentityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:WorkloadIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        t = args.tenant
        wi = t.workload_identity
        assert wi is not None
        # A plain object under ServiceAccount's type token (k8s/objects.create): the typed class sends the
        # same token and inputs, and importing pulumi_kubernetes.core.v1 for it alone costs ~0.45 s a run.
        create(
            f"{name}-sa",
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": wi.service_account, "namespace": t.ns, "labels": {"gpu-platform.io/tenant": t.name}},
            },
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[args.namespace]),
        )
        # EKS user guide, "Create IAM role with trust policy required by EKS Pod Identity": the service
        # principal must be allowed sts:AssumeRole and sts:TagSession.
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=assume_role_policy(POD_IDENTITY_PRINCIPAL, session_tags=True),
            tags={**args.tags, "gpu-platform:tenant": t.name},
            opts=child,
        )
        aws.iam.RolePolicy(f"{name}-s3", role=role.id, policy=json.dumps(bucket_policy(wi.buckets, args.spec.region)), opts=child)
        aws.eks.PodIdentityAssociation(
            f"{name}-association",
            cluster_name=args.cluster_name,
            namespace=t.ns,
            service_account=wi.service_account,
            role_arn=role.arn,
            tags=args.tags,
            opts=child,
        )
        self.register_outputs({})
