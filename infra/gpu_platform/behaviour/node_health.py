"""From a failed GPU to a repaired EKS node, as each AWS component takes the step.

The agent's condition, where its DCGM server runs, node repair's decision, and the Auto Scaling group's
replacement into a reservation.

Sources, at the versions the lockfile pins:
- aws/eks-node-monitoring-agent at the tag of the lockfile's `eks-node-monitoring-agent` add-on:
  monitors/nvidia/dcgm/dcgm_policies.go `WellKnownXidCodes` and `handleXidFinding` (a well-known XID becomes
  reason `NvidiaXIDError`, any other XID `NvidiaXIDWarning`); pkg/reasons/reasons.yaml (template
  `NvidiaXID%dError`, severity Fatal: a node condition; `NvidiaXID%dWarning`, Warning: an event only);
  cmd/eks-node-monitoring-agent/main.go (NVIDIA reasons go to the `AcceleratedHardwareReady` condition);
  charts/eks-node-monitoring-agent/values.yaml (`dcgmAgent.affinity`: the NVIDIA instance types and amd64;
  `dcgmAgent.tolerations: []`) and templates/dcgm-daemonset.yaml (renders both as they are).
- The DaemonSet controller adds its own tolerations to every daemon pod (kubernetes v1.35
  pkg/controller/daemon/util/daemonset_util.go `AddOrUpdateDaemonPodTolerations`), never one for a custom taint.
- EKS user guide, "Automatically repair nodes in EKS clusters": a failing node is cordoned, and an
  `AcceleratedHardwareReady` node is repaired after 10 minutes by "Replace or Reboot" (managed node groups
  choose); botocore's eks model `NodeRepairConfig` and `NodeRepairConfigOverrides` (repairAction Replace,
  Reboot or NoAction; thresholds "above which node auto repair actions will stop").
- EC2 Auto Scaling user guide, "Instance maintenance policies": with no policy on the group, a replacement
  after a failed health check is "terminate and launch"; "launch before terminating" needs a spare instance.
- EC2 user guide, "Capacity Reservations": a targeted launch takes an available instance of the reservation;
  with none available it fails, and a terminated instance's slot becomes available again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.behaviour.scheduler import affinity_matches, untolerated_taint

ADDON = "eks-node-monitoring-agent"
CONDITION = "AcceleratedHardwareReady"
# dcgm_policies.go `WellKnownXidCodes`.
WELL_KNOWN_XIDS = frozenset({46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158})
# values.yaml `dcgmAgent.affinity`: node.kubernetes.io/instance-type In [...].
DCGM_AGENT_INSTANCE_TYPES = frozenset(
    (
        "g3.16xlarge",
        "g3.4xlarge",
        "g3.8xlarge",
        "g3s.xlarge",
        "g4dn.12xlarge",
        "g4dn.16xlarge",
        "g4dn.2xlarge",
        "g4dn.4xlarge",
        "g4dn.8xlarge",
        "g4dn.metal",
        "g4dn.xlarge",
        "g5.12xlarge",
        "g5.16xlarge",
        "g5.24xlarge",
        "g5.2xlarge",
        "g5.48xlarge",
        "g5.4xlarge",
        "g5.8xlarge",
        "g5.xlarge",
        "g5g.16xlarge",
        "g5g.2xlarge",
        "g5g.4xlarge",
        "g5g.8xlarge",
        "g5g.metal",
        "g5g.xlarge",
        "g6.12xlarge",
        "g6.16xlarge",
        "g6.24xlarge",
        "g6.2xlarge",
        "g6.48xlarge",
        "g6.4xlarge",
        "g6.8xlarge",
        "g6.xlarge",
        "g6e.12xlarge",
        "g6e.16xlarge",
        "g6e.24xlarge",
        "g6e.2xlarge",
        "g6e.48xlarge",
        "g6e.4xlarge",
        "g6e.8xlarge",
        "g6e.xlarge",
        "g6f.2xlarge",
        "g6f.4xlarge",
        "g6f.large",
        "g6f.xlarge",
        "g7.12xlarge",
        "g7.24xlarge",
        "g7.2xlarge",
        "g7.48xlarge",
        "g7.4xlarge",
        "g7.8xlarge",
        "g7e.12xlarge",
        "g7e.24xlarge",
        "g7e.2xlarge",
        "g7e.48xlarge",
        "g7e.4xlarge",
        "g7e.8xlarge",
        "gr6.4xlarge",
        "gr6.8xlarge",
        "gr6f.4xlarge",
        "p2.16xlarge",
        "p2.8xlarge",
        "p2.xlarge",
        "p3.16xlarge",
        "p3.2xlarge",
        "p3.8xlarge",
        "p3dn.24xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5.4xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
        "p6e-gb200.36xlarge",
        "p6e-gb300.36xlarge",
    )
)
DCGM_AGENT_AFFINITY: dict[str, Any] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": sorted(DCGM_AGENT_INSTANCE_TYPES)},
                        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate", "auto", "hybrid"]},
                        {"key": "sagemaker.amazonaws.com/compute-type", "operator": "NotIn", "values": ["hyperpod"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ]
                }
            ]
        }
    }
}
# daemonset_util.go `AddOrUpdateDaemonPodTolerations` (hostNetwork adds network-unavailable; the DCGM server has none).
DAEMON_POD_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
# node-repair.html, "Repair after", per condition (managed node groups).
DEFAULT_REPAIR_AFTER_MINUTES = {CONDITION: 10, "ContainerRuntimeReady": 30, "KernelReady": 30, "NetworkingReady": 30, "StorageReady": 30}
DEFAULT_ACTION = "Replace or Reboot"
REPAIR_ACTIONS = ("Replace", "Reboot", "NoAction")


def xid_condition(xid: int) -> tuple[str, str] | None:
    """The node condition (type, reason) the agent sets for an XID, or None when it only records an event."""
    return (CONDITION, f"NvidiaXID{xid}Error") if xid in WELL_KNOWN_XIDS else None


def dcgm_agent_blocked(config: Mapping[str, Any], node_labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the agent's DCGM server pod does not run on this node (the add-on's configuration values), or None.

    Without it no DCGM policy reports the XID and the node never turns unhealthy.
    """
    dcgm = config.get("dcgmAgent") if isinstance(config, Mapping) else None
    dcgm = dcgm if isinstance(dcgm, Mapping) else {}
    affinity = dcgm.get("affinity", DCGM_AGENT_AFFINITY)
    if not affinity_matches({"affinity": affinity, "nodeSelector": {"kubernetes.io/os": "linux", **(dcgm.get("nodeSelector") or {})}}, node_labels):
        kind = node_labels.get("node.kubernetes.io/instance-type")
        return f"its DCGM server's node affinity does not admit this node (instance type {kind})"
    tolerations = [*(dcgm.get("tolerations") or []), *DAEMON_POD_TOLERATIONS]
    taint = untolerated_taint(taints, tolerations)
    if taint is not None:
        shown = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
        return f"its DCGM server does not tolerate the node's taint {shown} (dcgmAgent.tolerations)"
    return None


