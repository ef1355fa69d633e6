"""EKS node repair on GPU node groups: a node whose GPU fails is cordoned, drained and replaced without a person.

The node monitoring agent add-on (lockfile `eks.addons`, configured in gpu_platform.aws.cluster) turns a fatal
XID into the `AcceleratedHardwareReady` condition with reason `NvidiaXID<code>Error`; node repair acts on it
(gpu_platform.behaviour.node_health reproduces each step, with its sources).

Left to itself a managed node group picks "Replace or Reboot" for that condition. A reboot is not a power
cycle: the XIDs NVIDIA's catalog resolves with a bare-metal restart (79, the GPU fell off the bus), with a
VM restart (151) or with support (142) are overridden to Replace, as the agent's own notes in
dcgm_policies.go map them on EKS. One node at a time is repaired (on reserved capacity a full reservation
frees one instance per termination), and repair stops when more than half the group's nodes are unhealthy:
that is a bad driver or AMI, not a bad GPU, and replacing every node would not help.
"""

from __future__ import annotations

from typing import Any

from gpu_platform.behaviour.node_health import CONDITION, DEFAULT_REPAIR_AFTER_MINUTES, xid_condition

# NVIDIA XID catalog resolution buckets RESTART_BM (79), RESTART_VM (151) and CONTACT_SUPPORT (142).
REPLACE_XIDS = (79, 142, 151)
MAX_PARALLEL_REPAIRS = 1


def max_unhealthy_nodes(max_size: int) -> int:
    """Unhealthy nodes above which repair stops: half the group at its largest, at least one.

    A count, not a percentage: EKS takes the percentage of the nodes the group has now, so a pool scaled down to
    one node would be 100 % unhealthy with that node down and never repaired.
    """
    return max(1, max_size // 2)


def node_repair_config(max_size: int) -> dict[str, Any]:
    """A GPU node group's `nodeRepairConfig` (botocore eks `NodeRepairConfig`), in the provider's input names."""
    overrides = []
    for xid in REPLACE_XIDS:
        condition = xid_condition(xid)
        assert condition is not None, f"XID {xid} sets no node condition in the agent"
        overrides.append(
            {
                "node_monitoring_condition": condition[0],
                "node_unhealthy_reason": condition[1],
                "min_repair_wait_time_mins": DEFAULT_REPAIR_AFTER_MINUTES[CONDITION],
                "repair_action": "Replace",
            }
        )
    return {
        "enabled": True,
        "max_parallel_nodes_repaired_count": MAX_PARALLEL_REPAIRS,
        "max_unhealthy_node_threshold_count": max_unhealthy_nodes(max_size),
        "node_repair_config_overrides": overrides,
    }
