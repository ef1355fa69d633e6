"""An Ansible inventory as ansible-core itself reads it: hosts (ranges expanded), groups, and each host's variables.

Not a reproduction: ansible-core (the version the `ansible` package in uv.lock bundles) is run in-process, its
InventoryManager (inventory plugins: yaml, ini, host ranges `name[01:08]`) and VariableManager (group_vars and
host_vars beside the inventory, in Ansible's precedence: all, then parent groups before children, then the host).
Variables are returned as written (a Jinja expression stays a string): the pool description a rule compares
(`gpu_pool_*`) is plain data in group_vars.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleError
from ansible.inventory.manager import IGNORED, InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager


@dataclass(frozen=True)
class InventoryHost:
    """One host: its groups (every ancestor included) and its merged variables."""

    groups: frozenset[str]
    variables: dict[str, Any]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """ansible-core's Display writes its warnings to file descriptor 2 itself: keep them out of the gate's output."""
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _sources(path: Path) -> list[Path]:
    """The files InventoryManager considers inventory sources in a directory (its IGNORED patterns and vars dirs skipped)."""
    if path.is_file():
        return [path]
    out = []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).parts
        if (
            p.is_file()
            and not IGNORED.search(os.fsencode(p.name))
            and not {"group_vars", "host_vars"} & set(rel)
            and not any(x.startswith(".") for x in rel)
        ):
            out.append(p)
    return out


def read_inventory(path: Path) -> dict[str, InventoryHost] | str:
    """Every host of the inventory at `path`, or one line saying why ansible-core cannot read it.

    A source no plugin parses is an error here, where ansible-playbook would warn and go on with what it could read
    (InventoryManager.parse_source records the parsed ones in `processed_sources`).
    """
    loader = DataLoader()
    try:
        with _quiet():
            inventory = InventoryManager(loader=loader, sources=[str(path)])
            variables = VariableManager(loader=loader, inventory=inventory)
            parsed = {Path(p).resolve() for p in inventory._inventory.processed_sources if p}
            unparsed = [p for p in _sources(path) if p.resolve() not in parsed]
            if unparsed:
                return f"ansible-core cannot parse {unparsed[0].relative_to(path) if path.is_dir() else unparsed[0].name}"
            return {h.name: InventoryHost(frozenset(g.name for g in h.get_groups()), dict(variables.get_vars(host=h))) for h in inventory.get_hosts()}
    except (AnsibleError, OSError, ValueError) as e:
        return f"ansible-core cannot read it: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
