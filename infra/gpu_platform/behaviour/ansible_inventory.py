"""An Ansible inventory as ansible-core itself reads it: hosts (ranges expanded), groups, and each host's variables.

Not a reproduction: ansible-core (the version the `ansible` package in uv.lock bundles) is run in-process, its
InventoryManager (inventory plugins: yaml, ini, host ranges `name[01:08]`) and VariableManager (group_vars and
host_vars beside the inventory, in Ansible's precedence: all, then parent groups before children, then the host).
Variables are returned as written (a Jinja expression stays a string); `resolve` templates one with ansible-core's
own Templar over the host's variables.

The inventory is input to the gate, so it is read as data only: just the `yaml` and `ini` inventory plugins (never
`script`, which would run an executable of the directory, nor `auto`, which loads any plugin a YAML file names),
no symlink anywhere in the tree, every file within a size cap and its YAML within input_limits' alias and nesting
bounds, and host ranges (`node[0001:9999]`) counted before ansible-core expands them.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ansible.constants as ansible_constants
from ansible.errors import AnsibleError
from ansible.inventory.manager import IGNORED, InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.vars.manager import VariableManager

from gpu_platform.errors import ConfigError
from gpu_platform.input_limits import Limits, check_yaml

MAX_FILE_BYTES = 1 * 2**20
MAX_HOSTS = 10_000
LIMITS = Limits(max_bytes=MAX_FILE_BYTES, max_depth=32, max_nodes=200_000)
_NUMERIC_RANGE = re.compile(r"\[(\d+):(\d+)(?::(\d+))?\]")
_ALPHA_RANGE = re.compile(r"\[([A-Za-z]):([A-Za-z])(?::(\d+))?\]")


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


def _range_hosts(line: str) -> int:
    """How many hosts one line's patterns expand to (ansible-core plugins/inventory `expand_hostname_range`)."""
    count = 1
    for m in _NUMERIC_RANGE.finditer(line):
        lo, hi, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
        count *= max(0, (hi - lo) // max(step, 1) + 1)
    for m in _ALPHA_RANGE.finditer(line):
        lo, hi, step = ord(m.group(1)), ord(m.group(2)), int(m.group(3) or 1)
        count *= max(0, (hi - lo) // max(step, 1) + 1)
    return count


def _refusal(path: Path, root: Path) -> str | None:
    """Why this inventory tree is not read at all (outside the root, a symlink, too big, a host range bomb), or None."""
    try:
        if not path.resolve().is_relative_to(root.resolve()):
            return f"it lies outside {root}"
    except OSError as e:
        return f"it cannot be resolved: {e}"
    hosts = 0
    for p in [path, *sorted(path.rglob("*"))]:
        rel = p.relative_to(path.parent)
        if p.is_symlink():
            return f"{rel} is a symlink; an inventory the gate reads holds plain files only"
        if not p.is_file():
            continue
        if p.stat().st_size > MAX_FILE_BYTES:
            return f"{rel} is larger than {MAX_FILE_BYTES // 2**20} MiB"
        text = p.read_text(errors="replace")
        try:
            check_yaml(text, str(rel), LIMITS, "an Ansible inventory")
        except ConfigError as e:
            return str(e.problems[0])
        hosts += sum(_range_hosts(line) for line in text.splitlines() if "[" in line)
        if hosts > MAX_HOSTS:
            return f"its host patterns expand to more than {MAX_HOSTS:,} hosts"
    return None


def read_inventory(path: Path, root: Path | None = None, playbook_dir: Path | None = None) -> dict[str, InventoryHost] | str:
    """Every host of the inventory at `path`, or one line saying why it is not read.

    A source no plugin parses is an error here, where ansible-playbook would warn and go on with what it could read
    (InventoryManager.parse_source records the parsed ones in `processed_sources`). With `playbook_dir`, the
    group_vars and host_vars beside the playbooks count too, as when ansible-playbook runs a playbook of that
    directory (ansible-core's host_group_vars plugin reads both).
    """
    base = root or path.parent
    refused = _refusal(path, base)
    for extra in (playbook_dir / "group_vars", playbook_dir / "host_vars") if playbook_dir else ():
        if refused is None and extra.exists():
            refused = _refusal(extra, base)
    if refused:
        return f"not read: {refused}"
    loader = DataLoader()
    if playbook_dir is not None:
        loader.set_basedir(str(playbook_dir))
    enabled = ansible_constants.INVENTORY_ENABLED
    ansible_constants.INVENTORY_ENABLED = ["yaml", "ini"]
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
    finally:
        ansible_constants.INVENTORY_ENABLED = enabled


def resolve(host: InventoryHost, name: str) -> Any:
    """A host variable as a play sees it: its Jinja templated by ansible-core's Templar over the host's variables.

    Only the variables the inventory defines are known here (no facts, no role defaults): an expression that needs
    more stays unresolved and is returned as written.
    """
    value = host.variables.get(name)
    if not isinstance(value, str) or "{{" not in value:
        return value
    try:
        with _quiet():
            return Templar(loader=DataLoader(), variables=host.variables).template(value)
    except (AnsibleError, ValueError, TypeError, RecursionError):
        return value
