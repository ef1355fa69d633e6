"""The EKS control plane: KMS-encrypted secrets, logging, private endpoint, add-ons, system nodes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from gpu_platform.aws.iam import CLUSTER_MANAGED_POLICIES, NODE_MANAGED_POLICIES, assume_role_policy
from gpu_platform.aws.sg_rules import add_sg_rule, sg_rule
from gpu_platform.aws.storage import COMPONENT_ADDONS
from gpu_platform.behaviour.node_health import ADDON as NODE_MONITORING_AGENT
from gpu_platform.pools import GPU_NODE_TOLERATIONS
from gpu_platform.spec.models import ClusterSpec
from gpu_platform.versions import Lockfile


def kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig that authenticates with `aws eks get-token` (no static credentials)."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
            "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
            "current-context": cluster_name,
            "users": [
                {
                    "name": cluster_name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region],
                        }
                    },
                }
            ],
        }
    )


def addon_configuration(addon: str) -> dict[str, Any] | None:
    """Configuration values of a managed add-on, or None for its defaults.

    vpc-cni enforces Kubernetes NetworkPolicies only with `enableNetworkPolicy` "true" (EKS user guide,
    "Configure your cluster for Kubernetes network policies"); without it the tenants' default-deny
    policies are accepted by the API server and enforced by nothing.

    The node monitoring agent watches GPUs through its DCGM server DaemonSet, whose chart renders
    `dcgmAgent.tolerations` (empty by default) as the pods' tolerations (eks-node-monitoring-agent at the lockfile's add-on release,
    charts/eks-node-monitoring-agent/templates/dcgm-daemonset.yaml): on GPU nodes, which all carry the GPU
    taint, it would never run and no XID would ever reach node repair (behaviour.node_health).
    """
    if addon == "vpc-cni":
        return {"enableNetworkPolicy": "true"}
    if addon == NODE_MONITORING_AGENT:
        return {"dcgmAgent": {"tolerations": GPU_NODE_TOLERATIONS}}
    return None


@dataclass(frozen=True)
class EksClusterArgs:
    """Inputs of the EksCluster component."""

    spec: ClusterSpec
    lock: Lockfile
    region: str
    subnets_by_zone: dict[str, pulumi.Output[str]]
    tags: dict[str, str]
    vpc_id: pulumi.Input[str] | None = None
    # MultiKueue workers: addresses the public endpoint also admits (the manager's NAT gateways, program.build_workers).
    admit_ips: tuple[pulumi.Input[str], ...] = ()


def public_cidrs(configured: tuple[str, ...], admitted: list[str]) -> list[str]:
    """The public endpoint's CIDRs: the stack's, then each admitted address as a /32 not already listed."""
    extra = [f"{ip}/32" for ip in admitted if f"{ip}/32" not in configured]
    return [*configured, *dict.fromkeys(extra)]


class EksCluster(pulumi.ComponentResource):
    """EKS cluster with its IAM roles, KMS key, managed add-ons and the system node group."""

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:EksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, lock = args.spec, args.lock
        cluster_role = aws.iam.Role(f"{name}-cluster-role", assume_role_policy=assume_role_policy("eks.amazonaws.com"), tags=args.tags, opts=child)
        for i, arn in enumerate(CLUSTER_MANAGED_POLICIES):
            aws.iam.RolePolicyAttachment(f"{name}-cluster-policy-{i}", role=cluster_role.name, policy_arn=arn, opts=child)
        encryption = None
        if spec.secrets_encryption:
            key = aws.kms.Key(
                f"{name}-secrets-key",
                description=f"EKS secrets envelope encryption for {spec.name}",
                enable_key_rotation=True,
                deletion_window_in_days=30,
                tags=args.tags,
                opts=child,
            )
            encryption = aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn), resources=["secrets"]
            )
        # The deployers' HTTPS rule goes on a group of its own that only the control plane's ENIs carry
        # (EKS API ClusterVpcConfig.securityGroupIds: "additional security groups ... for the
        # cross-account elastic network interfaces"), not on the cluster security group that every
        # node and EFA interface also carries.
        control_plane_sg = None
        if spec.endpoint_private_access and spec.deployer_cidrs:
            control_plane_sg = aws.ec2.SecurityGroup(
                f"{name}-control-plane-sg",
                vpc_id=args.vpc_id,
                description=f"EKS control plane of {spec.name}: HTTPS from the deployers' networks",
                tags={**args.tags, "Name": f"{spec.name}-control-plane"},
                opts=child,
            )
        # A MultiKueue worker's public endpoint also admits the manager's NAT addresses (program.build_workers).
        admitted = (
            pulumi.Output.all(*args.admit_ips).apply(lambda ips: public_cidrs(spec.public_access_cidrs, list(ips)))
            if spec.endpoint_public_access and args.admit_ips
            else None
        )
        self.cluster = aws.eks.Cluster(
            f"{name}-eks",
            name=spec.name,
            version=lock.kubernetes.version,
            role_arn=cluster_role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=list(args.subnets_by_zone.values()),
                endpoint_private_access=spec.endpoint_private_access,
                endpoint_public_access=spec.endpoint_public_access,
                public_access_cidrs=list(spec.public_access_cidrs) if spec.endpoint_public_access and not args.admit_ips else admitted,
                security_group_ids=[control_plane_sg.id] if control_plane_sg is not None else None,
            ),
            encryption_config=encryption,
            enabled_cluster_log_types=list(spec.log_types),
            access_config=aws.eks.ClusterAccessConfigArgs(authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True),
            tags=args.tags,
            opts=child,
        )
        if control_plane_sg is not None:
            # The private endpoint admits what the control plane's groups admit: the deployers' networks.
            for i, cidr in enumerate(spec.deployer_cidrs):
                deployer = sg_rule(
                    f"{name}-deployer-{i}",
                    "ingress",
                    control_plane_sg.id,
                    cidr_ipv4=cidr,
                    protocol="tcp",
                    ports=(443, 443),
                    description=f"pulumi up / kubectl from {cidr} to the private EKS API",
                    tags=args.tags,
                )
                add_sg_rule(deployer, child)
        self.node_role = aws.iam.Role(f"{name}-node-role", assume_role_policy=assume_role_policy("ec2.amazonaws.com"), tags=args.tags, opts=child)
        attachments = [
            aws.iam.RolePolicyAttachment(f"{name}-node-policy-{i}", role=self.node_role.name, policy_arn=arn, opts=child)
            for i, arn in enumerate(NODE_MANAGED_POLICIES)
        ]
        self.addons: dict[str, aws.eks.Addon] = {}
        for addon, version in lock.eks.addons.items():
            if addon in COMPONENT_ADDONS:
                continue  # created with its IAM role by its own component (gpu_platform.aws.storage)
            values = addon_configuration(addon)
            self.addons[addon] = aws.eks.Addon(
                f"{name}-addon-{addon}",
                cluster_name=self.cluster.name,
                addon_name=addon,
                addon_version=version,
                configuration_values=None if values is None else json.dumps(values),
                resolve_conflicts_on_update="OVERWRITE",
                tags=args.tags,
                opts=child,
            )
        sys_nodes = spec.system_nodes
        aws.eks.NodeGroup(
            f"{name}-system-ng",
            cluster_name=self.cluster.name,
            node_group_name=f"{spec.name}-system",
            node_role_arn=self.node_role.arn,
            subnet_ids=list(args.subnets_by_zone.values()),
            capacity_type="ON_DEMAND",
            ami_type=lock.eks.system_ami_type,
            release_version=lock.eks.ami_release_version,
            version=lock.kubernetes.version,
            instance_types=[sys_nodes.instance_type],
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=sys_nodes.min_size, desired_size=sys_nodes.desired_size, max_size=sys_nodes.max_size
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            labels={"gpu-platform.io/node-role": "system"},
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=attachments),
        )
        self.security_group_id = self.cluster.vpc_config.cluster_security_group_id
        self.kubeconfig = pulumi.Output.all(self.cluster.name, self.cluster.endpoint, self.cluster.certificate_authority.data).apply(
            lambda a: kubeconfig(a[0], a[1], a[2], args.region)
        )
        self.register_outputs({"cluster_name": self.cluster.name, "endpoint": self.cluster.endpoint})
