"""GPU Operator Helm values: only keys the pinned chart knows, driver ownership, upgrade policy, sharing."""

from __future__ import annotations

from typing import Any

import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.gpu_operator import DCGM_METRICS_CONFIGMAP, gpu_operator_values
from gpu_platform.k8s.sharing import MIG_CONFIGMAP, SHARING_CONFIGMAP
from gpu_platform.pools import node_taints
from tests.conftest import plan_for, require_shared_crds, spec_for
from tests.k8s.helpers import helm_values

# Values whose children are free-form maps or lists (labels, selectors, env), not chart keys.
FREE_FORM = {"operator.nodeSelector", "daemonsets.tolerations", "node-feature-discovery.worker.tolerations", "validator.plugin.env"}
# Keys the chart's templates read that its values.yaml documents only in comments.
COMMENTED = {"dcgmExporter.config": ("# config:", "# name: custom-dcgm-exporter-metrics")}


def key_paths(values: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        out.append(path)
        if isinstance(value, dict) and path not in FREE_FORM and path not in COMMENTED:
            out += key_paths(value, f"{path}.")
    return out


def _lookup(tree: Any, path: str) -> bool:
    node = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_every_value_key_exists_in_the_chart(stack: str) -> None:
    ref_path = require_shared_crds() / "gpu-operator/v26.7.0/values-reference.yaml"
    reference = yaml.safe_load(ref_path.read_text())
    text = ref_path.read_text()
    values = helm_values(stack, "gpu-operator")
    for path in key_paths(values):
        if path in COMMENTED:
            assert all(line in text for line in COMMENTED[path]), f"{path} is no longer documented by the chart"
            continue
        assert _lookup(reference, path), f"gpu-operator value {path} is not a key of the v26.7.0 chart"


def test_chart_version_is_the_lockfiles() -> None:
    spec = spec_for("prod")
    release = plan_for("prod").named("gpu-operator-release").inputs
    assert release["version"] == spec.lock.chart("gpu-operator").version
    assert release["chart"] == "gpu-operator"


def test_preinstalled_driver_turns_driver_and_toolkit_off(stack: str) -> None:
    values = helm_values(stack, "gpu-operator")
    assert spec_for(stack).gpu_operator.driver == "preinstalled"
    assert values["driver"]["enabled"] is False
    assert values["toolkit"]["enabled"] is False


def test_operator_managed_driver_is_on_and_pinned() -> None:
    spec = spec_for("staging")
    spec = spec.model_copy(update={"gpu_operator": spec.gpu_operator.model_copy(update={"driver": "operator"})})
    values = gpu_operator_values(spec, load_catalog())
    assert values["driver"]["enabled"] is True
    assert values["driver"]["version"] == spec.lock.nvidia_driver.version
    assert f"{values['driver']['repository']}/{values['driver']['image']}" == spec.lock.image("driver").repository
    assert values["toolkit"] == {
        "enabled": True,
        "repository": "nvcr.io/nvidia/k8s",
        "image": "container-toolkit",
        "version": spec.lock.image("container-toolkit").tag,
    }


def test_upgrade_policy_follows_the_spec() -> None:
    policy = helm_values("prod", "gpu-operator")["driver"]["upgradePolicy"]
    assert policy["autoUpgrade"] is False
    assert policy["maxParallelUpgrades"] == 1
    assert policy["maxUnavailable"] == "1"
    assert policy["drain"] == {"enable": True, "force": False, "timeoutSeconds": 1800, "deleteEmptyDir": True}
    assert policy["gpuPodDeletion"]["timeoutSeconds"] == 1800


def test_node_agents_tolerate_every_gpu_pool_taint(stack: str) -> None:
    values = helm_values(stack, "gpu-operator")
    tolerated = {t["key"] for t in values["daemonsets"]["tolerations"]}
    nfd = {t["key"] for t in values["node-feature-discovery"]["worker"]["tolerations"]}
    for pool in spec_for(stack).node_pools:
        for taint in node_taints(pool):
            assert taint.key in tolerated and taint.key in nfd, (pool.name, taint)


def test_operator_reads_the_platform_configmaps() -> None:
    values = helm_values("prod", "gpu-operator")
    assert values["devicePlugin"]["config"] == {"create": False, "name": SHARING_CONFIGMAP, "default": "default"}
    assert values["migManager"]["config"]["name"] == MIG_CONFIGMAP and values["migManager"]["enabled"] is True
    assert values["mig"]["strategy"] == ""  # per-node configs decide (see tests/k8s/test_sharing.py)
    assert values["dcgmExporter"]["config"] == {"name": DCGM_METRICS_CONFIGMAP}
    assert values["dcgmExporter"]["serviceMonitor"] == {"enabled": False}  # the platform's own ServiceMonitor replaces it
    dev = helm_values("dev", "gpu-operator")
    assert dev["migManager"]["enabled"] is False  # L4 and A10G cannot do MIG
    assert dev["mig"]["strategy"] == ""
