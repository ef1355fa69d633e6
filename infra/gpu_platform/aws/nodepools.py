"""Tiered GPU node pools on EKS: a launch template and a managed node group per pool.

The pure functions here decide everything (capacity type, IMDS, volumes, EFA, reservations,
labels, taints, autoscaler tags); the component only turns those decisions into resources.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from gpu_platform import efa
from gpu_platform.aws import golden_image
from gpu_platform.aws.node_repair import node_repair_config
from gpu_platform.catalog import Catalog
from gpu_platform.pools import DRA_GPU_RESOURCE, GPU_RESOURCE, gpu_of, gpus_per_node, node_counts, node_labels, node_taints, resources_per_gpu
from gpu_platform.spec.models import NodePool
from gpu_platform.versions import Lockfile

CAPACITY_TYPE = {"spot": "SPOT", "on-demand": "ON_DEMAND", "reserved": "ON_DEMAND", "capacity-block": "CAPACITY_BLOCK"}
TAINT_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
ROOT_DEVICE = "/dev/xvda"  # AL2023 EKS AMIs boot from xvda
# Capacity that exists in a fixed amount: a surge instance for a rolling update cannot be had.
FIXED_CAPACITY = ("reserved", "capacity-block")
# cluster-autoscaler's AWS GPU label (cloudprovider/aws GPULabel): a node carrying it counts as
# unready until it offers nvidia.com/gpu, so the autoscaler waits instead of adding more nodes.
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"


@dataclass(frozen=True)
class LaunchTemplatePlan:
    """What a pool's launch template must say, as plain data."""

    root_volume_gib: int
    efa_interfaces: int
    placement_group: bool
    interfaces: tuple[efa.Interface, ...] = ()
    user_data: str | None = None
    capacity_reservation_id: str | None = None
    capacity_reservation_group_arn: str | None = None
    capacity_block: bool = False
    instance_type: str | None = None  # set only where EKS wants the type in the template (Capacity Blocks)
    placement_group_name: str | None = None  # an existing cluster placement group (the reservation's)
    image_id: str | None = None  # a golden image (nodePools[].image): the template boots it and runs its EKS bootstrap
    root_device: str = ROOT_DEVICE


@dataclass(frozen=True)
class NodeGroupPlan:
    """What a pool's managed node group must say, as plain data."""

    node_group_name: str
    capacity_type: str
    instance_types: tuple[str, ...]
    min_size: int
    desired_size: int
    max_size: int
    max_unavailable: int
    update_strategy: str
    zones: tuple[str, ...]
    labels: dict[str, str]
    taints: list[dict[str, str]]
    tags: dict[str, str] = field(default_factory=dict)
    template_tags: dict[str, str] = field(default_factory=dict)
    repair: dict[str, Any] = field(default_factory=dict)
    """`nodeRepairConfig` (gpu_platform.aws.node_repair)."""
    custom_ami: bool = False
    """A golden image: EKS refuses `amiType`, `version` and `releaseVersion` beside a custom AMI."""


def capacity_type(pool: NodePool) -> str:
    """EKS capacity type: reserved capacity is ON_DEMAND targeted at an ODCR through the launch template."""
    return CAPACITY_TYPE[pool.capacity]


def launch_template_plan(pool: NodePool, catalog: Catalog) -> LaunchTemplatePlan:
    """EFA interfaces, hugepages and a cluster placement group for EFA pools; the reservation target if any."""
    instance = catalog.instance(pool.instance_types[0])
    r = pool.reservation
    existing_pg = r.placement_group if r and pool.efa else None
    block = pool.capacity == "capacity-block"
    return LaunchTemplatePlan(
        root_volume_gib=pool.root_volume_gib,
        efa_interfaces=efa.efa_devices(instance) if pool.efa else 0,
        # A Capacity Block is delivered already co-located (EC2 UltraCluster); only ODCR and
        # on-demand EFA pools need a cluster placement group, new or the reservation's own.
        placement_group=pool.efa and existing_pg is None and not block,
        interfaces=tuple(efa.interface_layout(instance)) if pool.efa else (),
        user_data=efa.hugepages_user_data() if pool.efa else None,
        capacity_reservation_id=r.id if r else None,
        capacity_reservation_group_arn=r.resource_group_arn if r else None,
        capacity_block=block,
        # EKS user guide, "Create a managed node group with Capacity Blocks for ML": the instance
        # type goes in the launch template, and the node group then names none.
        instance_type=pool.instance_types[0] if block else None,
        placement_group_name=existing_pg,
        image_id=pool.image.ami if pool.image else None,
        root_device=golden_image.ROOT_DEVICE if pool.image else ROOT_DEVICE,
    )


