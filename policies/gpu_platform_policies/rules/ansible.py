"""Repository rule over the Ansible tree: inventories never override a version the lockfile pins."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.versions import Lockfile
from gpu_platform_policies.model import Context, Finding, rule
from gpu_platform_policies.view import walk

# Variable names that carry a version: nvidia_driver_version, *_branch, *_package_version, *_tag.
VERSION_VAR = re.compile(r"(^|_)(version|versions|branch|tag)$")


def inventory_files(root: Path) -> list[Path]:
    """Inventory host files and every group_vars/host_vars file under ansible/."""
    base = root / "ansible"
    if not base.is_dir():
        return []
    found: set[Path] = set()
    for pattern in ("**/group_vars/**/*", "**/host_vars/**/*", "inventories/**/*"):
        for p in base.glob(pattern):
            if p.is_file() and p.suffix in (".yml", ".yaml", "") and ".git" not in p.parts:
                found.add(p)
    return sorted(found)


def pinned_values(lock: Lockfile) -> set[str]:
    """Every version string the lockfile pins (so a copied literal is caught whatever its name)."""
    values: set[str] = set()
    for _, key, value in walk(lock.model_dump(by_alias=True, exclude={"compatibility"})):
        if isinstance(value, str) and key in ("version", "tag", "branch", "ami_release_version") and any(c.isdigit() for c in value):
            values.add(value)
    for pkgs in (lock.nvidia_driver.packages, lock.cuda.packages, lock.container_toolkit.packages, lock.dcgm.packages):
        values.update(pkgs.values())
    return values


def _literal(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and "{{" not in value and value.strip() != ""


@rule(
    "ansible-no-version-override",
    "No Ansible inventory, group_vars or host_vars file sets a version literal; versions come from the lockfile.",
    "mandatory",
    "repository",
    category="ansible",
)
def ansible_no_version_override(root: Path, ctx: Context) -> Iterator[Finding]:
    """An inventory pin silently forks one environment off the lockfile everything else reads."""
    pinned = pinned_values(ctx.lock)
    for path in inventory_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue  # not YAML (an INI inventory or a vault file): ansible-lint covers those
        for doc in docs:
            for where, key, value in walk(doc):
                if VERSION_VAR.search(str(key)) and _literal(value):
                    yield Finding(rel, f"{where} sets {value!r}; read it from the lockfile (lookup('gpu_platform_versions', ...))", file=rel)
                elif isinstance(value, str) and value in pinned:
                    yield Finding(rel, f"{where} repeats the pinned version {value!r}; read it from the lockfile instead", file=rel)
