"""Builders the rule cases are written with: a repository stack's plan, and the one change that breaks or keeps it.

A case reads as "base + change": `fires(rule, id, at(NG, {"taints": []}), on=NG, says="nvidia.com/gpu")`
starts from the prod plan (the base every case shares unless it names another stack), changes one
resource's inputs through dotted paths, and says what the user must read in the finding. The runner
and the assertions live in tests/policies/cases.py; this module only builds the data they consume.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from gpu_platform.versions import Lockfile
from gpu_platform_policies import Resource

Edit = Callable[[list[Resource]], list[Resource]]
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    """One rule's expectation on one (possibly broken) copy of a stack's plan."""

    rule: str
    id: str
    stack: str
    edits: tuple[Edit, ...] = ()
    fires_on: str | None = None  # the resource the violation must name; None: the rule must stay silent
    message: str = ""  # a fragment the violation's message must contain
    lock: Callable[[Lockfile], Lockfile] | None = None
    stack_lock: Callable[[Lockfile], Lockfile] | None = None  # the stack's `versions` override, laid over the lockfile
    repo: Callable[[Path], None] | None = None
    key: str | None = None  # the stack key path the violation must name, where the case pins it
    idle: str | None = None  # the reason `check` reports the (silent) rule not applicable, where the case pins it
    today: date | None = None  # the day the gate runs, where the case pins it (rules about support dates)
    offline_only: str | None = None  # why the policy pack cannot see this break (the pack is held to stay silent on it)


# --- cases ---------------------------------------------------------------------------------------


def compliant(rule: str, *stacks: str) -> list[Case]:
    """The repository stacks as they are: the rule stays silent on each (case id `<stack>-compliant`)."""
    return [Case(rule, f"{stack}-compliant", stack) for stack in stacks]


def silent(rule: str, id: str, *edits: Edit, stack: str = "prod", **more: Any) -> Case:
    """A legitimate change (edits, a lockfile or repository copy in `more`): the rule must stay silent."""
    return Case(rule, id, stack, edits, **more)


def fires(rule: str, id: str, *edits: Edit, on: str, says: str, stack: str = "prod", key: str | None = None, **more: Any) -> Case:
    """A breaking change: the rule must name resource `on` with a message containing `says` (and `key`, where pinned)."""
    assert says, f"{rule}:{id}: a violating case must say what the user reads"
    return Case(rule, id, stack, edits, fires_on=on, message=says, key=key, **more)


# --- edits ---------------------------------------------------------------------------------------

DROP = object()  # as a value in at(): delete the key


def _walk_to(node: Any, path: str, create: bool) -> tuple[Any, Any]:
    """(container, last key) for a dot path whose keys may themselves contain dots (label keys)."""
    parts = path.split(".")
    while True:
        if isinstance(node, list):
            key: Any = int(parts[0])
            rest = parts[1:]
        else:
            # the longest prefix that is an existing key, else one segment (or all that is left, at the end)
            cut = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in node), None)
            if cut is None:  # a new key: a label key (with "/") takes the rest of the path whole
                cut = len(parts) if any("/" in p for p in parts) else 1
            key, rest = ".".join(parts[:cut]), parts[cut:]
        if not rest:
            return node, key
        if not isinstance(node, list) and key not in node and create:
            node[key] = {}
        node, parts = node[key], rest


def at(name: str, changes: Mapping[str, Any]) -> Edit:
    """The named resource's inputs with each dotted path set (missing parents created) or, where the value is DROP, deleted.

    Paths index lists with integers, and label keys may contain dots (`labels.nvidia.com/mig.config`).
    """

    def edit(res: list[Resource]) -> list[Resource]:
        inputs = next(r for r in res if r.name == name).inputs
        for path, value in changes.items():
            container, key = _walk_to(inputs, path, create=value is not DROP)
            if value is DROP:
                del container[key]
            else:  # a copy: one edit serves many cases and runs, and a rule must not see another run's objects
                container[key] = copy.deepcopy(value)
        return res

    return edit


def drop(name: str) -> Edit:
    """Remove a resource from the plan."""

    def edit(res: list[Resource]) -> list[Resource]:
        assert any(r.name == name for r in res), name
        return [r for r in res if r.name != name]

    return edit


def built_from(name: str, key: str, *refs: str) -> Edit:
    """The resource's input `key` now built from `refs` (behaviour.wiring.ref_key), as a program that changed the input registers it."""

    def edit(res: list[Resource]) -> list[Resource]:
        r = next(r for r in res if r.name == name)
        r.refs[key] = tuple(refs)  # type: ignore[index]
        return res

    return edit


def chain(*edits: Edit) -> Edit:
    """Several edits as one."""

    def edit(res: list[Resource]) -> list[Resource]:
        for e in edits:
            res = e(res)
        return res

    return edit


def add(resource: Resource) -> Edit:
    """Add a resource to the plan."""
    return lambda res: [*res, resource]


def lock_edit(**changes: Any) -> Callable[[Lockfile], Lockfile]:
    """A lockfile copy with nested fields replaced (`eks__ami_driver_branch="535"`)."""

    def make(lock: Lockfile) -> Lockfile:
        for dotted, value in changes.items():
            section, key = dotted.split("__")
            lock = lock.model_copy(update={section: getattr(lock, section).model_copy(update={key: value})})
        return lock

    return make


def privileged_deployment(namespace: str) -> Resource:
    """A Deployment with one privileged container, built inside the tenant's component (or the platform's), as the program would."""
    return Resource(
        "kubernetes:apps/v1:Deployment",
        f"debug-{namespace}",
        "platform" if namespace in ("kube-system", "gpu-operator") else f"tenant-{namespace}",
        {
            "metadata": {"name": "debug", "namespace": namespace},
            "spec": {"template": {"spec": {"containers": [{"name": "sh", "image": "busybox:1.36", "securityContext": {"privileged": True}}]}}},
        },
    )


# --- the repository plans' resources the cases change ---------------------------------------------

LT = "pool-train-h100-reserved-lt"
NG = "pool-train-h100-reserved-ng"
SPOT_NG = "pool-infer-l4-spot-ng"
L4_OD_NG = "pool-infer-l4-ondemand-ng"
L4_FB_NG = "pool-infer-l4-spot-fallback-ng"  # the Spot pool's own on-demand fallback group
BLOCK_NG = "pool-train-h100-block-ng"
A100_NG = "pool-infer-a100-mig-ng"
ONPREM_PATCH = "pool-hgx-a100-mig-dgx-a100-01"
ONPREM_H100 = "pool-hgx-h100-train-dgx-h100-01"
SG_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
