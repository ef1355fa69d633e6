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


def validate_all(raw: Mapping[str, Any], file: str) -> tuple[PlatformSpec | None, list[Problem], list[SetAside]]:
    """(spec or None, validation problems, what was set aside to get the spec).

    The spec is None only when the bad parts cannot be set aside (a list item missing a required
    key: dropping the item would renumber its siblings); then the validation problems are all there is.
    """
    try:
        return PlatformSpec.model_validate(raw), [], []
    except ValidationError as exc:
        problems = problems_from_validation(exc, file, "", PlatformSpec)
        errors = exc.errors(include_url=False)
    work = copy.deepcopy(dict(raw))
    set_aside: list[SetAside] = []
    for _ in range(ROUNDS):
        for err in errors:
            loc = tuple(err["loc"])
            target = loc[:-1] if err["type"] == "missing" else loc
            if not _drop(work, target):
                return None, problems, []
            set_aside.append(SetAside(format_loc(target, ""), alone=err["type"] == "extra_forbidden"))
        try:
            return PlatformSpec.model_validate(work), problems, set_aside
        except ValidationError as again:
            errors = again.errors(include_url=False)
    return None, problems, []


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
