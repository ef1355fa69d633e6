"""Filters that read mig-parted configs the way mig-parted does."""

from __future__ import annotations

import re
from typing import Any


def mig_entry_for_device(config: dict[str, Any], name: str, device_ids: list[str]) -> dict[str, Any] | None:
    """Return the first entry of config `name` that applies to a GPU with one of these PCI device IDs."""
    wanted = {d.upper() for d in device_ids}
    for entry in (config.get("mig-configs") or {}).get(name) or []:
        filters = entry.get("device-filter")
        if isinstance(filters, str):
            filters = [filters]
        if not filters or wanted & {f.upper() for f in filters}:
            return dict(entry)
    return None


def mig_layout_memory_gb(entry: dict[str, Any] | None) -> int:
    """Total memory a layout asks for, from its profile names (`3g.40gb` x 2 = 80)."""
    total = 0
    for profile, count in ((entry or {}).get("mig-devices") or {}).items():
        match = re.match(r"^\d+g\.(\d+)gb", str(profile))
        if match:
            total += int(match.group(1)) * int(count)
    return total


class FilterModule:
    """mig-parted filters."""

    def filters(self) -> dict[str, Any]:
        """Return the filters."""
        return {"mig_entry_for_device": mig_entry_for_device, "mig_layout_memory_gb": mig_layout_memory_gb}
