"""EKS node repair and the node monitoring agent as behaviour.node_health reproduces them (sources in its docstring)."""

from __future__ import annotations

import pytest

from gpu_platform.aws.node_repair import REPLACE_XIDS, node_repair_config
from gpu_platform.behaviour import node_health
from gpu_platform.behaviour.kueue import recovery_timeout_seconds


def _api_names(config: dict) -> dict:
    """The plan's camelCase names, as the provider sends them."""
    parts = {
        "max_parallel_nodes_repaired_count": "maxParallelNodesRepairedCount",
        "max_unhealthy_node_threshold_count": "maxUnhealthyNodeThresholdCount",
        "max_unhealthy_node_threshold_percentage": "maxUnhealthyNodeThresholdPercentage",
        "node_repair_config_overrides": "nodeRepairConfigOverrides",
        "node_monitoring_condition": "nodeMonitoringCondition",
        "node_unhealthy_reason": "nodeUnhealthyReason",
        "min_repair_wait_time_mins": "minRepairWaitTimeMins",
        "repair_action": "repairAction",
    }
    out = {parts.get(k, k): v for k, v in config.items()}
    out["nodeRepairConfigOverrides"] = [{parts[k]: v for k, v in o.items()} for o in config["node_repair_config_overrides"]]
    return out


def test_only_well_known_xids_set_a_condition() -> None:
    assert node_health.xid_condition(79) == ("AcceleratedHardwareReady", "NvidiaXID79Error")
    assert node_health.xid_condition(13) is None  # an application's fault: an event, no repair
    assert set(REPLACE_XIDS) <= node_health.WELL_KNOWN_XIDS


@pytest.mark.parametrize(("unhealthy", "acts"), [(1, True), (2, True), (3, False)])
def test_repair_stops_above_half_the_group(unhealthy: int, acts: bool) -> None:
    config = _api_names(node_repair_config(max_size=4))
    decision = node_health.repair_decision(config, "AcceleratedHardwareReady", "NvidiaXID79Error", unhealthy, 4)
    assert (decision.action == "Replace") is acts, decision.why


@pytest.mark.parametrize("max_size", [1, 2, 16])
def test_a_group_scaled_down_to_one_node_is_still_repaired(max_size: int) -> None:
    """EKS takes a percentage of the nodes the group has now: a count keeps a lone failed node repairable."""
    config = _api_names(node_repair_config(max_size=max_size))
    assert node_health.repair_decision(config, "AcceleratedHardwareReady", "NvidiaXID79Error", 1, 1).action == "Replace"


def test_other_reasons_get_the_managed_node_groups_default() -> None:
    config = _api_names(node_repair_config(max_size=4))
    decision = node_health.repair_decision(config, "AcceleratedHardwareReady", "NvidiaXID48Error", 1, 4)
    assert (decision.action, decision.after_minutes) == ("Replace or Reboot", 10)


def test_a_full_reservation_is_refilled_only_by_terminating_first() -> None:
    assert node_health.replace_instance(4, 4).launched
    assert node_health.replace_instance(4, 4).steps[1].startswith("first launch refused")
    assert not node_health.replace_instance(4, 4, "launch-before-terminate").launched
    assert node_health.replace_instance(None, 4, "launch-before-terminate").launched


@pytest.mark.parametrize(
    ("wait", "seconds"),
    [
        (None, 1800.0),
        ({"timeout": "35m"}, 2100.0),
        ({"timeout": "35m", "recoveryTimeout": "10m"}, 600.0),
        ({"recoveryTimeout": "0s"}, None),
        ({"timeout": "0s"}, 1800.0),
    ],
)
def test_kueue_recovery_timeout_defaults(wait: dict | None, seconds: float | None) -> None:
    config = {} if wait is None else {"waitForPodsReady": wait}
    assert recovery_timeout_seconds(config) == seconds


def test_a_bad_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Go duration"):
        recovery_timeout_seconds({"waitForPodsReady": {"timeout": "ten minutes"}})
