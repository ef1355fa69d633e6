"""Cross-field rules of the identity settings: access entries, platform admins, workload identity."""

from __future__ import annotations

from gpu_platform.errors import Problem
from gpu_platform.spec.models import PlatformSpec

P = "gpu-platform:"
EKS_ONLY = "allowed: only on EKS stacks (cluster.provider eks); an existing cluster maps identities itself, so remove the key"
# EKS user guide, "Create access entries": Kubernetes group names of an access entry cannot start with
# `system:` (those groups are Kubernetes' own, e.g. system:masters).
RESERVED_GROUP_PREFIX = "system:"


def check_identity(spec: PlatformSpec, file: str) -> list[Problem]:
    """Identity keys only where EKS can honour them; groups an access entry may carry; buckets not shared."""
    out: list[Problem] = []
    if not spec.is_eks:
        if spec.cluster.admin_role_arns:
            out.append(Problem(file, f"{P}cluster.adminRoleArns", "EKS access entries on an existing cluster", EKS_ONLY))
        for i, t in enumerate(spec.tenants):
            if t.access_role_arns:
                out.append(Problem(file, f"{P}tenants[{i}].accessRoleArns", "EKS access entries on an existing cluster", EKS_ONLY))
            if t.workload_identity is not None:
                out.append(Problem(file, f"{P}tenants[{i}].workloadIdentity", "EKS Pod Identity on an existing cluster", EKS_ONLY))
        return out
    owner: dict[str, str] = {}
    for i, t in enumerate(spec.tenants):
        at = f"{P}tenants[{i}]"
        if t.access_role_arns:
            if not t.groups:
                out.append(Problem(file, f"{at}.accessRoleArns", "the tenant has no groups for these roles to carry", "allowed: set groups too"))
            for j, group in enumerate(t.groups):
                if group.startswith(RESERVED_GROUP_PREFIX):
                    out.append(
                        Problem(
                            file,
                            f"{at}.groups[{j}]",
                            f"'{group}' starts with 'system:', which EKS access entries refuse as a Kubernetes group",
                            "allowed: group names not starting with system:",
                        )
                    )
        if t.workload_identity is not None:
            if not t.workload_identity.buckets:
                out.append(Problem(file, f"{at}.workloadIdentity.buckets", "no buckets listed", "allowed: one or more S3 bucket names"))
            for j, bucket in enumerate(t.workload_identity.buckets):
                if bucket in owner and owner[bucket] != t.name:
                    out.append(
                        Problem(
                            file,
                            f"{at}.workloadIdentity.buckets[{j}]",
                            f"bucket '{bucket}' is already tenant '{owner[bucket]}''s (each tenant's role would reach the other's data)",
                            "allowed: each bucket under one tenant",
                        )
                    )
                owner.setdefault(bucket, t.name)
    return out
