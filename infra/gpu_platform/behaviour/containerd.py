"""How containerd merges its main config with the files it imports, per major version.

Reproduces `LoadConfig` and `mergeConfig` of containerd 1.7 (services/server/config/config.go on the
release/1.7 branch) and 2.1 (cmd/containerd/server/config/config.go on release/2.1). The difference that matters to a GPU node:
1.7 replaces a whole plugin table with the imported file's (`to.Plugins[k] = v`), so a drop-in that
declares [plugins."io.containerd.grpc.v1.cri"] discards every CRI setting of the main file; 2.x
merges plugin tables key by key (mergo.Merge WithOverride over `map[string]interface{}`, commit
a21e379b6 "Allow sections of Plugins to be merged, and not overwritten as entire sections").
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

# Top-level tables mergeConfig replaces by key in both majors ("Replace entire sections instead of
# merging map's values"); 1.7 also replaces `plugins` that way.
_REPLACED_BY_KEY = ("stream_processors", "proxy_plugins", "timeouts")


def _empty(value: Any) -> bool:
    # mergo's isEmptyValue: zero values never override (false, 0, "", empty list or table).
    return value is None or value is False or value in (0, "", [], {})


def _mergo(to: Any, src: Any, unique_slices: bool) -> Any:
    """mergo.Merge(to, src, WithOverride) plus the slice rule of each major (append, or append unique)."""
    if isinstance(to, dict) and isinstance(src, dict):
        out = dict(to)
        for key, value in src.items():
            out[key] = _mergo(out[key], value, unique_slices) if key in out else copy.deepcopy(value)
        return out
    if isinstance(to, list) and isinstance(src, list):
        # 1.7: mergo.WithAppendSlice; 2.x: sliceTransformer, which appends only what is missing.
        return to + [v for v in src if not (unique_slices and v in to)]
    return to if _empty(src) else copy.deepcopy(src)


def merge_config(to: dict[str, Any], src: dict[str, Any], major: int) -> dict[str, Any]:
    """`mergeConfig(to, from)` of containerd `major` (1: the 1.7 release line, 2: the 2.1 line) over decoded TOML."""
    out = _mergo({k: v for k, v in to.items() if k != "plugins"}, {k: v for k, v in src.items() if k != "plugins"}, major >= 2)
    plugins = dict(to.get("plugins") or {})
    for name, table in (src.get("plugins") or {}).items():
        # 1.7: `to.Plugins[k] = v` (a whole toml.Tree per plugin); 2.x: mergo into map[string]interface{}.
        plugins[name] = _mergo(plugins[name], table, True) if major >= 2 and name in plugins else copy.deepcopy(table)
    if plugins:
        out["plugins"] = plugins
    for key in _REPLACED_BY_KEY:
        if key in src:
            out[key] = {**(to.get(key) or {}), **src[key]}
    return out


def load_config(files: Iterable[dict[str, Any]], major: int) -> dict[str, Any]:
    """`LoadConfig`: the main file first, then each import in order (filepath.Glob sorts), merged in turn."""
    out: dict[str, Any] = {}
    for config in files:
        out = merge_config(out, config, major)
    out.pop("imports", None)  # LoadConfig replaces it with the list of files it loaded
    return out
