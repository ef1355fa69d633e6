"""The Pulumi program: one `build(spec)` for `pulumi up` and for the offline engine alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
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
from gpu_platform.federation import WORKER_COMPONENT, is_manager, worker_spec
from gpu_platform.federation import prefix as worker_prefix
from gpu_platform.k8s.multikueue import MultiKueueManager, MultiKueueManagerArgs, MultiKueueWorker, MultiKueueWorkerArgs
from gpu_platform.k8s.nodes import BareMetalPool, BareMetalPoolArgs
from gpu_platform.k8s.platform import GpuPlatform, GpuPlatformArgs
from gpu_platform.k8s.provider import eks_provider, existing_cluster_provider
from gpu_platform.k8s.tenant_network import s3_peers
from gpu_platform.plan_ids import s3_prefix_list_name
from gpu_platform.pools import fallback_of, node_groups
from gpu_platform.provenance import NS, key, pool_key, source, start_recording, tenant_key
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
    endpoint: pulumi.Input[str] | None = None  # EKS: the API endpoint and CA data (a MultiKueue worker's kubeconfig)
    ca_data: pulumi.Input[str] | None = None
    egress_ips: tuple[pulumi.Output[str], ...] = ()  # EKS, new VPC: the NAT gateways' public addresses


# The provider packages `build` registers resources from: Kubernetes always, AWS where a cluster is EKS.
K8S_MODULES = (
    "pulumi_kubernetes.apiextensions",
    "pulumi_kubernetes.core.v1",
    "pulumi_kubernetes.helm.v3",
    "pulumi_kubernetes.meta.v1",
    "pulumi_kubernetes.scheduling.v1",
)
AWS_MODULES = ("pulumi_aws.autoscaling", "pulumi_aws.ec2", "pulumi_aws.eks", "pulumi_aws.iam", "pulumi_aws.kms", "pulumi_aws.vpc")


def provider_modules(spec: PlatformSpec) -> tuple[str, ...]:
    """The provider modules `build(spec)` executes: the Kubernetes ones, and the AWS ones when it builds an EKS cluster.

    Both SDKs execute a module on its first attribute access (pulumi/_utils.py `lazy_import`), so a
    program loads them while it registers its first resources. The offline engine loads them before it
    freezes the heap that lives for the whole process (engine.run_program); tests hold every stack to
    loading no provider module after that.
    """
    eks = spec.is_eks or any(w.cluster.provider == "eks" for w in spec.workers)
    return K8S_MODULES + AWS_MODULES if eks else K8S_MODULES


def stack_tags(spec: PlatformSpec) -> dict[str, str]:
    """Tags on every AWS resource of the stack."""
    return {**spec.tags, "gpu-platform:environment": spec.environment, "gpu-platform:stack": spec.stack, "managed-by": "pulumi"}


def build_aws(spec: PlatformSpec, prefix: str = "", parent: pulumi.Resource | None = None, admit_ips: tuple[pulumi.Input[str], ...] = ()) -> Built:
    """Network, EKS cluster, GPU node pools, the EBS (and opt-in FSx for Lustre) CSI drivers and the autoscaler of an EKS stack.

    A MultiKueue worker (build_workers) is built the same way under its own component (`parent`, which carries the
    worker region's AWS provider), its resources named `<prefix><name>`; `admit_ips` join its API endpoint's CIDRs.
    """
    catalog = load_catalog()
    under = pulumi.ResourceOptions(parent=parent) if parent is not None else None
    tags = stack_tags(spec)
    assert spec.region is not None
    with source(key(spec, "network")):
        network = Network(f"{prefix}network", NetworkArgs(spec=spec.network, cluster_name=spec.cluster.name, tags=tags), under)
        if spec.network.mode == "new":
            VpcEndpoints(
                f"{prefix}endpoints",
                VpcEndpointsArgs(
                    region=spec.region,
                    vpc_id=network.vpc_id,
                    vpc_cidr=spec.network.cidr,
                    private_subnets=network.private_subnets,
                    private_route_tables=network.private_route_tables,
                    tags=tags,
                ),
                under,
            )
    with source(key(spec, "cluster")):
        cluster = EksCluster(
            f"{prefix}cluster",
            EksClusterArgs(
                spec=spec.cluster,
                lock=spec.lock,
                region=spec.region,
                subnets_by_zone=network.private_subnets,
                tags=tags,
                vpc_id=network.vpc_id,
                admit_ips=admit_ips,
            ),
            under,
        )
    with source(key(spec, "cluster")):
        ClusterAccess(f"{prefix}access", ClusterAccessArgs(spec=spec, cluster_name=cluster.cluster.name, tags=tags), under)
    with source(key(spec, "nodePools")):
        efa_sg = (
            EfaSecurityGroup(f"{prefix}efa", EfaSecurityGroupArgs(vpc_id=network.vpc_id, cluster_name=spec.cluster.name, tags=tags), under)
            if efa_pools(spec)
            else None
        )
    for pool in node_groups(spec, catalog):
        with source(pool_key(spec, fallback_of(pool) or pool.name)):
            plan = node_group_plan(pool, catalog, spec.cluster.name, spec.network.zones(), spec.environment, spec.stack, spec.tags, spec.region)
            GpuNodePool(
                f"{prefix}pool-{pool.name}",
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
                under,
            )
    with source(NS + "storage"):
        agent = cluster.addons.get(POD_IDENTITY_AGENT_ADDON)
        EbsCsiDriver(
            f"{prefix}ebs-csi",
            EbsCsiDriverArgs(lock=spec.lock, cluster_name=cluster.cluster.name, tags=tags, after=(agent,) if agent is not None else ()),
            under,
        )
    with source(key(spec, "cluster")):
        provider = eks_provider(f"{prefix}k8s", cluster.kubeconfig, pulumi.ResourceOptions(parent=parent, depends_on=[cluster]))
    if spec.storage.fsx_lustre.enabled:
        with source(NS + "storage.fsxLustre"):
            FsxLustre(
                f"{prefix}fsx-lustre",
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
                under,
            )
    if spec.cluster.autoscaler:
        with source(key(spec, "cluster.autoscaler")):
            ClusterAutoscaler(
                f"{prefix}autoscaler", ClusterAutoscalerArgs(spec=spec, cluster_name=cluster.cluster.name, provider=provider, tags=tags), under
            )
    if spec.cluster.load_balancer_controller:
        with source(key(spec, "cluster.loadBalancerController")):
            LoadBalancerController(
                f"{prefix}lb-controller",
                LoadBalancerControllerArgs(
                    spec=spec,
                    cluster_name=cluster.cluster.name,
                    vpc_id=network.vpc_id,
                    provider=provider,
                    tags=tags,
                    after=(agent,) if agent is not None else (),
                ),
                under,
            )
    with source(key(spec, "network")):
        # S3's managed prefix list, read when the program runs: the CIDRs the gateway endpoint routes, which
        # the tenants' `allow-s3` NetworkPolicies name (EC2 DescribePrefixLists by name; any VPC, new or existing).
        read = pulumi.InvokeOptions(parent=parent) if parent is not None else None
        s3 = aws.ec2.get_prefix_list_output(name=s3_prefix_list_name(spec.region), opts=read).cidr_blocks.apply(s3_peers)
    return Built(
        provider=provider,
        cluster_name=cluster.cluster.name,
        kubeconfig=pulumi.Output.secret(cluster.kubeconfig),
        tags=tags,
        s3_peers=s3,
        endpoint=cluster.cluster.endpoint,
        ca_data=cluster.cluster.certificate_authority.data,
        egress_ips=tuple(network.egress_ips),
    )


def build_existing(spec: PlatformSpec, prefix: str = "", parent: pulumi.Resource | None = None) -> Built:
    """The Kubernetes provider and bare-metal pool labels/taints of an on-prem stack (or of an existing MultiKueue worker)."""
    catalog = load_catalog()
    under = pulumi.ResourceOptions(parent=parent) if parent is not None else None
    with source(key(spec, "cluster")):
        provider = existing_cluster_provider(f"{prefix}k8s", spec.cluster, under)
    for pool in spec.node_pools:
        with source(pool_key(spec, pool.name)):
            pool_args = BareMetalPoolArgs(pool=pool, catalog=catalog, provider=provider, inventory=spec.cluster.inventory)
            BareMetalPool(f"{prefix}pool-{pool.name}", pool_args, under)
    return Built(provider=provider, cluster_name=spec.cluster.name, kubeconfig=None)


class WorkerScope(pulumi.ComponentResource):
    """Parent of one MultiKueue worker's resources; carries the worker region's AWS provider down to them."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions):
        super().__init__(WORKER_COMPONENT, name, None, opts)
        self.register_outputs({})


def build_platform(spec: PlatformSpec, built: Built, prefix: str = "", parent: pulumi.Resource | None = None) -> GpuPlatform:
    """The Kubernetes layer of one cluster, and the tenants' workload identities on it."""
    under = pulumi.ResourceOptions(parent=parent) if parent is not None else None
    with source(key(spec, "cluster")):  # the platform component itself; every part inside names its own key
        platform_args = GpuPlatformArgs(spec=spec, catalog=load_catalog(), provider=built.provider, s3_peers=built.s3_peers, prefix=prefix)
        platform = GpuPlatform(f"{prefix}platform", platform_args, under)
    for t in spec.tenants:
        if t.workload_identity is not None:  # EKS only (the spec refuses it on an existing cluster)
            with source(tenant_key(spec, t.name) + ".workloadIdentity"):
                WorkloadIdentity(
                    f"{prefix}identity-{t.name}",
                    WorkloadIdentityArgs(
                        spec=spec,
                        tenant=t,
                        cluster_name=built.cluster_name,
                        provider=built.provider,
                        namespace=platform.tenant_namespaces[t.name],
                        tags=built.tags or {},
                    ),
                    under,
                )
    return platform


def build_workers(spec: PlatformSpec, manager: Built, platform: GpuPlatform) -> dict[str, Built]:
    """Each MultiKueue worker as a cluster of its own, then the manager's federation of them (gpu_platform.federation).

    A worker is built exactly as a single-cluster stack is (network, EKS, pools, platform layer), under a
    WorkerScope whose AWS provider is the worker's region; its API endpoint also admits the manager's NAT
    addresses, the path the manager's Kueue reaches it by.
    """
    kubeconfigs: dict[str, pulumi.Output[str]] = {}
    workers: dict[str, Built] = {}
    for i, w in enumerate(spec.workers):
        ws, pre = worker_spec(spec, i), worker_prefix(w.name)
        if ws.is_eks:
            with source(f"{NS}workers[{i}].region"):
                region = aws.Provider(f"{pre}aws", region=w.region)
                scope = WorkerScope(f"{pre}worker", pulumi.ResourceOptions(providers={"aws": region}))
            built = build_aws(ws, pre, scope, admit_ips=manager.egress_ips)
        else:  # an existing cluster: its API server and CA as the stack states them (the spec requires both)
            with source(f"{NS}workers[{i}]"):
                scope = WorkerScope(f"{pre}worker", pulumi.ResourceOptions())
            built = replace(build_existing(ws, pre, scope), endpoint=w.endpoint, ca_data=w.ca_data)
        worker_platform = build_platform(ws, built, pre, scope)
        assert built.endpoint is not None and built.ca_data is not None and worker_platform.kueue is not None
        with source(f"{NS}workers[{i}]"):
            access = MultiKueueWorker(
                f"{pre}multikueue",
                w.name,
                MultiKueueWorkerArgs(
                    spec=ws, provider=built.provider, endpoint=built.endpoint, ca_data=built.ca_data, after=(worker_platform.kueue,)
                ),
                pulumi.ResourceOptions(parent=scope),
            )
        kubeconfigs[w.name] = access.kubeconfig
        workers[w.name] = built
    assert platform.kueue is not None  # the spec requires Kueue with workers
    with source(NS + "workers"):
        MultiKueueManager("multikueue", MultiKueueManagerArgs(provider=manager.provider, kubeconfigs=kubeconfigs, after=(platform.kueue,)))
    return workers


def build(spec: PlatformSpec) -> Built:
    """Every resource of the stack, from the validated spec."""
    start_recording()
    built = build_aws(spec) if spec.is_eks else build_existing(spec)
    platform = build_platform(spec, built)
    workers = build_workers(spec, built, platform) if is_manager(spec) else {}
    pulumi.export("clusterName", built.cluster_name)
    pulumi.export("environment", spec.environment)
    pulumi.export("nodePools", [p.name for p in spec.node_pools])
    if workers:
        pulumi.export("workerClusters", {name: w.cluster_name for name, w in workers.items()})
        # What an existing worker's firewall must let reach its API server: the manager's NAT addresses.
        pulumi.export("managerEgressIps", list(built.egress_ips))
        pulumi.export("workerNodePools", {w.name: [p.name for p in w.node_pools] for w in spec.workers})
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
