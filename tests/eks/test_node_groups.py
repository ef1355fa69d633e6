"""GPU node groups as EKS, EC2 and cluster-autoscaler treat them: fixed capacity, Capacity Blocks, zones, GPU label."""

from __future__ import annotations

from functools import cache
from typing import Any

import botocore.session
import pytest

from gpu_platform.aws.nodepools import ACCELERATOR_LABEL, launch_template_plan, node_group_plan, update_strategy
from gpu_platform.behaviour.apimachinery import parse_quantity
from gpu_platform.behaviour.autoscaler import template_node
from gpu_platform.catalog import load_catalog
from gpu_platform.engine import Plan, PlannedResource
from gpu_platform.pools import GPU_RESOURCE
from gpu_platform.spec.models import NodePool
from tests.conftest import plan_for, spec_for

EKS_STACKS = ("dev", "staging", "prod")
# cluster-autoscaler utils/gpu/gpu.go GPUVendorResourceNames (the only resources it counts as GPUs).
CA_GPU_RESOURCES = ("nvidia.com/gpu", "habana.ai/gaudi", "gpu.intel.com/xe", "amd.com/gpu", "microsoft.com/directx")


@cache
def _eks_shape(name: str) -> Any:
    return botocore.session.get_session().get_service_model("eks").shape_for(name)


def _pool_ng(plan: Plan, pool: str) -> PlannedResource:
    return plan.named(f"pool-{pool}-ng")


def test_fixed_capacity_pools_update_minimal_others_default() -> None:
    """botocore eks 2017-11-01 NodegroupUpdateConfig.updateStrategy: DEFAULT launches new instances before
    terminating old ones; MINIMAL terminates first. A reservation or Capacity Block that is fully used has no
    instance for DEFAULT's surge, so fixed-capacity pools must say MINIMAL (the old code sent no strategy)."""
    assert set(_eks_shape("NodegroupUpdateStrategies").enum) == {"DEFAULT", "MINIMAL"}
    assert "updateStrategy" in _eks_shape("NodegroupUpdateConfig").members
    plan, spec = plan_for("prod"), spec_for("prod")
    fixed = [p for p in spec.node_pools if p.capacity in ("reserved", "capacity-block")]
    assert {p.capacity for p in fixed} == {"reserved", "capacity-block"}
    for pool in spec.node_pools:
        got = _pool_ng(plan, pool.name).inputs["updateConfig"]["updateStrategy"]
        assert got == update_strategy(pool) == ("MINIMAL" if pool in fixed else "DEFAULT"), pool.name


def test_capacity_block_node_group_is_shaped_as_eks_requires() -> None:
    """EKS user guide, "Create a managed node group with Capacity Blocks for ML" (capacity-blocks-mng):
    a custom launch template with InstanceMarketOptions.MarketType capacity-block, the block's
    CapacityReservationId and the InstanceType; the node group with capacityType CAPACITY_BLOCK, subnets in
    the block's zone and no instance type of its own. botocore CreateNodegroupRequest.instanceTypes: "If you
    specify an instance type in your launch template and specify any instanceTypes, the node group
    deployment will fail" (the old code put p5.48xlarge on both)."""
    assert "instance type in your launch template" in _eks_shape("CreateNodegroupRequest").members["instanceTypes"].documentation
    plan, spec = plan_for("prod"), spec_for("prod")
    pool = next(p for p in spec.node_pools if p.capacity == "capacity-block")
    ng, lt = _pool_ng(plan, pool.name), plan.named(f"pool-{pool.name}-lt").inputs
    assert ng.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert "instanceTypes" not in ng.inputs
    assert lt["instanceType"] == pool.instance_types[0] == "p5.48xlarge"
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"] == {"capacityReservationId": pool.reservation.id}  # type: ignore[union-attr]
    assert ng.inputs["subnetIds"] == ["network-private-us-east-1a-id"], "one subnet, in the block's zone"
    # EKS scales the group to 0 before the block ends, and upgrades need desired size 0: the group
    # must allow 0, and the next `pulumi up` must leave the desired size EKS set alone.
    scaling = ng.inputs["scalingConfig"]
    assert scaling["minSize"] == 0 and scaling["desiredSize"] == 0 and scaling["maxSize"] >= 1
    assert "scalingConfig.desiredSize" in ng.ignore_changes
    for other in spec.node_pools:
        if other.capacity != "capacity-block":
            assert "instanceType" not in plan.named(f"pool-{other.name}-lt").inputs, other.name


def test_reserved_pools_run_in_their_reservations_zone_only() -> None:
    """EC2 user guide, "On-Demand Capacity Reservations": a reservation is for one instance type in one
    Availability Zone; instances launched in another zone do not use it and bill On-Demand. The old prod
    stack spread its reserved A100 pool over three zones."""
    plan, spec = plan_for("prod"), spec_for("prod")
    zones = spec.network.availability_zones
    for pool in spec.node_pools:
        if pool.capacity in ("reserved", "capacity-block"):
            (zone,) = pool.availability_zones
            assert _pool_ng(plan, pool.name).inputs["subnetIds"] == [f"network-private-{zone}-id"], pool.name
            assert zone in zones


