"""Journey: an XID 79 on one GPU of a reserved training node, to the node fenced and the pool whole again (issue 34).

On EKS (the prod stack's reserved H100 pool, its reservation full), stage by stage over the planned objects:
1. watched: the node monitoring agent add-on's DCGM server runs on the node (its chart's affinity and
   `dcgmAgent.tolerations` against the node's labels and taints; behaviour.node_health `dcgm_agent_blocked`);
2. unhealthy: the agent turns XID 79 into AcceleratedHardwareReady / NvidiaXID79Error (`xid_condition`);
3. repaired: the node group's nodeRepairConfig answers with Replace, after its wait (`repair_decision`);
4. requeued: the workload that lost its pod is evicted and requeued by Kueue before the replacement node is
   ready, releasing the healthy nodes its hung ranks hold (the rendered Kueue configuration through
   behaviour.kueue `recovery_timeout_seconds`);
5. replaced: the Auto Scaling group terminates the failed instance before its replacement launches into the
   full reservation (no instance maintenance policy on an EKS managed group: "terminate and launch";
   `replace_instance`);
6. whole: four nodes of eight GPUs again, and the pool's 32-GPU job fits (behaviour.scheduler).
On bare metal (the onprem stack): the real health check fences the node (cordon, NoExecute taint), the
tenants' pods do not tolerate the taint while the GPU Operator's daemonsets do, Kueue requeues the workload,
and gpu_node_repair.yml removes that very taint after the node is checked again.
Each breakage removes one part and the walk must stop at exactly that stage.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.behaviour import node_health
from gpu_platform.behaviour.kueue import recovery_timeout_seconds
from gpu_platform.behaviour.scheduler import insufficient, untolerated_taint
from gpu_platform.catalog import load_catalog
from gpu_platform.pools import GPU_RESOURCE, UNHEALTHY_TAINT_KEY
from gpu_platform_policies.view import TAINT_EFFECTS
from tests.ansible.helpers import ANSIBLE_DIR
from tests.ansible.test_gpu_health_check import XID_79, Node
from tests.conftest import plan_for
from tests.journeys.helpers import manifests, stage
from tests.k8s.helpers import helm_values

POOL_NG = "pool-train-h100-reserved-ng"
ADDON = "cluster-addon-eks-node-monitoring-agent"
# docs/workload-flow.md, "How fallback works": a GPU node boots and joins in about 10 minutes.
NODE_READY_MINUTES = 10

Plan = dict[str, dict[str, Any]]  # resource name -> inputs
Edit = Callable[[Plan, dict[str, Any]], None]  # (plan, kueue configuration)


def _world(stack: str) -> tuple[Plan, dict[str, Any]]:
    plan = {r.name: copy.deepcopy(r.inputs) for r in plan_for(stack).resources}
    kueue = yaml.safe_load(helm_values(stack, "kueue")["managerConfig"]["controllerManagerConfigYaml"])
    return plan, kueue


def walk_eks(plan: Plan, kueue: dict[str, Any]) -> list[str]:
    """The fault's path on EKS; returns the stages passed (asserting each)."""
    ng = plan[POOL_NG]
    catalog = load_catalog()
    kind = ng["instanceTypes"][0]
    nodes = int(ng["scalingConfig"]["maxSize"])
    labels = {**ng["labels"], "node.kubernetes.io/instance-type": kind, "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
    taints = [{**t, "effect": TAINT_EFFECTS[t["effect"]]} for t in ng.get("taints") or []]

    addon = plan.get(ADDON)
    stage("watched", addon is not None, "the eks-node-monitoring-agent add-on is not installed: nothing reads the GPU's XIDs")
    assert addon is not None
    config = json.loads(addon.get("configurationValues") or "{}")
    blocked = node_health.dcgm_agent_blocked(config, labels, taints)
    stage("watched", blocked is None, f"the agent cannot watch {kind}: {blocked}")

    condition = node_health.xid_condition(79)
    stage("unhealthy", condition == ("AcceleratedHardwareReady", "NvidiaXID79Error"), f"XID 79 gives {condition}")
    assert condition is not None

    decision = node_health.repair_decision(ng.get("nodeRepairConfig"), *condition, unhealthy=1, group_size=nodes)
    stage("repaired", decision.action == "Replace", f"node repair does {decision.action!r}: {decision.why}")

    # The pod on the failed node is drained when the repair starts; its replacement pod waits for a node.
    recovery = recovery_timeout_seconds(kueue)
    replacement_ready = decision.after_minutes + NODE_READY_MINUTES
    stage(
        "requeued",
        recovery is not None and decision.after_minutes + recovery / 60 <= replacement_ready,
        f"Kueue requeues the workload {'never' if recovery is None else f'{recovery / 60:g} min after the drain'}; "
        f"the replacement node is ready {NODE_READY_MINUTES} min after it: the healthy nodes' hung ranks hold them until then",
    )

    reserved = nodes if ng["labels"].get("gpu-platform.io/capacity-tier") == "reserved" else None
    replaced = node_health.replace_instance(reserved, in_use=nodes)
    stage("replaced", replaced.launched and replaced.steps[0].startswith("terminate"), " -> ".join(replaced.steps))

    per_node = catalog.instance(kind).gpus
    stage("whole", per_node * nodes == 32, f"{nodes} nodes x {per_node} GPUs")
    allocatable = {GPU_RESOURCE: str(per_node)}
    misses = [insufficient({GPU_RESOURCE: Decimal(8)}, allocatable) for _ in range(nodes)]
    stage("whole", not any(misses), f"a rank of 8 GPUs does not fit a replaced node: {misses}")
    return ["watched", "unhealthy", "repaired", "requeued", "replaced", "whole"]


def test_an_xid_79_on_a_reserved_node_ends_with_the_pool_whole() -> None:
    plan, kueue = _world("prod")
    assert walk_eks(plan, kueue)[-1] == "whole"


def _drop_addon(plan: Plan, kueue: dict[str, Any]) -> None:
    del plan[ADDON]


def _agent_defaults(plan: Plan, kueue: dict[str, Any]) -> None:
    plan[ADDON]["configurationValues"] = None


def _repair_off(plan: Plan, kueue: dict[str, Any]) -> None:
    plan[POOL_NG].pop("nodeRepairConfig", None)


def _no_overrides(plan: Plan, kueue: dict[str, Any]) -> None:
    plan[POOL_NG]["nodeRepairConfig"]["nodeRepairConfigOverrides"] = []


def _kueue_default_recovery(plan: Plan, kueue: dict[str, Any]) -> None:
    kueue["waitForPodsReady"].pop("recoveryTimeout")


def _recovery_off(plan: Plan, kueue: dict[str, Any]) -> None:
    kueue["waitForPodsReady"]["recoveryTimeout"] = "0s"


@pytest.mark.parametrize(
    ("edit", "stops_at"),
    [
        (_drop_addon, "watched"),
        (_agent_defaults, "watched"),
        (_repair_off, "repaired"),
        (_no_overrides, "repaired"),
        (_kueue_default_recovery, "requeued"),
        (_recovery_off, "requeued"),
    ],
    ids=["no-agent", "agent-without-tolerations", "repair-off", "reboot-or-replace", "kueue-default-35m", "recovery-off"],
)
def test_each_part_removed_stops_the_walk_at_its_stage(edit: Edit, stops_at: str) -> None:
    plan, kueue = _world("prod")
    edit(plan, kueue)
    with pytest.raises(AssertionError, match=f"stage '{stops_at}'"):
        walk_eks(plan, kueue)


def test_a_launch_before_terminate_policy_would_never_replace_into_a_full_reservation() -> None:
    """Why "replaced" holds only for terminate-and-launch: the account setting launchBeforeTerminate would stall it."""
    stalled = node_health.replace_instance(4, in_use=4, policy="launch-before-terminate")
    assert not stalled.launched
    assert node_health.replace_instance(5, in_use=4, policy="launch-before-terminate").launched


def test_on_bare_metal_the_check_fences_tenants_leave_and_the_repair_lifts_that_taint(tmp_path: Path) -> None:
    # fenced: the role's real script over a kernel log with XID 79, on a node that now shows 7 of 8 GPUs
    node = Node(tmp_path, gpus=7)
    node.log.write_text(XID_79)
    assert node.check().returncode == 0
    call = node.kubectl_calls()[-1].split()
    key_value, effect = call[call.index("taint") + 3].rsplit(":", 1)
    key, value = key_value.split("=")
    taint = {"key": key, "value": value, "effect": effect}
    fenced = "cordon" in node.kubectl_calls()[0] and effect == "NoExecute" and key == UNHEALTHY_TAINT_KEY
    stage("fenced", fenced, f"kubectl got {node.kubectl_calls()}")

    # evicted: a tenant pod carries its flavor's tolerations (Kueue adds them on admission); the node's own taints stay
    flavor = next(o for o in manifests("onprem") if o["kind"] == "ResourceFlavor" and o["spec"].get("tolerations"))
    pod_tolerations = flavor["spec"]["tolerations"]
    stage("evicted", untolerated_taint([taint], pod_tolerations) == taint, f"tenant pods tolerate {taint}: {pod_tolerations}")

    # node agents stay: the GPU Operator's daemonsets (exporter, device plugin, validator) tolerate it
    operator = helm_values("onprem", "gpu-operator")["daemonsets"]["tolerations"]
    stage("agents stay", untolerated_taint([taint], operator) is None, f"the GPU Operator's daemonsets would be evicted: {operator}")

    # requeued: the same Kueue configuration as on EKS
    _, kueue = _world("onprem")
    recovery = recovery_timeout_seconds(kueue)
    stage("requeued", recovery is not None and recovery <= 15 * 60, f"Kueue requeues after {recovery}s")

    # returned: the repair playbook lifts exactly this taint, last: after the re-check and after release validates
    play = yaml.safe_load((ANSIBLE_DIR / "gpu_node_repair.yml").read_text())[0]
    steps = [t["name"] for t in [*play["pre_tasks"], *play["tasks"], *play["post_tasks"]]]
    lift = next(t for t in play["post_tasks"] if "kubernetes.core.k8s_taint" in t)["kubernetes.core.k8s_taint"]
    stage("returned", lift["state"] == "absent" and lift["taints"][0]["effect"] == "NoExecute", f"the repair lifts {lift['taints']}")
    stage("returned", f"default('{UNHEALTHY_TAINT_KEY}')" in lift["taints"][0]["key"], f"the repair lifts another key: {lift['taints']}")
    order = [
        steps.index(n)
        for n in (
            "Stop here if a GPU failed again",
            "Validate, wait for the GPUs to be advertised again, and uncordon the node",
            "Lift the unhealthy taint",
        )
    ]
    stage("returned", order == sorted(order), f"the taint is lifted before the node is checked and validated again: {steps}")
