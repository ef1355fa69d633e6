"""Rollout and repair: node group update batches, GPU Operator driver upgrade policy, a failed GPU's node replaced."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpu_platform.behaviour.node_health import ADDON as NODE_MONITORING_AGENT
from gpu_platform.behaviour.node_health import dcgm_agent_blocked, repair_decision, xid_condition
from gpu_platform.pools import LABEL_TIER
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.view import (
    EKS_ADDON,
    EKS_CLUSTER,
    INSTANCE_TYPE_LABEL,
    NODE_GROUP,
    configuration_values,
    get,
    helm_releases,
    instance_types_of,
    is_gpu_node_group,
    parse_taints,
    truthy,
)


@rule(
    "nodegroup-max-unavailable",
    "Node group updates replace few nodes at a time (max-unavailable-nodes, max-unavailable-percent).",
    "mandatory",
    "resource",
    category="rollout",
    types=(NODE_GROUP,),
    thresholds={"max-unavailable-nodes": 1, "max-unavailable-percent": 25},
)
def nodegroup_max_unavailable(r: Resource, ctx: Context) -> Iterator[str]:
    """An AMI bump that drains half a training pool at once kills every running job on it."""
    update = r.inputs.get("updateConfig") or {}
    count, percent = update.get("maxUnavailable"), update.get("maxUnavailablePercentage")
    if count is None and percent is None:
        yield f"updateConfig.maxUnavailable is not set; set it explicitly (at most {ctx.threshold('max-unavailable-nodes'):g})"
    if count is not None and float(count) > ctx.threshold("max-unavailable-nodes"):
        yield f"updateConfig.maxUnavailable is {count}; allowed: at most {ctx.threshold('max-unavailable-nodes'):g}"
    if percent is not None and float(percent) > ctx.threshold("max-unavailable-percent"):
        yield f"updateConfig.maxUnavailablePercentage is {percent}; allowed: at most {ctx.threshold('max-unavailable-percent'):g}"


def _too_many(value: object, ctx: Context) -> bool:
    text = str(value)
    m = re.fullmatch(r"(\d+)%", text)
    if m:
        return int(m.group(1)) > ctx.threshold("max-unavailable-percent")
    return text.isdigit() and int(text) > ctx.threshold("max-unavailable-nodes")


@rule(
    "driver-upgrade-policy",
    "The GPU Operator's driver upgrade policy sets maxUnavailable and drain, with auto-upgrade off in production.",
    "mandatory",
    "stack",
    category="rollout",
)
def driver_upgrade_policy(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A driver upgrade reboots GPU nodes; unbounded, it takes down every pool together."""
    for r in helm_releases(plan, "gpu-operator"):
        driver = get(r.inputs, "values", "driver", default={}) or {}
        policy = driver.get("upgradePolicy")
        auto = truthy(get(policy, "autoUpgrade")) if policy else False
        if ctx.production and auto:
            yield Finding(r.name, "values.driver.upgradePolicy.autoUpgrade is true in production; upgrade drivers deliberately")
        if not truthy(driver.get("enabled", True)):
            continue  # driver preinstalled on the image: the operator never upgrades it
        if not policy:
            yield Finding(r.name, "values.driver.upgradePolicy is not set; set maxUnavailable and drain")
            continue
        if policy.get("maxUnavailable") in (None, ""):
            yield Finding(r.name, "values.driver.upgradePolicy.maxUnavailable is not set")
        elif _too_many(policy.get("maxUnavailable"), ctx):
            yield Finding(
                r.name, f"values.driver.upgradePolicy.maxUnavailable {policy.get('maxUnavailable')!r} is above max-unavailable-nodes/percent"
            )
        if not truthy(get(policy, "drain", "enable")):
            yield Finding(r.name, "values.driver.upgradePolicy.drain.enable is not true; GPU pods would be killed mid-job")


FIXED_TIERS = ("reserved", "capacity-block")


def fixed_capacity_tier(r: Resource) -> str | None:
    """`reserved` or `capacity-block` when the node group runs on capacity bought in a fixed amount."""
    if r.inputs.get("capacityType") == "CAPACITY_BLOCK":
        return "capacity-block"
    tier = get(r.inputs, "labels", LABEL_TIER)
    return str(tier) if tier in FIXED_TIERS else None


