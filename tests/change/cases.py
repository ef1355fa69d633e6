"""Each change rule's violating and legitimate changes, as edits of prod's real offline plan and stack config."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.catalog import load_catalog
from gpu_platform.change.base import lock_facts
from gpu_platform.change.diff import by_key, diff_plans
from gpu_platform.spec.loader import read_stack_config
from gpu_platform_policies import Resource, Violation
from gpu_platform_policies.changeview import LOCKFILE, ChangeView, evaluate_change
from gpu_platform_policies.model import Level, PlanView
from tests.conftest import plan_for, spec_for, stack_path

Items = list[dict[str, Any]]
Config = dict[str, Any]


@dataclass(frozen=True)
class ChangeCase:
    """A change to prod and what one change rule must say about it (fires_on None: nothing)."""

    rule: str
    id: str
    after: tuple[Callable[[Items], None], ...] = ()
    before: tuple[Callable[[Items], None], ...] = ()
    config: tuple[Callable[[Config], None], ...] = ()
    lock: dict[str, str] = field(default_factory=dict)
    usage: dict[str, float] | None = None
    demand: dict[str, float] | None = None
    maintenance: tuple[str, ...] = ()
    fires_on: str | None = None
    key: str | None = None
    file: str | None = None
    message: str = ""
    gate_changes: tuple[str, ...] = ()
    owners: dict[str, tuple[str, ...]] = field(default_factory=dict)


def named(items: Items, name: str) -> dict[str, Any]:
    """The plan item (a `plan --format json` resource) with this logical name."""
    return next(r for r in items if r["name"] == name)


def set_in(name: str, value: Any, *path: str) -> Callable[[Items], None]:
    """An edit: set inputs.<path> of one resource."""

    def edit(items: Items) -> None:
        node = named(items, name)["inputs"]
        for p in path[:-1]:
            node = node.setdefault(p, {})
        node[path[-1]] = value

    return edit


def drop(name: str) -> Callable[[Items], None]:
    """An edit: the resource is gone."""
    return lambda items: items.remove(named(items, name))


def every_node_group(fn: Callable[[dict[str, Any]], None]) -> Callable[[Items], None]:
    """An edit applied to each node group's inputs."""

    def edit(items: Items) -> None:
        for r in items:
            if r["type"] == "aws:eks/nodeGroup:NodeGroup":
                fn(r["inputs"])

    return edit


def unflavor(queue: str, flavor: str) -> Callable[[Items], None]:
    """An edit: a ClusterQueue no longer lists a flavor (its quota on that pool is gone)."""

    def edit(items: Items) -> None:
        for group in named(items, queue)["inputs"]["spec"]["resourceGroups"]:
            group["flavors"] = [f for f in group["flavors"] if f["name"] != flavor]

    return edit


def tenant_quota(tenant: int, quota: int, gpus: int) -> Callable[[Config], None]:
    """A config edit: one tenant quota's GPUs."""
    return lambda c: c["gpu-platform:tenants"][tenant]["quotas"][quota].__setitem__("gpus", gpus)


def _enforce(rule: str, level: str) -> Callable[[Config], None]:
    """A config edit: the stack's own `policy.enforcement` sets `rule` to `level`."""
    return lambda c: c.setdefault("gpu-platform:policy", {}).setdefault("enforcement", {}).__setitem__(rule, level)


def view_of(case: ChangeCase) -> ChangeView:
    """The ChangeView of prod before and after the case's edits."""
    before: Items = [{**r.to_json(), "source": r.source} for r in plan_for("prod").resources]
    before = copy.deepcopy(before)
    for edit in case.before:
        edit(before)
    after = copy.deepcopy(before)
    for edit in case.after:
        edit(after)
    config = read_stack_config(stack_path("prod"))
    after_config = copy.deepcopy(config)
    for cedit in case.config:
        cedit(after_config)
    facts = lock_facts(spec_for("prod").lock)

    def res(items: Items) -> PlanView:
        return PlanView(Resource(r["type"], r["name"], r["parent"], r["inputs"], r.get("source")) for r in items)

    return ChangeView(
        before=res(before),
        after=res(after),
        changes=tuple(diff_plans(by_key(before), by_key(after))),
        catalog=load_catalog(),
        before_config=config,
        after_config=after_config,
        before_lock=facts,
        after_lock={**facts, **case.lock},
        usage=case.usage,
        demand_p95=case.demand,
        maintenance=case.maintenance,
        production=True,
        gate_changes=case.gate_changes,
        owners=case.owners,
        stack_file="stacks/Pulumi.prod.yaml",
    )


