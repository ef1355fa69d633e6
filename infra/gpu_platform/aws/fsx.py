"""FSx for Lustre for training data (opt-in, `storage.fsxLustre`): the CSI add-on, its role, the Lustre group, the class.

- The aws-fsx-csi-driver EKS add-on, its controller (`fsx-csi-controller-sa` in kube-system: the driver's
  charts/aws-fsx-csi-driver/values.yaml `controller.serviceAccount.name`) bound by EKS Pod Identity to a role
  with AmazonFSxFullAccess, the policy the driver's docs/install.md (lockfile's tag) attaches to that service account.
- A security group for the file systems' ENIs. FSx for Lustre User Guide, "File system access control with
  Amazon VPC" > "Amazon VPC security groups": Lustre traffic is TCP 988 and TCP 1018-1023, and the group must
  allow it inbound from itself and from the clients' groups; the clients' groups must allow it inbound from
  the file system's group. The nodes carry the EKS cluster security group, whose egress is open.
- The StorageClass (gpu_platform.k8s.storage `fsx_storage_class`), naming that group and the subnet of one zone.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform.aws.sg_rules import Direction, add_sg_rule, sg_rule
from gpu_platform.aws.storage import csi_addon_with_role
from gpu_platform.k8s.objects import create
from gpu_platform.k8s.storage import fsx_storage_class
from gpu_platform.spec.models import PlatformSpec

ADDON = "aws-fsx-csi-driver"
SERVICE_ACCOUNT = "fsx-csi-controller-sa"
POLICY_ARN = "arn:aws:iam::aws:policy/AmazonFSxFullAccess"
# FSx for Lustre User Guide, "Amazon VPC security groups": the Lustre ports.
LUSTRE_PORTS = ((988, 988), (1018, 1023))


def fsx_zone(spec: PlatformSpec) -> str:
    """The zone whose private subnet the file systems go into: `storage.fsxLustre.zone`, else the first cluster zone."""
    return spec.storage.fsx_lustre.zone or spec.network.zones()[0]


@dataclass(frozen=True)
class FsxLustreArgs:
    """Inputs of the FsxLustre component."""

    spec: PlatformSpec
    cluster_name: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    subnets_by_zone: dict[str, pulumi.Output[str]]
    cluster_security_group_id: pulumi.Input[str]
    provider: k8s.Provider
    tags: dict[str, str]
    after: tuple[pulumi.Resource, ...] = ()


class FsxLustre(pulumi.ComponentResource):
    """Role + AmazonFSxFullAccess, the pinned aws-fsx-csi-driver add-on, the Lustre security group and rules, the class."""

    def __init__(self, name: str, args: FsxLustreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:FsxLustre", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = args.spec
        role, addon = csi_addon_with_role(
            name,
            addon=ADDON,
            version=spec.lock.eks.addons[ADDON],
            service_account=SERVICE_ACCOUNT,
            policy_arn=POLICY_ARN,
            policy_suffix="fsx",
            cluster_name=args.cluster_name,
            tags=args.tags,
            after=args.after,
            parent=self,
        )
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"FSx for Lustre file systems of {spec.cluster.name}: Lustre (TCP 988, 1018-1023) from members and nodes",
            tags={**args.tags, "Name": f"{spec.cluster.name}-fsx-lustre"},
            opts=child,
        )
        for low, high in LUSTRE_PORTS:
            ports = f"{low}" if low == high else f"{low}-{high}"
            for peer, who in ((sg.id, "self"), (args.cluster_security_group_id, "nodes")):
                each_way: tuple[tuple[Direction, str, str], ...] = (
                    ("ingress", "in", f"from {'file system members' if who == 'self' else 'the nodes (EKS cluster group)'}"),
                    ("egress", "out", f"to {'file system members' if who == 'self' else 'the nodes'}"),
                )
                for direction, short, peer_text in each_way:
                    rule = sg_rule(
                        f"{name}-{short}-{who}-{low}",
                        direction,
                        sg.id,
                        peer_group_id=peer,
                        protocol="tcp",
                        ports=(low, high),
                        description=f"Lustre TCP {ports} {peer_text}",
                        tags=args.tags,
                    )
                    add_sg_rule(rule, child)
            # The clients' side: the nodes' group admits Lustre from the file systems (the guide's client rules).
            clients = sg_rule(
                f"{name}-nodes-in-{low}",
                "ingress",
                args.cluster_security_group_id,
                peer_group_id=sg.id,
                protocol="tcp",
                ports=(low, high),
                description=f"Lustre TCP {ports} from the FSx for Lustre file systems",
                tags=args.tags,
            )
            add_sg_rule(clients, child)
        manifest = fsx_storage_class(spec, args.subnets_by_zone[fsx_zone(spec)], sg.id)
        create(
            f"{name}-storageclass-{spec.storage.fsx_lustre.class_name}",
            manifest,
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[addon]),
        )
        self.security_group_id = sg.id
        self.register_outputs({"role_arn": role.arn, "security_group_id": sg.id})
