"""Filter: how many GPUs (or MIG slices) a Node advertises to the scheduler."""

from __future__ import annotations

import re
from typing import Any

# k8s-device-plugin advertises whole GPUs as nvidia.com/gpu (time-slicing and MPS multiply the
# count, the `single` MIG strategy keeps the name), with the `mixed` MIG strategy one resource per
# profile, nvidia.com/mig-<profile>, and with `renameByDefault` a `.shared` suffix on either.
GPU_RESOURCE = re.compile(r"^nvidia\.com/(gpu|mig-[0-9]+g\.[0-9]+gb(\+[a-z0-9]+)*)(\.shared)?$")


def advertised_gpus(node: dict[str, Any] | None) -> int:
    """Sum of the NVIDIA GPU resources in a Node's status.allocatable (0 when there is no Node)."""
    allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
    return sum(int(str(count)) for name, count in allocatable.items() if GPU_RESOURCE.match(name))


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"advertised_gpus": advertised_gpus}
