"""The EBS CSI driver as an EKS add-on, its controller's IAM role bound by EKS Pod Identity.

EKS clusters from 1.23 on provision EBS volumes only through the CSI driver (the in-tree
kubernetes.io/aws-ebs provisioner is migrated to it), and from 1.30 on EKS creates no default
StorageClass (EKS user guide, "Store Kubernetes volumes with Amazon EBS"). Without the add-on a
PersistentVolumeClaim naming `ebs.csi.aws.com`'s class stays Pending.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpu_platform.aws.iam import assume_role_policy
from gpu_platform.versions import Lockfile

ADDON = "aws-ebs-csi-driver"
PROVISIONER = "ebs.csi.aws.com"
# The add-on's controller Deployment runs as this service account in kube-system (EKS user guide,
# "Use Kubernetes volume storage with Amazon EBS", Pod Identity step); the node DaemonSet needs no AWS calls.
SERVICE_ACCOUNT = "ebs-csi-controller-sa"
NAMESPACE = "kube-system"
# AWS managed policy for the driver: CreateVolume/AttachVolume/... scoped by the driver's own tags.
POLICY_ARN = "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
# Pod Identity credentials come from the agent add-on; without it the controller gets none.
POD_IDENTITY_AGENT_ADDON = "eks-pod-identity-agent"
# Add-ons a component of their own creates (with their IAM role), not the cluster's plain add-on loop:
# this one, and the opt-in FSx for Lustre driver (gpu_platform.aws.fsx).
COMPONENT_ADDONS = frozenset({ADDON, "aws-fsx-csi-driver"})


@dataclass(frozen=True)
class EbsCsiDriverArgs:
    """Inputs of the EbsCsiDriver component."""

    lock: Lockfile
    cluster_name: pulumi.Input[str]
    tags: dict[str, str]
    after: tuple[pulumi.Resource, ...] = ()


def csi_addon_with_role(
    name: str,
    *,
    addon: str,
    version: str,
    service_account: str,
    policy_arn: str,
    policy_suffix: str,
    cluster_name: pulumi.Input[str],
    tags: dict[str, str],
    after: tuple[pulumi.Resource, ...],
    parent: pulumi.Resource,
) -> tuple[aws.iam.Role, aws.eks.Addon]:
    """A CSI driver's EKS add-on and its controller's role (trusted by pods.eks.amazonaws.com, one managed policy).

    CreateAddon's podIdentityAssociations creates the association for the add-on's service account; the
    add-on waits for the policy attachment and for `after` (the Pod Identity agent add-on).
    """
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(f"{name}-role", assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", session_tags=True), tags=tags, opts=child)
    attachment = aws.iam.RolePolicyAttachment(f"{name}-policy-{policy_suffix}", role=role.name, policy_arn=policy_arn, opts=child)
    created = aws.eks.Addon(
        f"{name}-addon",
        cluster_name=cluster_name,
        addon_name=addon,
        addon_version=version,
        pod_identity_associations=[aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=service_account)],
        resolve_conflicts_on_update="OVERWRITE",
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[attachment, *after]),
    )
    return role, created


class EbsCsiDriver(pulumi.ComponentResource):
    """IAM role (trusted by pods.eks.amazonaws.com) with AmazonEBSCSIDriverPolicy, and the pinned EBS CSI add-on."""

    def __init__(self, name: str, args: EbsCsiDriverArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:EbsCsiDriver", name, None, opts)
        role, self.addon = csi_addon_with_role(
            name,
            addon=ADDON,
            version=args.lock.eks.addons[ADDON],
            service_account=SERVICE_ACCOUNT,
            policy_arn=POLICY_ARN,
            policy_suffix="ebs",
            cluster_name=args.cluster_name,
            tags=args.tags,
            after=args.after,
            parent=self,
        )
        self.register_outputs({"role_arn": role.arn})
