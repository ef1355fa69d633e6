"""Filters: the waves of a rolling driver upgrade, one pool at a time, each wave a node count.

A pool is the inventory group `pool_*` a GPU node belongs to. Each pool goes through in waves of at
most `gpu_pool_max_unavailable` nodes (an inventory variable of the pool; default one node in
eight, at least one: 1 for pools of up to 15 nodes), so a wave never takes more of one pool out of
service than the pool can spare, and never mixes pools.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

POOL_PREFIX = "pool_"
MAX_UNAVAILABLE_VAR = "gpu_pool_max_unavailable"


def _pool(host: str, groups: Mapping[str, list[str]]) -> str:
    pools = sorted(g for g, members in groups.items() if g.startswith(POOL_PREFIX) and host in members)
    return pools[0] if pools else "ungrouped"


def default_max_unavailable(pool_size: int) -> int:
    """One node in eight, at least one (1 for pools of up to 15 nodes)."""
    return max(1, pool_size // 8)


def driver_upgrade_waves(
    hosts: Iterable[str], groups: Mapping[str, list[str]], hostvars: Mapping[str, Any], limit: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """[{pool, max_unavailable, hosts}] in rollout order: pools by name, each in inventory order.

    Pools come from `groups`; a pool's maximum from its first host's `gpu_pool_max_unavailable`
    (`hostvars` is empty where Ansible templates without it, as `--list-hosts` does: defaults then).
    `limit`: the hosts --limit leaves (None: all), so the waves are planned over what will run.
    """
    allowed = None if limit is None else set(limit)
    pools: dict[str, list[str]] = {}
    for host in (h for h in hosts if allowed is None or h in allowed):
        pools.setdefault(_pool(host, groups), []).append(host)
    waves = []
    for pool, members in sorted(pools.items()):
        raw = (hostvars.get(members[0]) or {}).get(MAX_UNAVAILABLE_VAR) if hostvars else None
        size = default_max_unavailable(len(members)) if raw in (None, "") else raw
        if isinstance(size, bool) or not str(size).isdigit() or int(size) < 1:
            raise AnsibleFilterError(f"{pool}: {MAX_UNAVAILABLE_VAR}: {size!r} is not a node count; allowed: an integer from 1 to {len(members)}")
        count = min(int(size), len(members))
        waves += [{"pool": pool, "max_unavailable": count, "hosts": members[i : i + count]} for i in range(0, len(members), count)]
    return waves


def driver_upgrade_order(waves: list[dict[str, Any]]) -> list[str]:
    """Every host in rollout order (the rollout play's `hosts`)."""
    return [host for wave in waves for host in wave["hosts"]]


def driver_upgrade_serial(waves: list[dict[str, Any]]) -> list[int]:
    """Each wave's node count (the rollout play's `serial`, which Ansible reads as batch sizes in order)."""
    return [len(wave["hosts"]) for wave in waves]


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"driver_upgrade_waves": driver_upgrade_waves, "driver_upgrade_order": driver_upgrade_order, "driver_upgrade_serial": driver_upgrade_serial}
