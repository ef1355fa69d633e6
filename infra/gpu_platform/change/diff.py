"""Per-resource diff of two offline plans: create, update (the changed fields), replace, delete.

Resources are matched by (type token, logical name), as Pulumi matches them by URN. Whether a change is
an update or a replacement, and whether it rolls a node group's nodes, is the provider's decision
(gpu_platform.behaviour.provider_diff).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform.behaviour.provider_diff import NODE_GROUP, Action, decide, launch_template_versioned
from gpu_platform.change.values import ValueChange, field_changes

# Under the offline engine a resource's id is `<logical name>-id` (gpu_platform.engine.Recorder.new_resource),
# so a node group's launchTemplate.id names the template it runs.
MOCK_ID_SUFFIX = "-id"


@dataclass(frozen=True)
class ResourceChange:
    """One resource's change between the base and the working tree."""

    type: str
    name: str
    action: Action
    fields: tuple[str, ...] = ()
    replace_fields: tuple[str, ...] = ()
    rolls_nodes: bool = False
    rolled_by: str | None = None  # the launch template whose new version rolls this node group
    values: tuple[ValueChange, ...] = ()  # each changed field's old and new value, secrets masked
    source: str | None = None  # a deleted resource: the base's stack key it was built from (gone or changed)

    def to_json(self) -> dict[str, Any]:
        """`diff --format json` shape of one change."""
        out: dict[str, Any] = {"type": self.type, "name": self.name, "action": self.action}
        if self.fields:
            out["fields"] = list(self.fields)
        if self.replace_fields:
            out["replaceFields"] = list(self.replace_fields)
        if self.rolls_nodes:
            out["rollsNodes"] = True
        if self.rolled_by:
            out["rolledBy"] = self.rolled_by
        if self.values:
            out["values"] = [v.to_json() for v in self.values]
        if self.source:
            out["source"] = self.source
        return out


Inputs = Mapping[tuple[str, str], Mapping[str, Any]]


def by_key(resources: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(type, name) -> inputs, from the `plan --format json` resource list."""
    return {(str(r["type"]), str(r["name"])): r.get("inputs") or {} for r in resources}


def diff_plans(before: Inputs, after: Inputs) -> list[ResourceChange]:
    """Every created, updated, replaced and deleted resource; node groups whose launch template gets a new version roll."""
    changes: dict[tuple[str, str], ResourceChange] = {}
    for key in before.keys() - after.keys():
        changes[key] = ResourceChange(key[0], key[1], "delete")
    for key in after.keys() - before.keys():
        changes[key] = ResourceChange(key[0], key[1], "create")
    versioned: set[str] = set()
    for key in before.keys() & after.keys():
        decision = decide(key[0], before[key], after[key])
        if decision is None:
            continue
        values = tuple(field_changes(key[0], before[key], after[key]))
        changes[key] = ResourceChange(key[0], key[1], decision.action, decision.fields, decision.replace_fields, decision.rolls_nodes, values=values)
        if launch_template_versioned(key[0], decision):
            versioned.add(key[1])
    # A new launch template version is picked up by the node group (update_default_version, latestVersion):
    # EKS UpdateNodegroupVersion replaces its nodes although the group's own inputs look unchanged here.
    for key, inputs in after.items():
        template = str((inputs.get("launchTemplate") or {}).get("id", "")).removesuffix(MOCK_ID_SUFFIX)
        if key[0] != NODE_GROUP or template not in versioned or key not in before:
            continue
        old = changes.get(key)
        if old is not None and old.action in ("replace", "create"):
            continue
        fields = tuple(sorted({*(old.fields if old else ()), "launchTemplate.version"}))
        changes[key] = ResourceChange(key[0], key[1], "update", fields, rolls_nodes=True, rolled_by=template, values=old.values if old else ())
    order = {"replace": 0, "delete": 1, "update": 2, "create": 3}
    return sorted(changes.values(), key=lambda c: (order[c.action], c.type, c.name))


def counts(changes: Iterable[ResourceChange]) -> dict[str, int]:
    """Number of resources per action."""
    out = {"create": 0, "update": 0, "replace": 0, "delete": 0}
    for c in changes:
        out[c.action] += 1
    return out
