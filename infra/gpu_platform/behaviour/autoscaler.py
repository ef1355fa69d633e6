"""cluster-autoscaler 1.35 (AWS provider): the node it imagines for an Auto Scaling group at zero nodes.

kubernetes/autoscaler at the lockfile's cluster-autoscaler image tag, cloudprovider/aws/aws_manager.go `buildNodeFromTemplate`:
capacity cpu, memory and `nvidia.com/gpu` from the instance type, then every
`k8s.io/cluster-autoscaler/node-template/resources/<name>` tag (`extractAllocatableResourcesFromAsg`)
overrides or adds a resource; labels from `.../node-template/label/<key>` tags (`extractLabelsFromAsg`)
joined with the EKS managed node group's labels; taints from `.../node-template/taint/<key>` tags whose
value is `<value>:<effect>` (`extractTaintsFromAsg`) plus the node group's taints. Allocatable = capacity.
A pending pod triggers a scale-up of that group only if it passes the scheduler's filters on that node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PREFIX = "k8s.io/cluster-autoscaler/node-template/"
_TAINT_VALUE = re.compile(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)")
NVIDIA_GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class TemplateNode:
    """The node the autoscaler simulates for a group at zero: labels, taints, allocatable."""

    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    allocatable: Mapping[str, str]


def template_node(
    vcpu: int,
    memory_mib: int,
    gpus: int,
    tags: Mapping[str, str],
    group_labels: Mapping[str, str] | None = None,
    group_taints: Sequence[Mapping[str, Any]] = (),
) -> TemplateNode:
    """aws_manager.go `buildNodeFromTemplate` for one ASG: instance facts, then the node-template tags."""
    capacity: dict[str, str] = {"pods": "110", "cpu": str(vcpu), NVIDIA_GPU: str(gpus), "memory": str(memory_mib * 1024 * 1024)}
    labels: dict[str, str] = {}
    taints: list[dict[str, str]] = []
    for key, value in tags.items():
        if key.startswith(PREFIX + "resources/"):
            capacity[key.removeprefix(PREFIX + "resources/")] = value
        elif key.startswith(PREFIX + "label/"):
            labels[key.removeprefix(PREFIX + "label/")] = value
        elif key.startswith(PREFIX + "taint/") and _TAINT_VALUE.fullmatch(value):
            taint_value, effect = value.split(":", 1)
            taints.append({"key": key.removeprefix(PREFIX + "taint/"), "value": taint_value, "effect": effect})
    # joinNodeLabelsChoosingUserValuesOverAPIValues: tag labels win over the node group's.
    labels = {**(group_labels or {}), **labels}
    known = {(t["key"], t["effect"]) for t in taints}
    taints += [dict(t) for t in group_taints if (t.get("key"), t.get("effect")) not in known]
    return TemplateNode(labels, tuple(taints), capacity)
