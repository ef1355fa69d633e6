"""An IAM role a controller's ServiceAccount assumes through EKS Pod Identity (no IRSA annotation, no node role)."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpu_platform.aws.iam import assume_role_policy


def pod_identity_role(
    name: str,
    cluster_name: pulumi.Input[str],
    namespace: str,
    service_account: str,
    policy: pulumi.Input[str],
    tags: dict[str, str],
    parent: pulumi.Resource,
    after: tuple[pulumi.Resource, ...] = (),
) -> aws.eks.PodIdentityAssociation:
    """`<name>-role` with its inline `<name>-policy`, bound to namespace/service_account by `<name>-identity`.

    The role trusts pods.eks.amazonaws.com for AssumeRole and TagSession, as EKS Pod Identity calls it; `after`
    holds the Pod Identity agent add-on where the stack installs it.
    """
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(f"{name}-role", assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", session_tags=True), tags=tags, opts=child)
    aws.iam.RolePolicy(f"{name}-policy", role=role.id, policy=policy, opts=child)
    return aws.eks.PodIdentityAssociation(
        f"{name}-identity",
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.arn,
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(after)),
    )
