"""How EKS turns an AWS identity into a Kubernetes one: access entries for people, Pod Identity for pods.

EKS user guide, "Grant IAM users access to Kubernetes with EKS access entries" and "Create access
entries": with `authenticationMode: API` only access entries authenticate; an IAM role session maps
to the entry whose principalArn is the role's ARN (path included); its Kubernetes groups are the
entry's `kubernetesGroups` (plus `system:authenticated`), and the default username for a role is
`arn:aws:sts::<account>:assumed-role/<role name>/{{SessionName}}`. An associated access policy
(`AmazonEKSClusterAdminPolicy`, cluster scope) authorizes besides RBAC.
EKS user guide, "Learn how EKS Pod Identity grants pods access to AWS services": the EKS Pod Identity
Agent add-on serves credentials to a pod whose service account (namespace, name) has an association
in the cluster; the credentials are the associated role's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform.behaviour.rbac import UserInfo

ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class Entry:
    """One access entry as planned: principal, Kubernetes groups, type, and the resource that declares it."""

    resource: str
    principal_arn: str
    groups: tuple[str, ...]
    type: str


def entries(plan: Iterable[Any]) -> list[Entry]:
    """Every access entry of the plan."""
    return [
        Entry(r.name, str(r.inputs.get("principalArn")), tuple(r.inputs.get("kubernetesGroups") or ()), str(r.inputs.get("type") or "STANDARD"))
        for r in plan
        if r.type == ACCESS_ENTRY
    ]


def authenticate_role(role_arn: str, session: str, plan_entries: Iterable[Entry]) -> UserInfo | None:
    """The Kubernetes user a session of this IAM role becomes, or None when no access entry names the role.

    None too for what is not an IAM role ARN (`arn:aws:iam::<account>:role/[path/]<name>`), such as a value
    a first preview does not know yet.
    """
    entry = next((e for e in plan_entries if e.principal_arn == role_arn), None)
    parts = role_arn.split(":", 5)
    if entry is None or len(parts) != 6 or not parts[5].startswith("role/"):
        return None
    account, role_name = parts[4], parts[5].rsplit("/", 1)[-1]
    # Only STANDARD entries carry `kubernetesGroups` (EKS API CreateAccessEntry: the other types, EC2_LINUX,
    # EC2_WINDOWS, FARGATE_LINUX, HYBRID_LINUX, authenticate nodes with groups EKS sets itself).
    groups = entry.groups if entry.type == "STANDARD" else ()
    return UserInfo(f"arn:aws:sts::{account}:assumed-role/{role_name}/{session}", (*groups, AUTHENTICATED))


# EKS user guide, "Review access policy permissions": full access to every resource of the cluster.
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def access_policies(plan: Iterable[Any], principal_arn: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(policy ARN, scope type, namespaces) of every access policy associated with the principal's access entry.

    EKS API AssociateAccessPolicy: the principal must already have an access entry; the scope is `cluster`
    (every namespace) or `namespace` (only those listed). Without an entry, no association authorizes anything.
    """
    plan = list(plan)
    if not any(e.principal_arn == principal_arn for e in entries(plan)):
        return []
    out = []
    for r in plan:
        i = r.inputs
        if r.type == ACCESS_POLICY_ASSOCIATION and i.get("principalArn") == principal_arn:
            scope = i.get("accessScope") or {}
            out.append((str(i.get("policyArn")), str(scope.get("type")), tuple(scope.get("namespaces") or ())))
    return out


def pod_role(plan: Iterable[Any], cluster_name: str, namespace: str, service_account: str) -> Mapping[str, Any] | None:
    """The PodIdentityAssociation that gives pods of (namespace, service account) in the cluster their role, if any."""
    for r in plan:
        i = r.inputs
        if r.type == POD_IDENTITY_ASSOCIATION and (i.get("clusterName"), i.get("namespace"), i.get("serviceAccount")) == (
            cluster_name,
            namespace,
            service_account,
        ):
            return {"resource": r.name, **i}
    return None
