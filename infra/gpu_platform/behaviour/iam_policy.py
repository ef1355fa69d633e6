"""IAM policy evaluation for one request: explicit deny, then allow, else implicit deny.

IAM User Guide, "Policy evaluation logic" (within one account, identity-based policies): an explicit
Deny in any applicable statement wins; otherwise an Allow in any applicable statement allows;
otherwise the request is implicitly denied. "IAM JSON policy elements: Action": action names are
case-insensitive and may use `*` and `?` wildcards; "IAM JSON policy elements: Resource": ARNs are
matched case-sensitively, `*` matches any run of characters (including `/`) and `?` one character;
NotAction and NotResource match everything except what they list. Statements with a Condition are
not evaluated here (no request context), and are reported as not applying.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

ALLOW, EXPLICIT_DENY, IMPLICIT_DENY = "Allow", "ExplicitDeny", "ImplicitDeny"


@cache
def _pattern(glob: str, case_sensitive: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(f"^{body}$", 0 if case_sensitive else re.IGNORECASE | re.DOTALL)


def wildcard_match(pattern: str, value: str, case_sensitive: bool) -> bool:
    """IAM's `*`/`?` wildcard match of one Action or Resource element against a value."""
    return _pattern(pattern, case_sensitive).match(value) is not None


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def statements(document: str | Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The statements of a policy document (JSON text or parsed), a single statement as a list of one."""
    doc = json.loads(document) if isinstance(document, str) else document
    found = doc.get("Statement", [])
    return [found] if isinstance(found, Mapping) else list(found)


def applies(statement: Mapping[str, Any], action: str, resource: str) -> bool:
    """The statement covers this action on this resource (Action/NotAction and Resource/NotResource)."""
    if "Condition" in statement:
        return False
    if "Action" in statement:
        act = any(wildcard_match(p, action, case_sensitive=False) for p in _as_list(statement["Action"]))
    else:
        act = not any(wildcard_match(p, action, case_sensitive=False) for p in _as_list(statement.get("NotAction")))
    if "Resource" in statement:
        res = any(wildcard_match(p, resource, case_sensitive=True) for p in _as_list(statement["Resource"]))
    else:
        res = not any(wildcard_match(p, resource, case_sensitive=True) for p in _as_list(statement.get("NotResource")))
    return act and res


def decide(documents: Iterable[str | Mapping[str, Any]], action: str, resource: str) -> str:
    """Allow, ExplicitDeny or ImplicitDeny for one action on one resource under these identity policies."""
    allowed = False
    for document in documents:
        for st in statements(document):
            if not applies(st, action, resource):
                continue
            if st.get("Effect") == "Deny":
                return EXPLICIT_DENY
            if st.get("Effect") == "Allow":
                allowed = True
    return ALLOW if allowed else IMPLICIT_DENY


def trusts_service(trust_policy: str | Mapping[str, Any], service: str, actions: Iterable[str]) -> list[str]:
    """Which of `actions` the trust policy does NOT allow the AWS service principal `service` (empty: all allowed)."""
    missing = []
    for action in actions:
        ok = any(
            st.get("Effect") == "Allow"
            and service in _as_list((st.get("Principal") or {}).get("Service") if isinstance(st.get("Principal"), Mapping) else None)
            and any(wildcard_match(p, action, case_sensitive=False) for p in _as_list(st.get("Action")))
            for st in statements(trust_policy)
        )
        if not ok:
            missing.append(action)
    return missing
