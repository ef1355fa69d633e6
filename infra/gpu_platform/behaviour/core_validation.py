"""kube-apiserver's validation of core/v1 objects the platform writes (kubernetes pkg/apis/core/validation, Kubernetes 1.33+)."""

from __future__ import annotations

import re
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


# k8s.io/apimachinery pkg/util/validation validation.go: IsDNS1123Subdomain (object names: NameIsDNSSubdomain) and
# IsDNS1123Label (namespace names).
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def object_errors(obj: Mapping[str, Any]) -> list[str]:
    """What the API server refuses before any admission plugin: decoding, then object metadata.

    Decoding (encoding/json into the typed object, apimachinery serializer): a container list that is not a list of
    objects fails with "cannot unmarshal"; then pkg/api/validation objectmeta.go ValidateObjectMeta: a name that is
    not a DNS-1123 subdomain (at most 253 characters), a namespace that is not a DNS-1123 label.
    """
    out: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                here = f"{path}.{k}" if path else str(k)
                if k in CONTAINER_LISTS and not (isinstance(v, list) and all(isinstance(c, Mapping) for c in v)):
                    out.append(f"{here}: cannot unmarshal {type(v).__name__} into a list of containers")
                    continue
                if k in CONTAINER_LISTS:  # validation.go validateContainers: a name, a DNS-1123 label, unique in the pod
                    seen: set[str] = set()
                    for i, c in enumerate(v):
                        name = c.get("name")
                        if not isinstance(name, str) or not name:
                            out.append(f"{here}[{i}].name: Required value")
                        elif len(name) > 63 or not DNS1123_LABEL.match(name):
                            out.append(f"{here}[{i}].name: Invalid value: {name!r}: a lowercase RFC 1123 label is required")
                        elif name in seen:
                            out.append(f"{here}[{i}].name: Duplicate value: {name!r}")
                        else:
                            seen.add(name)
                if k == "volumes" and isinstance(v, list):  # validation.go ValidateVolumes: each volume is named
                    for i, vol in enumerate(v):
                        if isinstance(vol, Mapping) and not (isinstance(vol.get("name"), str) and vol.get("name")):
                            out.append(f"{here}[{i}].name: Required value")
                walk(v, here)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(obj.get("spec"), "spec")
    meta = obj.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        out.append("metadata.name: Required value: name is required")
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        out.append(f"metadata.name: Invalid value: {name!r}: a lowercase RFC 1123 subdomain (at most 253 characters) is required")
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    if namespace is not None and (not isinstance(namespace, str) or len(namespace) > 63 or not DNS1123_LABEL.match(namespace)):
        out.append(f"metadata.namespace: Invalid value: {namespace!r}: a lowercase RFC 1123 label is required")
    return out
