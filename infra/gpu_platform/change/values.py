"""Old and new values of a change, as a reviewer reads them: per resource field and per stack key, secrets masked.

Resource inputs are compared as the provider diff compares them (behaviour.provider_diff.changed_paths):
mappings key by key, lists and scalars whole. Stack config is compared by the keys a user writes,
with list entries that carry a `name` (pools, tenants, quotas of a pool) matched by that name, so adding
a pool does not show every later pool as changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform.spec.secrets import PLACEHOLDER, SECRET_KEY_NAME, is_secure

MASK = "(secret)"
ABSENT = "(absent)"
SECRET_TYPES = ("kubernetes:core/v1:Secret",)
SHOWN_CHARS = 80


class _Absent:
    """A key one side does not have (JSON: null with `"absent": "before"|"after"`)."""

    def __repr__(self) -> str:
        return ABSENT


MISSING: Any = _Absent()


@dataclass(frozen=True)
class ValueChange:
    """One field or stack key, its value before and after (MISSING where a side lacks it; secrets already masked)."""

    key: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        """`{"key", "before", "after"}`; a side without the key is left out of the object."""
        out: dict[str, Any] = {"key": self.key}
        if self.before is not MISSING:
            out["before"] = self.before
        if self.after is not MISSING:
            out["after"] = self.after
        return out

    def text(self, width: int = SHOWN_CHARS) -> str:
        """`key: old -> new`, each value compact and cut to `width` characters."""
        return f"{self.key}: {shown(self.before, width)} -> {shown(self.after, width)}"


def shown(value: Any, width: int = SHOWN_CHARS) -> str:
    """A value as one short line: JSON-compact, cut with the number of characters left out."""
    if value is MISSING:
        return ABSENT
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else f"{text[:width]}… (+{len(text) - width} chars)"


def secret(key: str, value: Any, type_token: str = "") -> bool:
    """Whether a value must not be printed: a `secure:` config value, its offline placeholder, a Secret's data, a credential-named key."""
    if value is MISSING or value is None:
        return False
    if is_secure(value) or value == PLACEHOLDER:
        return True
    if type_token in SECRET_TYPES and key.split(".", 1)[0] in ("data", "stringData"):
        return True
    last = key.rsplit(".", 1)[-1].split("[", 1)[0]
    return bool(SECRET_KEY_NAME.search(last)) and isinstance(value, str)


def masked(value: Any, key: str = "") -> Any:
    """`value` with every secret inside it masked, however deep: a `secure:` value, the offline placeholder, a credential-named key's text."""
    if value is MISSING or value is None:
        return value
    if is_secure(value) or value == PLACEHOLDER:
        return MASK
    if isinstance(value, Mapping):
        return {k: MASK if isinstance(v, str | int) and SECRET_KEY_NAME.search(str(k)) else masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        # A tag list ({key: db-password, value: ...}) names its secret in a sibling field.
        out = []
        for item in value:
            named = isinstance(item, Mapping) and SECRET_KEY_NAME.search(str(item.get("key", ""))) and "value" in item
            out.append(masked({**item, "value": MASK} if named else item, key))
        return out
    return value


def _masked(key: str, before: Any, after: Any, type_token: str = "") -> ValueChange:
    hide = secret(key, before, type_token) or secret(key, after, type_token)
    if not hide:
        return ValueChange(key, masked(before, key), masked(after, key))
    return ValueChange(key, MASK if before is not MISSING else MISSING, MASK if after is not MISSING else MISSING)


def field_changes(type_token: str, before: Any, after: Any, path: str = "") -> list[ValueChange]:
    """Every input that differs between two inputs mappings, in changed_paths' order and with its paths."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[ValueChange] = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}.{key}" if path else str(key)
            out += field_changes(type_token, before.get(key, MISSING), after.get(key, MISSING), sub)
        return out
    if before == after:
        return []
    return [_masked(path or "<inputs>", before, after, type_token)]


NAME_KEYS = ("name", "pool")  # what names a list entry: pools and tenants by `name`, a tenant's quotas by `pool`


def _named(items: list[Any]) -> dict[str, Any] | None:
    """A list of mappings that each carry a distinct string name (NAME_KEYS), by name; else None (compared whole)."""
    for field_name in NAME_KEYS:
        if items and all(isinstance(i, Mapping) and isinstance(i.get(field_name), str) for i in items):
            by_name = {str(i[field_name]): i for i in items}
            if len(by_name) == len(items):
                return by_name
    return None


def _same_key(before: list[Any], after: list[Any]) -> bool:
    """Both sides name their entries by the same key (else a rename of the key would pair unrelated entries)."""
    return next((k for k in NAME_KEYS if all(k in i for i in before)), None) == next((k for k in NAME_KEYS if all(k in i for i in after)), None)


def key_changes(before: Any, after: Any, path: str = "") -> list[ValueChange]:
    """Stack keys whose value differs, by the names of named list entries (`gpu-platform:nodePools[train].scaling.max`)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping) and not is_secure(before) and not is_secure(after):
        out: list[ValueChange] = []
        for key in list(before) + [k for k in after if k not in before]:
            sub = f"{path}.{key}" if path else str(key)
            out += key_changes(before.get(key, MISSING), after.get(key, MISSING), sub)
        return out
    if isinstance(before, list) and isinstance(after, list):
        old, new = _named(before), _named(after)
        if old is not None and new is not None and _same_key(before, after):
            out = []
            for name in list(old) + [n for n in new if n not in old]:
                out += key_changes(old.get(name, MISSING), new.get(name, MISSING), f"{path}[{name}]")
            return out
    if before == after:
        return []
    return [_masked(path, before, after)]