@rule(
    "fixed-capacity-update-strategy",
    "Node groups on reserved or Capacity Block capacity update with updateConfig.updateStrategy MINIMAL.",
    "mandatory",
    "resource",
    category="rollout",
    types=(NODE_GROUP,),
)
def fixed_capacity_update_strategy(r: Resource, ctx: Context) -> Iterator[str]:
    """DEFAULT launches replacements before terminating (botocore eks NodegroupUpdateConfig); a full reservation has none to give."""
    tier = fixed_capacity_tier(r)
    if tier is None:
        return
    strategy = get(r.inputs, "updateConfig", "updateStrategy") or "DEFAULT"
    if strategy != "MINIMAL":
        yield (
            f"updateConfig.updateStrategy is {strategy} on {tier} capacity: new nodes are launched before old ones stop, "
            "and a fully used reservation has no spare instance, so the update stalls; set it to MINIMAL"
        )


FAILED_GPU_XID = 79  # "GPU has fallen off the bus": NVIDIA's catalog resolves it with a power cycle


def _node_labels(ng: Resource, instance_type: str) -> dict[str, str]:
    """The labels a node of the group carries that the agent's DCGM server selects on (kubelet's well-known labels)."""
    arch = "arm64" if "ARM" in str(ng.inputs.get("amiType", "")) else "amd64"
    return {**(ng.inputs.get("labels") or {}), INSTANCE_TYPE_LABEL: instance_type, "kubernetes.io/arch": arch, "kubernetes.io/os": "linux"}


def _no_eks_gpu_group(plan: PlanView, ctx: Context) -> str | None:
    if not any(is_gpu_node_group(ng, ctx.catalog) for ng in plan.of_type(NODE_GROUP)):
        return "the stack has no EKS GPU node group (bare metal is fenced by the Ansible role gpu_health_check)"
    return None


@rule(
    "gpu-node-repair",
    "A failed GPU's node is replaced without a person: the node monitoring agent watches every GPU node group, node repair replaces it.",
    "mandatory",
    "stack",
    category="rollout",
    not_applicable=_no_eks_gpu_group,
)
def gpu_node_repair(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Without repair a node with a dead GPU stays in its pool with 7 of 8 GPUs: no 8-GPU job fits and NCCL jobs on it hang.

    Each step as its component takes it (gpu_platform.behaviour.node_health): the agent's DCGM server must run on
    the node (its chart's affinity and `dcgmAgent.tolerations`), a fatal XID becomes AcceleratedHardwareReady,
    and the node group's `nodeRepairConfig` must answer XID 79 with Replace (a reboot is no power cycle).
    """
    groups = [ng for ng in plan.of_type(NODE_GROUP) if is_gpu_node_group(ng, ctx.catalog)]
    cluster = next((r for r in plan if r.type == EKS_CLUSTER), None)
    if not groups or cluster is None:
        return
    agent = next((r for r in plan if r.type == EKS_ADDON and r.inputs.get("addonName") == NODE_MONITORING_AGENT), None)
    config = configuration_values(agent) if agent is not None else {}
    if agent is None:
        yield Finding(cluster.name, f"no {NODE_MONITORING_AGENT} add-on: a failed GPU never marks its node unhealthy, so nothing repairs it")
    condition, reason = xid_condition(FAILED_GPU_XID) or ("", "")
    for ng in groups:
        taints = [dict(zip(("key", "value", "effect"), t, strict=True)) for t in parse_taints(ng.inputs.get("taints"))]
        if agent is not None:
            for kind in instance_types_of(plan, ng):
                blocked = dcgm_agent_blocked(config, _node_labels(ng, kind), taints)
                if blocked:
                    yield Finding(agent.name, f"it cannot watch the GPUs of node group {ng.name}: {blocked}", field="configurationValues")
                    break
        # The smallest the group gets: one node down there is the largest unhealthy share repair must still act on.
        size = max(1, int(get(ng.inputs, "scalingConfig", "minSize", default=0) or 0))
        decision = repair_decision(ng.inputs.get("nodeRepairConfig"), condition, reason, 1, size)
        if decision.action is None:
            yield Finding(ng.name, f"a node with XID {FAILED_GPU_XID} is never repaired: {decision.why}", field="nodeRepairConfig")
        elif decision.action != "Replace":
            yield Finding(
                ng.name,
                f"XID {FAILED_GPU_XID} (GPU fell off the bus) is repaired by {decision.action!r} ({decision.why}); only a power cycle "
                f"brings the GPU back, so add a nodeRepairConfigOverrides entry {condition}/{reason} -> Replace",
                field="nodeRepairConfig",
            )