@dataclass(frozen=True)
class Repair:
    """What EKS node repair does to an unhealthy node: the action (or why none) and after how many minutes."""

    action: str | None
    after_minutes: int
    why: str


def repair_decision(config: Mapping[str, Any] | None, condition: str, reason: str, unhealthy: int, group_size: int) -> Repair:
    """Node repair's answer for one node of a managed node group (`nodeRepairConfig` as the provider sends it)."""
    if not config or not config.get("enabled"):
        return Repair(None, 0, "node repair is off for the node group (nodeRepairConfig.enabled)")
    count = config.get("maxUnhealthyNodeThresholdCount")
    percent = config.get("maxUnhealthyNodeThresholdPercentage")
    if count is not None and unhealthy > int(count):
        return Repair(None, 0, f"{unhealthy} unhealthy nodes is above maxUnhealthyNodeThresholdCount {count}: repair stops")
    if percent is not None and group_size and unhealthy * 100 > int(percent) * group_size:
        return Repair(None, 0, f"{unhealthy} of {group_size} unhealthy is above maxUnhealthyNodeThresholdPercentage {percent}: repair stops")
    for o in config.get("nodeRepairConfigOverrides") or []:
        if o.get("nodeMonitoringCondition") == condition and o.get("nodeUnhealthyReason") == reason:
            action = o.get("repairAction")
            if action == "NoAction":
                return Repair(None, 0, f"the override for {reason} says NoAction")
            return Repair(str(action), int(o.get("minRepairWaitTimeMins") or 0), f"override for {condition}/{reason}")
    after = DEFAULT_REPAIR_AFTER_MINUTES.get(condition)
    if after is None:
        return Repair(None, 0, f"{condition} is not a condition node repair acts on")
    return Repair(DEFAULT_ACTION, after, f"default for {condition}")


@dataclass(frozen=True)
class Replacement:
    """A replacement of one instance of a group whose reservation has `reserved` instances, `in_use` of them running."""

    launched: bool
    steps: tuple[str, ...]


def replace_instance(reserved: int | None, in_use: int, policy: str = "terminate-and-launch") -> Replacement:
    """The Auto Scaling group replacing one unhealthy instance.

    policy: "terminate-and-launch" (the default without an instance maintenance policy) or "launch-before-terminate";
    `reserved` None: no reservation bounds the launch.
    """
    steps: list[str] = []
    free = None if reserved is None else reserved - in_use
    if policy == "launch-before-terminate":
        if free is not None and free < 1:
            steps.append(f"launch into the reservation refused: {in_use} of {reserved} instances in use")
            steps.append("the unhealthy instance is kept until its replacement is healthy: the replacement never comes")
            return Replacement(False, tuple(steps))
        steps += ["launch the replacement", "terminate the unhealthy instance"]
        return Replacement(True, tuple(steps))
    steps.append("terminate the unhealthy instance and launch its replacement together")
    if free is not None and free < 1:
        steps.append(f"first launch refused: {in_use} of {reserved} reserved instances in use until the termination completes")
        steps.append("termination completes: one reserved instance available again")
    steps.append("replacement launched into the reservation" if reserved is not None else "replacement launched")
    return Replacement(True, tuple(steps))
