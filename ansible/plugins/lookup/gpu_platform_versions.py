"""Lookup plugin: read pinned versions from the project's single version lockfile."""
# ruff: noqa: E402  (Ansible plugin layout: DOCUMENTATION/RETURN come before the imports)

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_platform_versions
author: gpu-platform
short_description: Read a value from the gpu-platform version lockfile
description:
  - Returns the value at a dotted key path in C(infra/gpu_platform/data/versions.yaml), the only
    place in the repository where version literals live.
  - Without terms, returns the whole lockfile.
  - The file is found relative to this plugin, or at E(GPU_PLATFORM_VERSIONS_FILE) when set.
  - When the host variable C(gpu_platform_versions_overlay) names an entry of the lockfile's
    C(overlays) section, that overlay's C(overrides) are laid over the pins first (a null removes
    a key), so an environment such as the Debian 12 lab reads its own explicit, documented pins.
options:
  _terms:
    description: Dotted key paths, for example C(nvidia_driver.version).
    required: false
    type: list
    elements: str
  default:
    description: Value returned for a missing key instead of failing.
    type: raw
  overlay:
    description: Overlay to apply; defaults to the host variable C(gpu_platform_versions_overlay).
    type: str
"""

EXAMPLES = r"""
- name: Show the pinned driver version
  ansible.builtin.debug:
    msg: "{{ lookup('gpu_platform_versions', 'nvidia_driver.version') }}"
"""

RETURN = r"""
_raw:
  description: The value at each key path.
  type: list
"""

import os
from pathlib import Path
from typing import Any

import yaml
from ansible.errors import AnsibleLookupError

from ansible.plugins.lookup import LookupBase

_MISSING = object()
_CACHE: dict[tuple[str, float], dict[str, Any]] = {}
SUPPORTED_SCHEMA = 1
# Each task runs in a forked worker that parses the lockfile again; libyaml does it ~10x faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def lockfile_path() -> Path:
    """Return the lockfile path: the env override, else the repository's copy."""
    override = os.environ.get("GPU_PLATFORM_VERSIONS_FILE")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[3] / "infra" / "gpu_platform" / "data" / "versions.yaml"


def load_lockfile(path: Path) -> dict[str, Any]:
    """Parse the lockfile once per modification time and check its schema."""
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError as exc:
        raise AnsibleLookupError(f"{path}: version lockfile not found ({exc.strerror})") from exc
    if key not in _CACHE:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
        if not isinstance(data, dict) or data.get("schema") != SUPPORTED_SCHEMA:
            raise AnsibleLookupError(f"{path}: schema: expected {SUPPORTED_SCHEMA}, got {data.get('schema') if isinstance(data, dict) else data!r}")
        _CACHE[key] = data
    return _CACHE[key]


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`base` with `override` laid over it key by key; a None in `override` removes the key."""
    merged = dict(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def with_overlay(data: dict[str, Any], name: str, path: Path | None = None) -> dict[str, Any]:
    """The lockfile with the named overlay's overrides applied (the same merge as gpu_platform.versions)."""
    overlays = data.get("overlays") or {}
    if name not in overlays:
        raise AnsibleLookupError(f"{path}: overlays.{name}: no such overlay in the version lockfile; defined: {', '.join(sorted(overlays)) or 'none'}")
    return _merge(data, overlays[name]["overrides"])


def resolve(data: dict[str, Any], dotted: str, default: Any = _MISSING, path: Path | None = None) -> Any:
    """Walk a dotted key path; fail with the file and key path when a key is missing."""
    node: Any = data
    walked: list[str] = []
    for part in dotted.split("."):
        walked.append(part)
        if isinstance(node, dict) and part in node:
            node = node[part]
            continue
        if default is not _MISSING:
            return default
        have = sorted(node) if isinstance(node, dict) else type(node).__name__
        raise AnsibleLookupError(f"{path}: {'.'.join(walked)}: key not in the version lockfile; present: {have}")
    return node


class LookupModule(LookupBase):
    """Return lockfile values by dotted key path."""

    def run(self, terms: list[str], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        """Resolve each term against the lockfile."""
        self.set_options(var_options=variables, direct=kwargs)
        default = self.get_option("default") if "default" in kwargs else _MISSING
        path = lockfile_path()
        data = load_lockfile(path)
        overlay = kwargs.get("overlay") or (variables or {}).get("gpu_platform_versions_overlay")
        if overlay and "{{" in str(overlay):
            overlay = self._templar.template(overlay)
        if overlay:
            data = with_overlay(data, str(overlay), path)
        if not terms:
            return [data]
        return [resolve(data, str(term), default, path) for term in terms]
