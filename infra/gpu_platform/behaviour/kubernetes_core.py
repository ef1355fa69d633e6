"""The Ansible collection kubernetes.core (the version ansible/requirements.yml pins): what its node modules do.

plugins/modules/k8s_taint.py `K8sTaintAnsible.execute_module`: read the Node, then PATCH
`spec.taints` with a list the module computes. Node `spec.taints` has no patch strategy (an atomic
list), so the sent list replaces the node's: the merge is the module's own, reproduced here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """k8s_taint.py `_equal_dicts`: the same key and effect (key alone when either has no effect); the value is not compared."""
    keys = ["key", "effect"] if "effect" in a and "effect" in b else ["key"]
    return all(a.get(k) == b.get(k) for k in keys)


def _difference(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """k8s_taint.py `_get_difference`: the items of a that match none of b."""
    return [x for x in a if not any(_equal(x, y) for y in b)]


def _stored(taint: Mapping[str, Any]) -> dict[str, Any]:
    # The module sends existing taints as the Python client's `to_dict()` (snake_case `time_added`),
    # a field the API server does not know and drops: key, value and effect survive the round trip.
    return {k: taint[k] for k in ("key", "value", "effect") if taint.get(k) is not None}


def k8s_taint_present(existing: Sequence[Mapping[str, Any]], wanted: Sequence[Mapping[str, Any]]) -> tuple[bool, list[dict[str, Any]]]:
    """(changed, the node's taints afterwards) for `kubernetes.core.k8s_taint` with state=present, replace=false.

    k8s_taint.py `execute_module`: when a wanted taint is missing (by key and effect), or one is
    present with another value (`_update_exists`), it patches `[*existing not matching wanted,
    *wanted]`: other owners' taints stay, the wanted ones are set; otherwise nothing is sent.
    """
    missing = _difference(wanted, existing)
    other_value = any(_equal(e, w) and e.get("value") != w.get("value") for e in existing for w in wanted)
    if not missing and not other_value:
        return False, [_stored(t) for t in existing]
    return True, [_stored(t) for t in [*_difference(existing, wanted), *wanted]]