def cost_tags(environment: str, stack: str, pool: NodePool, extra: dict[str, str]) -> dict[str, str]:
    """Tags that let finance split the bill by environment, pool and capacity tier (and a Capacity Block's dates, which the gate reads)."""
    tags = {
        **extra,
        "gpu-platform:environment": environment,
        "gpu-platform:stack": stack,
        "gpu-platform:pool": pool.name,
        "gpu-platform:tier": pool.capacity,
        "gpu-platform:workload-class": pool.workload_class,
    }
    r = pool.reservation
    if pool.capacity == "capacity-block" and r is not None and r.start is not None and r.end is not None:
        tags |= {BLOCK_START_TAG: r.start.isoformat(), BLOCK_END_TAG: r.end.isoformat()}
    return tags


AUTOSCALER = "k8s.io/cluster-autoscaler"
# A Capacity Block's dates on its node group, for the gate's `capacity-block-in-dates`.
BLOCK_START_TAG = "gpu-platform:capacity-block-start"
BLOCK_END_TAG = "gpu-platform:capacity-block-end"


def autoscaler_tags(cluster_name: str) -> dict[str, str]:
    """Auto-discovery tags of a node group the autoscaler may scale."""
    return {f"{AUTOSCALER}/enabled": "true", f"{AUTOSCALER}/{cluster_name}": "owned"}


def accelerator_label(pool: NodePool, catalog: Catalog) -> dict[str, str]:
    """`k8s.amazonaws.com/accelerator` for pools whose nodes offer `nvidia.com/gpu`, else nothing.

    cluster-autoscaler (processors/customresources GpuCustomResourcesProcessor) treats a node with
    this label and no `nvidia.com/gpu` allocatable as still booting. That stops it adding a second
    node while the first one's GPUs come up; but a MIG or renamed time-slicing/MPS pool never offers
    `nvidia.com/gpu`, so there the label would keep every node "unready" forever.
    """
    if GPU_RESOURCE not in resources_per_gpu(pool, catalog):
        return {}
    return {ACCELERATOR_LABEL: f"nvidia-{gpu_of(pool, catalog).name.lower()}"}


def eks_node_labels(pool: NodePool, catalog: Catalog) -> dict[str, str]:
    """Labels of an EKS pool's nodes: the platform's own plus the autoscaler's GPU label."""
    return {**node_labels(pool, catalog), **accelerator_label(pool, catalog)}


def update_strategy(pool: NodePool) -> str:
    """EKS node group update strategy: MINIMAL where capacity is fixed, DEFAULT elsewhere.

    botocore eks NodegroupUpdateConfig.updateStrategy: DEFAULT launches the new instances before
    terminating the old ones; a fully used reservation or Capacity Block has no spare instance for
    that, so the update stalls. MINIMAL terminates first, then launches into the freed capacity.
    """
    return "MINIMAL" if pool.capacity in FIXED_CAPACITY else "DEFAULT"


