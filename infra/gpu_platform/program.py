"""The Pulumi program: one `build(spec)` for `pulumi up` and for the offline engine alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
from pulumi.runtime import config as rc

from gpu_platform.aws.autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from gpu_platform.aws.cluster import EksCluster, EksClusterArgs
from gpu_platform.aws.efa_security import EfaSecurityGroup, EfaSecurityGroupArgs
from gpu_platform.aws.endpoints import VpcEndpoints, VpcEndpointsArgs
from gpu_platform.aws.fsx import FsxLustre, FsxLustreArgs
from gpu_platform.aws.identity import ClusterAccess, ClusterAccessArgs, WorkloadIdentity, WorkloadIdentityArgs
from gpu_platform.aws.load_balancer import LoadBalancerController, LoadBalancerControllerArgs
from gpu_platform.aws.network import Network, NetworkArgs
from gpu_platform.aws.nodepools import GpuNodePool, GpuNodePoolArgs, node_group_plan
from gpu_platform.aws.storage import POD_IDENTITY_AGENT_ADDON, EbsCsiDriver, EbsCsiDriverArgs
from gpu_platform.catalog import load_catalog
from gpu_platform.efa import efa_pools
from gpu_platform.errors import ConfigError
from gpu_platform.k8s.nodes import BareMetalPool, BareMetalPoolArgs
from gpu_platform.k8s.platform import GpuPlatform, GpuPlatformArgs
from gpu_platform.k8s.provider import eks_provider, existing_cluster_provider
from gpu_platform.k8s.tenant_network import s3_peers
from gpu_platform.plan_ids import s3_prefix_list_name
from gpu_platform.pools import fallback_of, node_groups
from gpu_platform.provenance import NS, pool_key, source, start_recording, tenant_key
from gpu_platform.spec.loader import spec_from_config
from gpu_platform.spec.models import PlatformSpec


@dataclass(frozen=True)
class Built:
    """Handles the program exports."""

    provider: k8s.Provider
    cluster_name: pulumi.Input[str]
    kubeconfig: pulumi.Input[str] | None
    tags: dict[str, str] | None = None
    s3_peers: pulumi.Output[list[dict[str, Any]]] | None = None  # EKS: the tenants' `allow-s3` peers


def stack_tags(spec: PlatformSpec) -> dict[str, str]:
    """Tags on every AWS resource of the stack."""
    return {**spec.tags, "gpu-platform:environment": spec.environment, "gpu-platform:stack": spec.stack, "managed-by": "pulumi"}


def build_aws(spec: PlatformSpec) -> Built:
    """Network, EKS cluster, GPU node pools, the EBS (and opt-in FSx for Lustre) CSI drivers and the autoscaler of an EKS stack."""
    catalog = load_catalog()
    tags = stack_tags(spec)
    assert spec.region is not None
    with source(NS + "network"):
        network = Network("network", NetworkArgs(spec=spec.network, cluster_name=spec.cluster.name, tags=tags))
        if spec.network.mode == "new":
            VpcEndpoints(
                "endpoints",
                VpcEndpointsArgs(
                    region=spec.region,
                    vpc_id=network.vpc_id,
                    vpc_cidr=spec.network.cidr,
                    private_subnets=network.private_subnets,
                    private_route_tables=network.private_route_tables,
                    tags=tags,
                ),
            )
    with source(NS + "cluster"):
        cluster = EksCluster(
            "cluster",
            EksClusterArgs(
                spec=spec.cluster, lock=spec.lock, region=spec.region, subnets_by_zone=network.private_subnets, tags=tags, vpc_id=network.vpc_id
            ),
        )
    with source(NS + "cluster"):
        ClusterAccess("access", ClusterAccessArgs(spec=spec, cluster_name=cluster.cluster.name, tags=tags))
    with source(NS + "nodePools"):
        efa_sg = (
            EfaSecurityGroup("efa", EfaSecurityGroupArgs(vpc_id=network.vpc_id, cluster_name=spec.cluster.name, tags=tags))
            if efa_pools(spec)
            else None
        )
    for pool in node_groups(spec, catalog):
        with source(pool_key(spec, fallback_of(pool) or pool.name)):
            plan = node_group_plan(pool, catalog, spec.cluster.name, spec.network.zones(), spec.environment, spec.stack, spec.tags, spec.region)
            GpuNodePool(
                f"pool-{pool.name}",
                GpuNodePoolArgs(
                    pool=pool,
                    catalog=catalog,
                    lock=spec.lock,
                    cluster_name=cluster.cluster.name,
                    cluster_security_group_id=cluster.security_group_id,
                    node_role_arn=cluster.node_role.arn,
                    subnets_by_zone=network.private_subnets,
                    plan=plan,
                    efa_security_group_id=efa_sg.security_group_id if efa_sg is not None and pool.efa else None,
                    cluster_endpoint=cluster.cluster.endpoint,
                    cluster_ca_data=cluster.cluster.certificate_authority.data,
                ),
            )
    with source(NS + "storage"):
        agent = cluster.addons.get(POD_IDENTITY_AGENT_ADDON)
        EbsCsiDriver(
            "ebs-csi",
            EbsCsiDriverArgs(lock=spec.lock, cluster_name=cluster.cluster.name, tags=tags, after=(agent,) if agent is not None else ()),
        )
    with source(NS + "cluster"):
        provider = eks_provider("k8s", cluster.kubeconfig, pulumi.ResourceOptions(depends_on=[cluster]))
    if spec.storage.fsx_lustre.enabled:
        with source(NS + "storage.fsxLustre"):
            FsxLustre(
                "fsx-lustre",
                FsxLustreArgs(
                    spec=spec,
                    cluster_name=cluster.cluster.name,
                    vpc_id=network.vpc_id,
                    subnets_by_zone=network.private_subnets,
                    cluster_security_group_id=cluster.security_group_id,
                    provider=provider,
                    tags=tags,
                    after=(agent,) if agent is not None else (),
                ),
            )
    if spec.cluster.autoscaler:
        with source(NS + "cluster.autoscaler"):
            ClusterAutoscaler("autoscaler", ClusterAutoscalerArgs(spec=spec, cluster_name=cluster.cluster.name, provider=provider, tags=tags))
    if spec.cluster.load_balancer_controller:
        with source(NS + "cluster.loadBalancerController"):
            LoadBalancerController(
                "lb-controller",
                LoadBalancerControllerArgs(
                    spec=spec,
                    cluster_name=cluster.cluster.name,
                    vpc_id=network.vpc_id,
                    provider=provider,
                    tags=tags,
                    after=(agent,) if agent is not None else (),
                ),
            )
    with source(NS + "network"):
        # S3's managed prefix list, read when the program runs: the CIDRs the gateway endpoint routes, which
        # the tenants' `allow-s3` NetworkPolicies name (EC2 DescribePrefixLists by name; any VPC, new or existing).
        s3 = aws.ec2.get_prefix_list_output(name=s3_prefix_list_name(spec.region)).cidr_blocks.apply(s3_peers)
    return Built(provider=provider, cluster_name=cluster.cluster.name, kubeconfig=pulumi.Output.secret(cluster.kubeconfig), tags=tags, s3_peers=s3)


def build_existing(spec: PlatformSpec) -> Built:
    """The Kubernetes provider and bare-metal pool labels/taints of an on-prem stack."""
    catalog = load_catalog()
    with source(NS + "cluster"):
        provider = existing_cluster_provider("k8s", spec.cluster)
    for pool in spec.node_pools:
        with source(pool_key(spec, pool.name)):
            BareMetalPool(f"pool-{pool.name}", BareMetalPoolArgs(pool=pool, catalog=catalog, provider=provider, inventory=spec.cluster.inventory))
    return Built(provider=provider, cluster_name=spec.cluster.name, kubeconfig=None)


def build(spec: PlatformSpec) -> Built:
    """Every resource of the stack, from the validated spec."""
    start_recording()
    built = build_aws(spec) if spec.is_eks else build_existing(spec)
    with source(NS + "cluster"):  # the platform component itself; every part inside names its own key
        platform = GpuPlatform("platform", GpuPlatformArgs(spec=spec, catalog=load_catalog(), provider=built.provider, s3_peers=built.s3_peers))
    for t in spec.tenants:
        if t.workload_identity is not None:  # EKS only (the spec refuses it on an existing cluster)
            with source(tenant_key(spec, t.name) + ".workloadIdentity"):
                WorkloadIdentity(
                    f"identity-{t.name}",
                    WorkloadIdentityArgs(
                        spec=spec,
                        tenant=t,
                        cluster_name=built.cluster_name,
                        provider=built.provider,
                        namespace=platform.tenant_namespaces[t.name],
                        tags=built.tags or {},
                    ),
                )
    pulumi.export("clusterName", built.cluster_name)
    pulumi.export("environment", spec.environment)
    pulumi.export("nodePools", [p.name for p in spec.node_pools])
    if built.kubeconfig is not None:
        pulumi.export("kubeconfig", built.kubeconfig)
    return built


def runtime_config() -> dict[str, Any]:
    """All config the Pulumi engine hands the program (stack file, env, or mocks)."""
    merged: dict[str, Any] = dict(rc.get_config_env())
    merged.update(rc.CONFIG.get())
    return merged


def main(config: Mapping[str, Any] | None = None, spec: PlatformSpec | None = None) -> Built:
    """Entry point of `pulumi up`: parse the stack config once, then build; bad config is one clean error.

    `spec`: the config already validated at the edge (the offline engine's commands do that first).
    """
    if spec is not None:
        return build(spec)
    stack = pulumi.get_stack()
    try:
        spec = spec_from_config(config if config is not None else runtime_config(), stack=stack, file=f"stacks/Pulumi.{stack}.yaml")
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None
    return build(spec)
