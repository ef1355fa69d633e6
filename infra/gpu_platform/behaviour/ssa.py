"""Server-side apply as kube-apiserver runs it: the fields an applied configuration owns, and the object it leaves.

The API server turns its OpenAPI into a structured-merge-diff schema (kube-openapi
pkg/schemaconv/smd.go): `VisitArray` makes a list atomic unless `x-kubernetes-list-type` is `set` or
`map` (or, without a list type, `x-kubernetes-patch-strategy: merge`), both then associative;
`VisitKind` and `VisitMap` leave structs and maps separable (key by key) unless
`x-kubernetes-map-type: atomic`. structured-merge-diff typed/merge.go `mergingWalker` then merges the
live object (lhs) with the applied configuration (rhs): `doList`/`doMap` treat an atomic container
as one leaf, and a leaf takes the applier's value (`ruleKeepRHS`); separable maps and associative
lists merge item by item. So an apply naming an atomic list owns all of it, and a forced apply
replaces what other managers put there. The schema is the OpenAPI that kubernetes-validate bundles
for each Kubernetes minor (the API server's own, with its `x-kubernetes-*` extensions).
Not reproduced: pruning fields a manager stops applying (merge/update.go `Updater.Apply`, `prune`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate

Path_ = tuple[str, ...]


@cache
def openapi_definitions(minor: str) -> Mapping[str, Any]:
    """The `$defs` of the API server's OpenAPI for Kubernetes `minor` (e.g. "1.35"), as kubernetes-validate bundles it."""
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"v{minor}.0-local" / "_definitions.json"
    return dict(json.loads(root.read_text(encoding="utf-8"))["$defs"])


def definition(defs: Mapping[str, Any], kind: str, group: str = "", version: str = "v1") -> Mapping[str, Any]:
    """The schema of one kind (its `x-kubernetes-group-version-kind`)."""
    for schema in defs.values():
        if {"group": group, "version": version, "kind": kind} in schema.get("x-kubernetes-group-version-kind", []):
            return schema
    raise KeyError(f"{group}/{version} {kind}")


def _deref(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if ref:
        target = defs[ref.rsplit("/", 1)[-1]]
        # smd.go makeRef: extensions on the referring field override the referred type's map type.
        return {**target, **{k: v for k, v in schema.items() if k.startswith("x-kubernetes-")}}
    return schema


def _types(schema: Mapping[str, Any]) -> set[str]:
    t = schema.get("type")
    return {t} if isinstance(t, str) else set(t or [])


def relationship(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """The element relationship smd.go gives a field: atomic, associative (set/map lists), separable (structs, maps) or scalar."""
    schema = _deref(schema, defs)
    types = _types(schema)
    if "array" in types:
        list_type = schema.get("x-kubernetes-list-type")
        if list_type in ("set", "map"):
            return "associative"
        if list_type is None and schema.get("x-kubernetes-patch-strategy") in ("merge", "merge,retainKeys"):
            return "associative"
        return "atomic"
    if "object" in types or "properties" in schema or "additionalProperties" in schema:
        return "atomic" if schema.get("x-kubernetes-map-type") == "atomic" else "separable"
    return "scalar"


def child_schema(schema: Mapping[str, Any], key: str, defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema of field `key` of a struct (its properties) or map (additionalProperties); {} if unknown."""
    schema = _deref(schema, defs)
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else {}


def _item_key(schema: Mapping[str, Any], item: Any) -> str:
    """The fieldpath element: `k:{...}` for a map-type list item (its x-kubernetes-list-map-keys), `v:...` for a set member."""
    merge_key = schema.get("x-kubernetes-patch-merge-key")
    keys = schema.get("x-kubernetes-list-map-keys") or ([merge_key] if merge_key else None)
    if keys and isinstance(item, Mapping):
        return "k:" + json.dumps({k: item.get(k) for k in keys}, sort_keys=True, separators=(",", ":"))
    return "v:" + json.dumps(item, sort_keys=True, separators=(",", ":"))


def owned_fields(applied: Mapping[str, Any], schema: Mapping[str, Any], defs: Mapping[str, Any], at: Path_ = ()) -> set[Path_]:
    """The leaf field paths an apply of `applied` makes its manager own (typed `TypedValue.ToFieldSet` leaves).

    An atomic list or map is one leaf (its path, never its items); a separable map owns each key it sets.
    """
    out: set[Path_] = set()
    for key, value in applied.items():
        sub = child_schema(schema, key, defs)
        path = (*at, key)
        rel = relationship(sub, defs)
        if rel == "separable" and isinstance(value, Mapping) and value:
            out |= owned_fields(value, sub, defs, path)
        elif rel == "associative" and isinstance(value, list) and value:
            item_schema = (_deref(sub, defs).get("items")) or {}
            for item in value:
                item_path = (*path, _item_key(_deref(sub, defs), item))
                if isinstance(item, Mapping) and relationship(item_schema, defs) == "separable":
                    out |= owned_fields(item, item_schema, defs, item_path)
                else:
                    out.add(item_path)
        else:
            out.add(path)
    return out


def apply(live: Mapping[str, Any], applied: Mapping[str, Any], schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """The object after a forced apply of `applied` over `live` (typed/merge.go `mergingWalker.merge` with `ruleKeepRHS`).

    Separable maps merge key by key (live keys the apply does not name stay); an atomic list or map
    and every scalar take the applied value whole; associative lists merge item by item. The result shares
    no mutable part with `applied` (the API server returns a new object; callers edit it freely).
    """
    out: dict[str, Any] = dict(live)
    for key, value in applied.items():
        sub = child_schema(schema, key, defs)
        rel = relationship(sub, defs)
        current = live.get(key)
        if rel == "separable" and isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = apply(current, value, sub, defs)
        elif rel == "associative" and isinstance(value, list) and isinstance(current, list):
            resolved = _deref(sub, defs)
            item_schema = resolved.get("items") or {}
            mine = {_item_key(resolved, item): item for item in value}
            merged = []
            for item in current:
                k = _item_key(resolved, item)
                if k in mine:
                    new = mine.pop(k)
                    both_maps = isinstance(item, Mapping) and isinstance(new, Mapping)
                    merged.append(apply(item, new, item_schema, defs) if both_maps else copy.deepcopy(new))
                else:
                    merged.append(item)
            out[key] = merged + copy.deepcopy(list(mine.values()))
        else:
            out[key] = copy.deepcopy(value)
    return out
