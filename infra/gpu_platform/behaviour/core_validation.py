"""kube-apiserver's validation of core/v1 objects the platform writes (kubernetes pkg/apis/core/validation, Kubernetes 1.33+)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# pkg/apis/core/helper/helpers.go `standardResourceQuotaScopes`: the only things a quota can select by.
RESOURCE_QUOTA_SCOPES = frozenset(
    {"Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity", "VolumeAttributesClass"}
)


def resource_quota_scope_errors(quota_spec: Mapping[str, Any]) -> list[str]:
    """Scopes a ResourceQuota's spec names that the API server refuses (no quota scope can name a node pool).

    validation.go `validateResourceQuotaScopes` and `validateScopedResourceSelectorRequirement`: every
    entry of `scopes` and every `scopeSelector.matchExpressions[].scopeName` must be a standard scope.
    """
    names = [
        *(quota_spec.get("scopes") or []),
        *(e.get("scopeName") for e in ((quota_spec.get("scopeSelector") or {}).get("matchExpressions") or [])),
    ]
    return [f"unsupported scope {n}" for n in names if n not in RESOURCE_QUOTA_SCOPES]
