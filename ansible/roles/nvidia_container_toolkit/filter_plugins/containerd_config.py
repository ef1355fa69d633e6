"""Filter: lay the NVIDIA runtime and CDI settings into containerd's own config file, keeping every other line.

containerd 1.x merges an imported file over the main one by replacing whole plugin tables
(containerd v1.7.x services/server/config/config.go, `mergeConfig`: "Replace entire sections
instead of merging map's values", `to.Plugins[k] = v`), so a drop-in that declares
[plugins."io.containerd.grpc.v1.cri"] wipes the node's SystemdCgroup, sandbox image and registry
settings. On 1.x the role therefore edits the table where it lives, in the main file, with tomlkit
(which keeps the node's comments, order and quoting), instead of writing a drop-in.
"""

from __future__ import annotations

from typing import Any

import tomlkit
from ansible.errors import AnsibleFilterError
from tomlkit.exceptions import TOMLKitError


def _lay(table: Any, settings: dict[str, Any]) -> None:
    """Set every leaf of `settings` in `table`, creating sub-tables as needed; other keys stay."""
    for key, value in settings.items():
        if isinstance(value, dict):
            if key not in table or not isinstance(table[key], dict):
                table[key] = tomlkit.table()
            _lay(table[key], value)
        elif table.get(key) != value:
            table[key] = value


def containerd_cri_merge(text: str, path: str, table: str, settings: dict[str, Any], version: int) -> str:
    """`text` (a containerd config, possibly empty) with `settings` laid into [plugins."<table>"]."""
    try:
        doc = tomlkit.parse(text or "")
    except TOMLKitError as err:
        raise AnsibleFilterError(f"{path}: not valid TOML ({err}); fix the file, containerd cannot read it either") from err
    found = doc.get("version")
    if found is None and not doc:
        doc["version"] = version
    elif found != version:
        # A version 1 file names the CRI plugin "cri" and version 3 belongs to containerd 2.x: laying
        # version 2 keys into either would be ignored by containerd.
        raise AnsibleFilterError(f"{path}: version = {found}; containerd {version - 1}.x with this role needs version = {version}")
    plugins = doc.get("plugins")
    if not isinstance(plugins, dict):
        plugins = doc["plugins"] = tomlkit.table(is_super_table=True)
    if table not in plugins:
        plugins[table] = tomlkit.table()
    _lay(plugins[table], settings)
    return tomlkit.dumps(doc)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"containerd_cri_merge": containerd_cri_merge}