def run_change_case(case: ChangeCase, enforcement: dict[str, Level] | None = None) -> list[Violation]:
    """The case's rule's violations (other rules' findings are other cases' business)."""
    return [v for v in evaluate_change(view_of(case), enforcement) if v.policy == case.rule]


def assert_change_case(case: ChangeCase, found: list[Violation]) -> None:
    """Silent for a legitimate change; for a violating one, the resource, key, file and message fragment."""
    if case.fires_on is None:
        assert not found, f"{case.rule} fired on a legitimate change ({case.id}): {[v.message for v in found]}"
        return
    hits = [v for v in found if v.resource == case.fires_on]
    assert hits, f"{case.rule} did not fire on {case.fires_on} ({case.id}); found {[(v.resource, v.message) for v in found]}"
    v = hits[0]
    assert case.message in v.message, f"{case.id}: {v.message!r} lacks {case.message!r}"
    if case.key is not None:
        assert v.key == case.key, f"{case.id}: key {v.key!r}, expected {case.key!r}"
    assert v.file == case.file, f"{case.id}: file {v.file!r}, expected {case.file!r}"


RESERVED_NG = "pool-train-h100-reserved-ng"
AMI = "1.35.7-20260812"

CHANGE_CASES: tuple[ChangeCase, ...] = (
    ChangeCase(
        "fixed-capacity-replaced",
        "reserved-instance-type",
        after=(set_in(RESERVED_NG, ["p5e.48xlarge"], "instanceTypes"),),
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].instanceTypes",
        message="instanceTypes changed",
    ),
    ChangeCase(
        "fixed-capacity-replaced",
        "reserved-zones",
        after=(set_in(RESERVED_NG, ["network-private-us-east-1b-id"], "subnetIds"),),
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].availabilityZones",
        message="subnetIds changed",
    ),
    ChangeCase(
        "fixed-capacity-replaced",
        "on-demand-instance-type",
        after=(set_in("pool-train-h100-ondemand-ng", ["p5e.48xlarge"], "instanceTypes"),),
    ),
    ChangeCase(
        "fixed-capacity-replaced",
        "reserved-with-maintenance",
        after=(set_in(RESERVED_NG, ["p5e.48xlarge"], "instanceTypes"),),
        maintenance=("train-h100-reserved 2026-12-05T02:00Z/6h OPS-4711",),
    ),
    ChangeCase(
        "fixed-capacity-recycled",
        "ami-bump-in-lockfile",
        after=(every_node_group(lambda i: i.__setitem__("releaseVersion", AMI)),),
        fires_on=RESERVED_NG,
        key="eks.ami_release_version",
        file=LOCKFILE,
        message="releaseVersion changed",
    ),
    ChangeCase(
        "fixed-capacity-recycled",
        "ami-bump-in-stack",
        after=(every_node_group(lambda i: i.__setitem__("releaseVersion", AMI)),),
        config=(lambda c: c.__setitem__("gpu-platform:versions", {"eks": {"ami_release_version": AMI}}),),
        fires_on="pool-train-h100-block-ng",
        key="gpu-platform:versions.eks.ami_release_version",
        message="capacity-block",
    ),
    ChangeCase(
        "fixed-capacity-recycled",
        "launch-template-disk",
        after=(set_in("pool-train-h100-reserved-lt", [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 2000}}], "blockDeviceMappings"),),
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].rootVolumeGiB",
        message="launchTemplate.version",
    ),
    ChangeCase(
        "fixed-capacity-recycled",
        "maintenance-but-default-strategy",
        after=(
            every_node_group(lambda i: i.__setitem__("releaseVersion", AMI)),
            set_in(RESERVED_NG, {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}, "updateConfig"),
        ),
        maintenance=("train-h100-reserved,infer-a100-mig,train-h100-block 2026-12-05T02:00Z/6h OPS-4711",),
        fires_on=RESERVED_NG,
        file=LOCKFILE,
        message="not MINIMAL",
    ),
    ChangeCase(
        "fixed-capacity-recycled",
        "ami-bump-with-maintenance",
        after=(every_node_group(lambda i: i.__setitem__("releaseVersion", AMI)),),
        maintenance=("train-h100-reserved,infer-a100-mig,train-h100-block 2026-12-05T02:00Z/6h OPS-4711",),
    ),
    ChangeCase(
        "fixed-capacity-recycled",
        "ami-bump-on-demand-only",
        after=(set_in("pool-infer-l4-ondemand-ng", AMI, "releaseVersion"),),
    ),
    ChangeCase(
        "stable-capacity-below-demand",
        "reserved-cut-below-p95",
        after=(set_in(RESERVED_NG, {"minSize": 1, "desiredSize": 1, "maxSize": 1}, "scalingConfig"),),
        demand={"training": 48},
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].scaling",
        message="64 -> 40",
    ),
    ChangeCase(
        "stable-capacity-below-demand",
        "reserved-cut-above-p95",
        after=(set_in(RESERVED_NG, {"minSize": 1, "desiredSize": 1, "maxSize": 1}, "scalingConfig"),),
        demand={"training": 30},
    ),
    ChangeCase(
        "quota-below-usage",
        "cut-below-use",
        config=(tenant_quota(0, 0, 8),),
        usage={"llm-training": 40},
        fires_on="tenant llm-training",
        key="gpu-platform:tenants[0].quotas[0].gpus",
        message="48 -> 32 GPUs, below the 40 GPUs",
    ),
    ChangeCase("quota-below-usage", "cut-above-use", config=(tenant_quota(0, 0, 8),), usage={"llm-training": 20}),
    ChangeCase(
        "driver-or-cuda-moved",
        "branch",
        lock={"driverBranch": "590", "driverVersion": "590.44.01"},
        fires_on="lockfile",
        key="nvidia_driver.branch",
        file=LOCKFILE,
        message="580 -> 590",
    ),
    ChangeCase(
        "driver-or-cuda-moved",
        "cuda-minor",
        lock={"cudaVersion": "13.0.2"},
        fires_on="lockfile",
        key="cuda.version",
        file=LOCKFILE,
        message="12.9 -> 13.0",
    ),
    ChangeCase("driver-or-cuda-moved", "patch-releases", lock={"driverVersion": "580.180.01", "cudaVersion": "12.9.2"}),
    ChangeCase(
        "driver-or-cuda-moved", "branch-with-maintenance", lock={"driverBranch": "590"}, maintenance=("driver 2026-12-05T02:00Z/4h OPS-4712",)
    ),
    ChangeCase(
        "sharing-layout-changed",
        "mig-on-running-pool",
        after=(set_in("pool-infer-a100-mig-ng", "all-1g.10gb", "labels", "nvidia.com/mig.config"),),
        fires_on="pool-infer-a100-mig-ng",
        key="gpu-platform:nodePools[3].sharing",
        message="paused-for-mig-change",
    ),
    ChangeCase(
        "sharing-layout-changed",
        "device-plugin-to-dra-on-running-pool",
        after=(set_in("pool-infer-a100-mig-ng", "dra", "labels", "gpu-platform.io/gpu-allocation"),),
        fires_on="pool-infer-a100-mig-ng",
        key="gpu-platform:nodePools[3].allocation",
        message="switches its GPUs from device-plugin to dra allocation on running nodes",
    ),
    ChangeCase(
        "sharing-layout-changed",
        "device-plugin-to-dra-on-empty-pool",
        after=(set_in("pool-train-h100-block-ng", "dra", "labels", "gpu-platform.io/gpu-allocation"),),
    ),
    ChangeCase(
        "sharing-layout-changed",
        "mig-on-empty-pool",
        after=(set_in("pool-train-h100-block-ng", "all-3g.40gb", "labels", "nvidia.com/mig.config"),),
    ),
    ChangeCase(
        "moved-to-spot",
        "training",
        after=(
            set_in("pool-train-h100-ondemand-ng", "SPOT", "capacityType"),
            set_in("pool-train-h100-ondemand-ng", "spot", "labels", "gpu-platform.io/capacity-tier"),
        ),
        fires_on="pool-train-h100-ondemand-ng",
        key="gpu-platform:nodePools[1].capacity",
        message="on-demand to spot",
    ),
    ChangeCase(
        "moved-to-spot",
        "batch",
        after=(
            set_in("pool-batch-l40s-ondemand-ng", "SPOT", "capacityType"),
            set_in("pool-batch-l40s-ondemand-ng", "spot", "labels", "gpu-platform.io/capacity-tier"),
        ),
    ),
    ChangeCase(
        "deleted-while-referenced",
        "flavor-still-in-queues",
        after=(drop("kueue-flavor-batch-l40s-spot"),),
        fires_on="kueue-flavor-batch-l40s-spot",
        key="gpu-platform:nodePools",
        message="kueue-clusterqueue-data-platform",
    ),
    ChangeCase(
        "deleted-while-referenced",
        "flavor-unreferenced-since-last-change",
        before=(
            unflavor("kueue-clusterqueue-data-platform", "batch-l40s-spot"),
            unflavor("kueue-clusterqueue-foundation-research", "batch-l40s-spot"),
        ),
        after=(drop("kueue-flavor-batch-l40s-spot"),),
    ),
    ChangeCase(
        "priority-class-value-changed",
        "value",
        after=(set_in("platform-priority-batch", 25000, "value"),),
        fires_on="platform-priority-batch",
        key="gpu-platform:tenants[4].priority",
        message="20000 -> 25000",
    ),
    ChangeCase(
        "priority-class-value-changed",
        "description",
        after=(set_in("platform-priority-batch", "Batch work.", "description"),),
    ),
    ChangeCase(
        "gate-loosened",
        "rule-disabled-in-the-change",
        config=(_enforce("fixed-capacity-replaced", "disabled"),),
        fires_on="stack",
        key="gpu-platform:policy.enforcement.fixed-capacity-replaced",
        message="policy.enforcement.fixed-capacity-replaced mandatory -> disabled loosens the gate",
    ),
    ChangeCase(
        "gate-loosened",
        "the-rule-itself-disabled",
        config=(_enforce("gate-loosened", "disabled"),),
        fires_on="stack",
        message="policy.enforcement.gate-loosened mandatory -> disabled",
    ),
    ChangeCase("gate-loosened", "tightened", config=(_enforce("spot-exposure", "mandatory"),)),
    ChangeCase(
        "gate-code-changed",
        "a-rule-file-edited",
        gate_changes=("policies/gpu_platform_policies/rules/security.py",),
        owners={"policies/gpu_platform_policies/rules/security.py": ("@acme/gpu-platform-owners",)},
        fires_on="repository",
        file="policies/gpu_platform_policies/rules/security.py",
        message="changes the gate itself; it needs approval by its code owners (@acme/gpu-platform-owners)",
    ),
    ChangeCase("gate-code-changed", "only-stacks-changed", config=(tenant_quota(0, 0, 20),)),
    ChangeCase(
        "scheduler-removed",
        "kueue-off-with-tenants",
        config=(lambda c: c["gpu-platform:queueing"]["kueue"].__setitem__("enabled", False),),
        fires_on="stack",
        key="gpu-platform:queueing.kueue.enabled",
        message="turns Kueue off on a stack with 5 tenants",
    ),
    ChangeCase(
        "scheduler-removed",
        "volcano-off-with-tenants",
        config=(lambda c: c["gpu-platform:queueing"].__setitem__("volcano", {"enabled": False}),),
        fires_on="stack",
        message="turns Volcano off",
    ),
    ChangeCase("scheduler-removed", "fair-sharing-off", config=(lambda c: c["gpu-platform:queueing"]["kueue"].__setitem__("fairSharing", False),)),
    ChangeCase(
        "tenant-tier-raised",
        "research-to-inference",
        config=(lambda c: c["gpu-platform:tenants"][1].__setitem__("priority", "inference"),),
        fires_on="stack",
        key="gpu-platform:tenants[1].priority",
        message="tenant foundation-research's tier rises experiments -> inference",
    ),
    ChangeCase("tenant-tier-raised", "serving-lowered", config=(lambda c: c["gpu-platform:tenants"][2].__setitem__("priority", "batch"),)),
    ChangeCase(
        "tenant-role-shared",
        "research-gets-trainings-role",
        config=(lambda c: c["gpu-platform:tenants"][1].__setitem__("accessRoleArns", list(c["gpu-platform:tenants"][0]["accessRoleArns"])),),
        fires_on="stack",
        key="gpu-platform:tenants[1].accessRoleArns",
        message="now belongs to tenants foundation-research, llm-training",
    ),
    ChangeCase(
        "tenant-role-shared",
        "a-role-of-its-own",
        config=(lambda c: c["gpu-platform:tenants"][1].__setitem__("accessRoleArns", ["arn:aws:iam::123456789012:role/research-ci"]),),
    ),
    ChangeCase(
        "training-quota-on-spot",
        "ondemand-training-pool-turned-spot",
        config=(lambda c: c["gpu-platform:nodePools"][1].__setitem__("capacity", "spot"),),
        fires_on="stack",
        key="gpu-platform:tenants[0].quotas",
        message="tenant llm-training's quota on Spot training pools grows 0 -> 8 GPUs",
    ),
    ChangeCase("training-quota-on-spot", "training-quota-cut", config=(tenant_quota(0, 1, 4),)),
    # reservation-still-matches: the reservation was bought for p5.48xlarge in us-east-1a, Linux/UNIX, default tenancy.
    ChangeCase(
        "reservation-still-matches",
        "reserved-instance-type",
        after=(set_in(RESERVED_NG, ["p4de.24xlarge"], "instanceTypes"),),
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].instanceTypes",
        message="instance type p5.48xlarge -> p4de.24xlarge",
    ),
    ChangeCase(
        "reservation-still-matches",
        "reserved-instance-type-with-maintenance",
        after=(set_in(RESERVED_NG, ["p4de.24xlarge"], "instanceTypes"),),
        maintenance=("train-h100-reserved 2026-12-05T02:00Z/6h OPS-4711",),
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].instanceTypes",
        message="every launch of the new group fails",
    ),
    ChangeCase(
        "reservation-still-matches",
        "reserved-zone",
        after=(set_in(RESERVED_NG, ["network-private-us-east-1b-id"], "subnetIds"),),
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].availabilityZones",
        message="zone us-east-1a -> us-east-1b",
    ),
    ChangeCase(
        "reservation-still-matches",
        "reserved-tenancy",
        after=(set_in("pool-train-h100-reserved-lt", "dedicated", "placement", "tenancy"),),
        fires_on=RESERVED_NG,
        key="gpu-platform:nodePools[0].reservation",
        message="tenancy default -> dedicated",
    ),
    ChangeCase(
        "reservation-still-matches",
        "block-instance-type",
        after=(set_in("pool-train-h100-block-lt", "p5e.48xlarge", "instanceType"),),
        fires_on="pool-train-h100-block-ng",
        key="gpu-platform:nodePools[8].instanceTypes",
        message="instance type p5.48xlarge -> p5e.48xlarge",
    ),
    ChangeCase(
        "reservation-still-matches",
        "new-type-with-its-own-reservation",
        after=(
            set_in(RESERVED_NG, ["p4de.24xlarge"], "instanceTypes"),
            set_in(
                "pool-train-h100-reserved-lt",
                {"capacityReservationTarget": {"capacityReservationId": "cr-0f1b2c3d4e5f6071c"}},
                "capacityReservationSpecification",
            ),
        ),
    ),
    ChangeCase(
        "reservation-still-matches", "on-demand-instance-type", after=(set_in("pool-train-h100-ondemand-ng", ["p4de.24xlarge"], "instanceTypes"),)
    ),
)
