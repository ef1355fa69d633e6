"""The GPU Operator's per-node operand labels (NVIDIA/gpu-operator at the lockfile's chart version).

controllers/state_manager.go: every GPU node of the container workload configuration gets the `gpuStateLabels`
deploy labels set to "true" (`addGPUStateLabels`), except that a label the node already carries with a non-empty
value is honoured; each operand's DaemonSet selects its own label = "true" (assets/state-device-plugin/
0500_daemonset.yaml: `nodeSelector: nvidia.com/gpu.deploy.device-plugin: "true"`). So a node labelled
`nvidia.com/gpu.deploy.device-plugin=false` (a DRA pool, gpu_platform.pools.node_labels) never runs the device plugin.
"""

from __future__ import annotations

from collections.abc import Mapping

# gpuStateLabels[gpuWorkloadConfigContainer] (controllers/state_manager.go at the lockfile's chart version).
CONTAINER_STATE_LABELS = {
    "nvidia.com/gpu.deploy.driver": "true",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.container-toolkit": "true",
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.dcgm": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    "nvidia.com/gpu.deploy.node-status-exporter": "true",
    "nvidia.com/gpu.deploy.operator-validator": "true",
    "nvidia.com/gpu.deploy.client": "true",
}
DEVICE_PLUGIN_SELECTOR = {"nvidia.com/gpu.deploy.device-plugin": "true"}
OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"


def labelled(node_labels: Mapping[str, str]) -> dict[str, str]:
    """A GPU node's labels after the operator's state labelling (`addGPUStateLabels`; `operands=false` removes them all)."""
    out = dict(node_labels)
    if out.get(OPERANDS_LABEL) == "false":
        return {k: v for k, v in out.items() if k not in CONTAINER_STATE_LABELS}
    for key, value in CONTAINER_STATE_LABELS.items():
        if out.get(key, "") == "":
            out[key] = value
    return out


def runs_device_plugin(node_labels: Mapping[str, str]) -> bool:
    """The device plugin DaemonSet's pod lands on the node (its nodeSelector over the labelled node)."""
    labels = labelled(node_labels)
    return all(labels.get(k) == v for k, v in DEVICE_PLUGIN_SELECTOR.items())