def node_template_tags(pool: NodePool, catalog: Catalog) -> dict[str, str]:
    """What a node of the pool will offer, for the autoscaler to scale it up from zero.

    The autoscaler reads these from the Auto Scaling group, which is why they are set there (EKS
    does not copy node group tags to it). Resources are the pool's own: `nvidia.com/gpu.shared` for
    a time-sliced pool and `nvidia.com/mig-<profile>` for a MIG pool, so pending pods asking for a
    slice trigger a scale-up too.
    """
    tags = {f"{AUTOSCALER}/node-template/label/{k}": v for k, v in eks_node_labels(pool, catalog).items()}
    for taint in node_taints(pool):
        tags[f"{AUTOSCALER}/node-template/taint/{taint.key}"] = f"{taint.value}:{taint.effect}"
    per_node = gpus_per_node(pool, catalog)
    offered = resources_per_gpu(pool, catalog)
    if GPU_RESOURCE not in offered:
        # aws_manager.go buildNodeFromTemplate sets nvidia.com/gpu to the instance type's GPU count
        # before reading these tags; a MIG or renamed shared pool must say 0, or a pending pod asking
        # for whole GPUs scales this group up and still never fits.
        tags[f"{AUTOSCALER}/node-template/resources/{GPU_RESOURCE}"] = "0"
    for resource, per_gpu in offered.items():
        if resource == DRA_GPU_RESOURCE:
            continue  # claimed devices, not an extended resource the node offers: a DRA pool has a fixed size (docs/dra.md)
        tags[f"{AUTOSCALER}/node-template/resources/{resource}"] = str(per_gpu * per_node)
    # An EFA pool scaled to zero must still be known to offer EFA devices and hugepages, or a pending
    # training pod asking for them never triggers a scale-up.
    for resource, quantity in efa.node_resources(pool, catalog).items():
        tags[f"{AUTOSCALER}/node-template/resources/{resource}"] = quantity
    return tags


def node_group_plan(
    pool: NodePool,
    catalog: Catalog,
    cluster_name: str,
    zones: tuple[str, ...],
    environment: str,
    stack: str,
    extra_tags: dict[str, str],
    region: str | None = None,
) -> NodeGroupPlan:
    """Everything the managed node group of one pool declares."""
    lo, want, hi = node_counts(pool)
    return NodeGroupPlan(
        node_group_name=f"{cluster_name}-{pool.name}",
        capacity_type=capacity_type(pool),
        # A Capacity Block's type lives in the launch template; naming it here too fails the deploy.
        instance_types=() if pool.capacity == "capacity-block" else pool.instance_types,
        min_size=lo,
        desired_size=want,
        max_size=hi,
        max_unavailable=pool.max_unavailable,
        update_strategy=update_strategy(pool),
        zones=pool.availability_zones or zones,
        labels=eks_node_labels(pool, catalog),
        taints=[{"key": t.key, "value": t.value, "effect": TAINT_EFFECT[t.effect]} for t in node_taints(pool)],
        tags={**cost_tags(environment, stack, pool, extra_tags), **autoscaler_tags(cluster_name), **image_tags(pool, region)},
        template_tags=node_template_tags(pool, catalog),
        repair=node_repair_config(hi),
        custom_ami=pool.image is not None,
    )


def image_tags(pool: NodePool, region: str | None) -> dict[str, str]:
    """The image manifest a golden-image pool's AMI is judged by, and the region it must be built in.

    Both are for the gate's `golden-image-matches-lockfile`: an AMI exists in one region, and a stack on an existing
    VPC creates no subnet that would show the stack's.
    """
    if pool.image is None:
        return {}
    return {golden_image.MANIFEST_TAG: pool.image.manifest, **({golden_image.REGION_TAG: region} if region else {})}


@dataclass(frozen=True)
class GpuNodePoolArgs:
    """Inputs of one GpuNodePool component."""

    pool: NodePool
    catalog: Catalog
    lock: Lockfile
    cluster_name: pulumi.Input[str]
    cluster_security_group_id: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnets_by_zone: dict[str, pulumi.Output[str]]
    plan: NodeGroupPlan
    efa_security_group_id: pulumi.Input[str] | None = None  # the stack's EFA group (aws.efa_security), on EFA pools
    cluster_endpoint: pulumi.Input[str] | None = None  # for a golden image's bootstrap
    cluster_ca_data: pulumi.Input[str] | None = None


