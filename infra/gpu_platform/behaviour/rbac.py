"""Which RoleBindings apply to an authenticated user, as the Kubernetes RBAC authorizer decides.

kubernetes `pkg/registry/rbac/validation/rule.go`, `appliesTo` / `appliesToUser`: a User subject
matches the user's name exactly; a Group subject matches when the user's groups contain its name
exactly (case-sensitive, no wildcards); a ServiceAccount subject matches the username
`system:serviceaccount:<namespace>:<name>`, its namespace defaulting to the binding's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class UserInfo:
    """What authentication hands the authorizer: user name and groups (k8s.io/apiserver user.Info)."""

    name: str
    groups: tuple[str, ...]


def service_account_username(namespace: str, name: str) -> str:
    """k8s.io/apiserver `pkg/authentication/serviceaccount` MakeUsername."""
    return f"system:serviceaccount:{namespace}:{name}"


def applies_to_user(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    """Whether one binding subject names this user (rule.go `appliesToUser`)."""
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = str(subject.get("namespace") or namespace)
        if not sa_namespace:
            return False
        return user.name == service_account_username(sa_namespace, name)
    return False


def bindings_for(user: UserInfo, role_bindings: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """rule.go `appliesTo` over every binding: the RoleBindings (manifests) any of whose subjects name the user."""
    out = []
    for rb in role_bindings:
        namespace = str((rb.get("metadata") or {}).get("namespace") or "")
        if any(applies_to_user(user, s, namespace) for s in rb.get("subjects") or []):
            out.append(rb)
    return out


def rule_allows(rule: Mapping[str, Any], verb: str, group: str, resource: str, subresource: str = "", name: str = "") -> bool:
    """Whether one PolicyRule allows a resource request.

    kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go `RuleAllows` with pkg/apis/rbac/v1
    evaluation_helpers.go `VerbMatches`, `APIGroupMatches`, `ResourceMatches` (`*`, the exact
    `resource/subresource`, or `*/subresource`) and `ResourceNameMatches` (an empty list allows any name).
    """
    verbs, groups = rule.get("verbs") or [], rule.get("apiGroups") or []
    combined = f"{resource}/{subresource}" if subresource else resource
    resources = rule.get("resources") or []
    resource_ok = any(
        r in ("*", combined) or (bool(subresource) and len(r) == len(subresource) + 2 and r.startswith("*/") and r.endswith(subresource))
        for r in resources
    )
    names = rule.get("resourceNames") or []
    return (verb in verbs or "*" in verbs) and (group in groups or "*" in groups) and resource_ok and (not names or name in names)


def rules_allow(rules: Iterable[Mapping[str, Any]], verb: str, group: str, resource: str, subresource: str = "", name: str = "") -> bool:
    """rbac.go `RulesAllow`: any rule of the role allows the request."""
    return any(rule_allows(r, verb, group, resource, subresource, name) for r in rules)
