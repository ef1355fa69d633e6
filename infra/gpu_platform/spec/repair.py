"""Validate a stack spec and, where it is invalid, set the bad parts aside to judge the rest.

pydantic reports every type and key error of the document at once, but the cross-field checks
(gpu_platform.spec.checks) need a valid spec. So the keys pydantic refuses are set aside (a typo'd
key dropped, a bad value left to its default, a whole optional mapping when a key of it is
missing), the rest validated again, and the cross-checks run on that. A cross-check problem that
could be a consequence of what was set aside is not reported: only problems the user really has.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gpu_platform.change.lines import segments
from gpu_platform.errors import Problem
from gpu_platform.spec.errors import format_loc, problems_from_validation
from gpu_platform.spec.models import PlatformSpec

ROUNDS = 5  # a missing key sets its mapping aside, which may leave that mapping's parent missing a key, ...


@dataclass(frozen=True)
class SetAside:
    """A key path taken out of the document before validating again; `alone`: nothing else depends on it (an unknown key)."""

    path: str
    alone: bool


def _drop(doc: Any, loc: Sequence[Any]) -> bool:
    """Remove the mapping key at `loc` (False where `loc` does not name a mapping key, e.g. a list item)."""
    if not loc or not isinstance(loc[-1], str):
        return False
    node = doc
    for part in loc[:-1]:
        in_list = isinstance(part, int) and isinstance(node, list) and part < len(node)
        in_map = isinstance(part, str) and isinstance(node, dict) and part in node
        if not (in_list or in_map):
            return False
        node = node[part]
    if not isinstance(node, dict) or loc[-1] not in node:
        return False
    del node[loc[-1]]
    return True


REFERENCED = {"nodePools": "pool", "tenants": "tenant"}  # lists other keys refer into by name


class _Dropped:
    """A list item set aside (it misses a required key): kept in place so its siblings keep their numbers."""


DROPPED: Any = _Dropped()
Loc = tuple[Any, ...]


@dataclass
class Repaired:
    """What validating with bad parts set aside gives: the spec, what was set aside, and how to number like the file."""

    spec: PlatformSpec | None
    problems: list[Problem]
    set_aside: list[SetAside]
    kept: dict[Loc, list[int]]  # list loc (file numbering) -> file indices of the items the spec still has
    dropped_names: list[str]  # `name`/`pool` of list items set aside, whose mentions elsewhere are echoes

    def file_loc(self, loc: Loc) -> Loc:
        """A loc in the spec's numbering (dropped list items left out) -> the same place in the file's numbering."""
        out: list[Any] = []
        for part in loc:
            here = tuple(out)
            out.append(self.kept[here][part] if isinstance(part, int) and here in self.kept and part < len(self.kept[here]) else part)
        return tuple(out)

    def file_path(self, path: str, prefix: str = "") -> str:
        """A key path of a cross-check problem (`gpu-platform:nodePools[1].x`) in the file's numbering."""
        if not self.kept or not path.startswith(prefix):
            return path
        return format_loc(self.file_loc(tuple(segments(path.removeprefix(prefix)))), prefix)

    def echoes(self, problem: Problem) -> bool:
        """Whether a cross-check problem names a list item that was set aside (a quota on a pool with a typo'd key)."""
        if any(f"'{name}'" in problem.message for name in self.dropped_names):
            return True
        # A pool or tenant whose own name was refused may be the one a reference means under its old name.
        lists = {s.path.split("[", 1)[0] for s in self.set_aside if s.path.endswith("].name")}
        return any(f"unknown {what} '" in problem.message for key, what in REFERENCED.items() if key in lists)


def _without_dropped(doc: Any, loc: Loc, kept: dict[Loc, list[int]]) -> Any:
    if isinstance(doc, dict):
        return {k: _without_dropped(v, (*loc, k), kept) for k, v in doc.items()}
    if isinstance(doc, list):
        if any(item is DROPPED for item in doc):
            kept[loc] = [i for i, item in enumerate(doc) if item is not DROPPED]
        return [_without_dropped(item, (*loc, i), kept) for i, item in enumerate(doc) if item is not DROPPED]
    return doc


def _drop_item(doc: Any, loc: Loc) -> str | None:
    """Set the list item at `loc` aside in place ('' when done), or None where `loc` is no list item."""
    if not loc or not isinstance(loc[-1], int):
        return None
    node = doc
    for part in loc[:-1]:
        if (isinstance(node, list) and isinstance(part, int) and part < len(node)) or (isinstance(node, dict) and part in node):
            node = node[part]
        else:
            return None
    if not isinstance(node, list) or loc[-1] >= len(node) or node[loc[-1]] is DROPPED:
        return None
    node[loc[-1]] = DROPPED
    return ""


def _name_at(doc: Any, loc: Loc) -> str:
    """The `name` (or a quota's `pool`) of the list item at `loc` as the file wrote it ('' without one)."""
    node = doc
    for part in loc:
        ok = (isinstance(node, list) and isinstance(part, int) and part < len(node)) or (isinstance(node, dict) and part in node)
        if not ok:
            return ""
        node = node[part]
    return next((str(node[k]) for k in ("name", "pool") if isinstance(node, dict) and isinstance(node.get(k), str)), "")


def validate_all(raw: Mapping[str, Any], file: str) -> Repaired:
    """The spec with the bad parts set aside, every validation problem, and what was set aside to get it.

    A list item missing a required key (a pool whose `workloadClass` is misspelt) is set aside whole and
    its siblings keep their numbers (Repaired.file_path), so the cross-checks still judge every other
    pool and tenant. The spec is None only when the bad parts cannot be set aside in ROUNDS rounds.
    """
    try:
        return Repaired(PlatformSpec.model_validate(raw), [], [], {}, [])
    except ValidationError as exc:
        problems = problems_from_validation(exc, file, "", PlatformSpec)
        errors = exc.errors(include_url=False)
    work = copy.deepcopy(dict(raw))
    repaired = Repaired(None, problems, [], {}, [])
    for _ in range(ROUNDS):
        for err in errors:
            loc = repaired.file_loc(tuple(err["loc"]))
            target = loc[:-1] if err["type"] == "missing" else loc
            if _drop(work, target):
                repaired.set_aside.append(SetAside(format_loc(target, ""), alone=err["type"] == "extra_forbidden"))
                continue
            if any(_under(format_loc(target, ""), s.path) for s in repaired.set_aside):
                continue  # inside an item already set aside (its misspelt key, a second missing key)
            name = _drop_item(work, target)
            if name is None:
                return Repaired(None, problems, [], {}, [])
            repaired.set_aside.append(SetAside(format_loc(target, ""), alone=True))
            name = _name_at(raw, target)  # the file's own item: a name set aside first is still its name
            if name and len(target) == 2 and target[0] in REFERENCED:  # a pool or tenant, not a quota entry
                repaired.dropped_names.append(name)
        kept: dict[Loc, list[int]] = {}
        view = _without_dropped(work, (), kept)
        repaired.kept = kept
        try:
            repaired.spec = PlatformSpec.model_validate(view)
            return repaired
        except ValidationError as again:
            errors = again.errors(include_url=False)
    return Repaired(None, problems, [], {}, [])


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else path


def follows_from(problem: Problem, set_aside: Sequence[SetAside]) -> bool:
    """True when a cross-check problem may only be the echo of a key set aside (its own path, or its mapping's for a bad value)."""
    for s in set_aside:
        scope = s.path if s.alone else _parent(s.path)
        if _under(problem.path, scope) or _under(s.path, problem.path):
            return True
    return False
