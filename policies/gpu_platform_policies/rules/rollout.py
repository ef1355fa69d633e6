"""Rollout safety: node group update batches, GPU Operator driver upgrade policy."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpu_platform.pools import LABEL_TIER
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.view import NODE_GROUP, get, helm_releases, truthy


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