class GpuNodePool(pulumi.ComponentResource):
    """Launch template (IMDSv2, encrypted gp3, EFA, reservation) and EKS managed node group of one pool."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:GpuNodePool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool, plan = args.pool, args.plan
        lt = launch_template_plan(pool, args.catalog)
        placement = None
        if lt.placement_group:
            pg = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=plan.tags, opts=child)
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=pg.name)
        elif lt.placement_group_name:
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=lt.placement_group_name)
        interfaces = None
        if lt.interfaces:
            # The layout (ENA primary, EFA-only where the type allows) is decided in gpu_platform.efa.
            # Every interface, the ENA primary included, carries the EFA group too: its self-referencing
            # rules are what admit EFA traffic and the pods' bootstrap TCP between the pool's nodes.
            groups = [args.cluster_security_group_id, *([args.efa_security_group_id] if args.efa_security_group_id is not None else [])]
            interfaces = [
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                    device_index=i.device_index,
                    network_card_index=i.network_card_index,
                    interface_type=i.interface_type,
                    delete_on_termination="true",
                    security_groups=groups,
                )
                for i in lt.interfaces
            ]
        reservation = None
        if lt.capacity_reservation_id or lt.capacity_reservation_group_arn:
            reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=lt.capacity_reservation_id,
                    capacity_reservation_resource_group_arn=lt.capacity_reservation_group_arn,
                )
            )
        template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            description=f"GPU pool {pool.name} ({gpu_of(pool, args.catalog).name}, {pool.capacity})",
            update_default_version=True,
            instance_type=lt.instance_type,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=1,
                instance_metadata_tags="disabled",
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=lt.root_device,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=lt.root_volume_gib,
                        volume_type="gp3",
                        iops=6000,
                        throughput=500,
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            network_interfaces=interfaces,
            image_id=lt.image_id,
            user_data=_user_data(pool, plan, lt, args),
            vpc_security_group_ids=None if interfaces else [args.cluster_security_group_id],
            placement=placement,
            capacity_reservation_specification=reservation,
            instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block") if lt.capacity_block else None,
            tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=plan.tags) for kind in ("instance", "volume")],
            tags=plan.tags,
            opts=child,
        )
        self.node_group = aws.eks.NodeGroup(
            f"{name}-ng",
            cluster_name=args.cluster_name,
            node_group_name=plan.node_group_name,
            node_role_arn=args.node_role_arn,
            subnet_ids=[args.subnets_by_zone[z] for z in plan.zones],
            capacity_type=plan.capacity_type,
            ami_type=None if plan.custom_ami else args.lock.eks.ami_type,
            release_version=None if plan.custom_ami else args.lock.eks.ami_release_version,
            version=None if plan.custom_ami else args.lock.kubernetes.version,
            instance_types=list(plan.instance_types) or None,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=plan.min_size, desired_size=plan.desired_size, max_size=plan.max_size),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=plan.max_unavailable, update_strategy=plan.update_strategy),
            node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(
                **{k: v for k, v in plan.repair.items() if k != "node_repair_config_overrides"},
                node_repair_config_overrides=[
                    aws.eks.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs(**o) for o in plan.repair["node_repair_config_overrides"]
                ],
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str)),
            labels=plan.labels,
            taints=[aws.eks.NodeGroupTaintArgs(**t) for t in plan.taints],
            tags=plan.tags,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["scalingConfig.desiredSize"]),
        )
        asg_name = self.node_group.resources.apply(_first_asg_name)
        for key, value in plan.template_tags.items():
            aws.autoscaling.Tag(
                f"{name}-asg-{_slug(key.removeprefix(AUTOSCALER + '/node-template/'))}",
                autoscaling_group_name=asg_name,
                tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                opts=child,
            )
        self.register_outputs({"node_group_name": self.node_group.node_group_name})


def _user_data(pool: NodePool, plan: NodeGroupPlan, lt: LaunchTemplatePlan, args: GpuNodePoolArgs) -> pulumi.Input[str] | None:
    """Base64 user data: the EFA hugepages part, and on a golden image its EKS bootstrap after it."""
    if lt.image_id is None:
        return base64.b64encode(lt.user_data.encode()).decode() if lt.user_data else None
    taints = node_taints(pool)
    return pulumi.Output.all(args.cluster_name, args.cluster_endpoint, args.cluster_ca_data).apply(
        lambda v: base64.b64encode(golden_image.user_data(str(v[0]), str(v[1]), str(v[2]), plan.labels, taints, pool.efa).encode()).decode()
    )


def _first_asg_name(groups: Sequence[aws.eks.outputs.NodeGroupResource]) -> str:
    """Name of the Auto Scaling group EKS created for a managed node group."""
    asgs = groups[0].autoscaling_groups or []
    return str(asgs[0].name)


def _slug(text: str) -> str:
    """A resource-name-safe form of a tag key."""
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")