def test_reserved_efa_pool_uses_the_reservations_placement_group() -> None:
    """EC2 user guide, "Capacity Reservations in cluster placement groups": a reservation made in a cluster
    placement group is used only by instances launched into that group, so the pool names it instead of
    creating a new (empty) one."""
    catalog = load_catalog()
    pool = next(p for p in spec_for("prod").node_pools if p.name == "train-h100-reserved")
    lt = launch_template_plan(pool, catalog)
    assert (lt.placement_group, lt.placement_group_name) == (False, "gpu-prod-h100-cpg")
    without = pool.model_copy(update={"reservation": pool.reservation.model_copy(update={"placement_group": None})})  # type: ignore[union-attr]
    assert (launch_template_plan(without, catalog).placement_group, launch_template_plan(without, catalog).placement_group_name) == (True, None)


def _simulated_node(pool: NodePool, ng: PlannedResource, tags: dict[str, str]) -> tuple[dict[str, str], dict[str, int]]:
    """(labels, allocatable) of the node cluster-autoscaler builds for the group at zero (behaviour.autoscaler `template_node`)."""
    instance = load_catalog().instance(pool.instance_types[0])
    from_tags = template_node(instance.vcpu, instance.memory_gib * 1024, instance.gpus, tags)
    assert dict(from_tags.labels) == ng.inputs["labels"], "the template must describe the nodes the group really makes"
    node = template_node(instance.vcpu, instance.memory_gib * 1024, instance.gpus, tags, ng.inputs["labels"])
    # Extended resources are counts; hugepages-2Mi (EFA pools) is a byte quantity like "10240Mi".
    return dict(node.labels), {k: int(parse_quantity(v)) for k, v in node.allocatable.items()}


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_accelerator_label_exactly_where_the_autoscaler_can_see_the_gpus(stack: str) -> None:
    """cluster-autoscaler (pinned chart's app version), cloudprovider/aws GPULabel = k8s.amazonaws.com/accelerator;
    processors/customresources/gpu_processor.go FilterOutNodesWithUnreadyResources: a node with that label
    and no non-zero allocatable among utils/gpu GPUVendorResourceNames counts as unready (GPU still coming
    up), so the autoscaler waits instead of adding nodes. The AWS README asks GPU node groups for the label
    and its node-template tag. Reproduced here: labelled pools must offer nvidia.com/gpu (else their nodes
    stay "unready" for ever: MIG and renamed time-slicing pools), and every pool that offers it is labelled
    (the old code labelled none, so every scale-up from 0 over-provisioned)."""
    plan, spec = plan_for(stack), spec_for(stack)
    labelled = 0
    for pool in spec.node_pools:
        ng = _pool_ng(plan, pool.name)
        tags = {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in plan.children(f"pool-{pool.name}") if r.type == "aws:autoscaling/tag:Tag"}
        labels, allocatable = _simulated_node(pool, ng, tags)
        has_label = ACCELERATOR_LABEL in labels
        has_gpu = any(allocatable.get(r, 0) > 0 for r in CA_GPU_RESOURCES)
        unready_forever = has_label and not has_gpu
        assert not unready_forever, f"{pool.name}: labelled but offers {sorted(allocatable)}"
        assert has_label == (allocatable.get(GPU_RESOURCE, 0) > 0), pool.name
        if has_label:
            labelled += 1
            assert labels[ACCELERATOR_LABEL].startswith("nvidia-")
    assert labelled > 0 or stack == "dev"  # every dev pool is time-sliced (nvidia.com/gpu.shared)


def test_node_group_plan_is_pure() -> None:
    """The same decisions without Pulumi: a reserved pool's plan says MINIMAL and one zone."""
    catalog = load_catalog()
    pool = next(p for p in spec_for("prod").node_pools if p.name == "infer-a100-mig")
    plan = node_group_plan(pool, catalog, "gpu-prod", ("us-east-1a", "us-east-1b", "us-east-1c"), "prod", "prod", {})
    assert plan.update_strategy == "MINIMAL"
    assert plan.zones == ("us-east-1b",)
    assert ACCELERATOR_LABEL not in plan.labels  # a MIG pool offers nvidia.com/mig-*, not nvidia.com/gpu


def test_capacity_report_bills_reserved_and_block_pools_whole() -> None:
    """EC2 user guide, "Capacity Reservation pricing and billing" / "Capacity Blocks pricing": every reserved
    instance is billed whether or not it runs, so a block at desired 0 still costs its full size."""
    from gpu_platform.capacity import pool_capacity_report
    from gpu_platform.pricing import load_commitments

    catalog = load_catalog()
    report = {p.pool: p for p in pool_capacity_report(spec_for("prod"), catalog)}
    block = report["train-h100-block"]
    assert (block.tier, block.desired_gpus, block.max_gpus) == ("capacity-block", 0, 16)
    # a block bills its own Capacity Block rate for its dates (gpu_platform.pricing), not the On-Demand list price
    assert block.hourly_cost == pytest.approx(load_commitments().capacity_blocks["p5.48xlarge"].price * 2)
    assert report["infer-l4-ondemand"].hourly_cost == pytest.approx(catalog.instance("g6.2xlarge").price_per_hour * 2)  # type: ignore[operator]
