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
                        bad = _label_error(name, f"{here}[{i}].name")
                        if bad:
                            out.append(bad)
                        elif name in seen:
                            out.append(f"{here}[{i}].name: Duplicate value: {name!r}")
                        else:
                            seen.add(name)
                if k == "containers" and isinstance(v, list):  # a pod spec: its claims and the containers' uses of them
                    out.extend(pod_claim_errors(node, here.rsplit(".", 1)[0] if "." in here else ""))
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


def _label_error(value: Any, at: str, what: str = "a lowercase RFC 1123 label is required") -> str | None:
    if not isinstance(value, str) or not value:
        return f"{at}: Required value"
    if len(value) > 63 or not DNS1123_LABEL.match(value):
        return f"{at}: Invalid value: {value!r}: {what}"
    return None


def pod_claim_errors(pod_spec: Mapping[str, Any], path: str) -> list[str]:
    """A pod spec's DRA claims as the API server validates them (kubernetes pkg/apis/core/validation/validation.go, 1.34).

    `validatePodResourceClaim`: each `resourceClaims` entry has a name (a DNS-1123 label, unique in the pod) and
    exactly one of `resourceClaimName` and `resourceClaimTemplateName` (each a DNS-1123 subdomain, as object names
    are); `validateResourceClaimNames`: a container's `resources.claims` entries are named, not repeated (name and
    request), and each is one of the pod's claim names. `path`: where the pod spec sits (`spec`, `spec.template.spec`).
    """
    out: list[str] = []
    at = f"{path}.resourceClaims" if path else "resourceClaims"
    claims = pod_spec.get("resourceClaims")
    names: set[str] = set()
    if claims is not None and not (isinstance(claims, list) and all(isinstance(c, Mapping) for c in claims)):
        return [f"{at}: cannot unmarshal {type(claims).__name__} into a list of PodResourceClaims"]
    for i, c in enumerate(claims or []):
        name = c.get("name")
        if isinstance(name, str) and name in names:
            out.append(f"{at}[{i}].name: Duplicate value: {name!r}")
        else:
            bad = _label_error(name, f"{at}[{i}].name")
            if bad:
                out.append(bad)
            else:
                names.add(str(name))
        direct, template = c.get("resourceClaimName"), c.get("resourceClaimTemplateName")
        if direct is not None and template is not None:
            out.append(f"{at}[{i}]: Invalid value: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
        elif direct is None and template is None:
            out.append(f"{at}[{i}]: Invalid value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        for key, ref in (("resourceClaimName", direct), ("resourceClaimTemplateName", template)):
            if ref is not None and not (isinstance(ref, str) and ref and len(ref) <= 253 and DNS1123_SUBDOMAIN.match(ref)):
                out.append(f"{at}[{i}].{key}: Invalid value: {ref!r}: a lowercase RFC 1123 subdomain is required")
    for lists in ("initContainers", "containers"):
        for j, container in enumerate(pod_spec.get(lists) or []):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            used = resources.get("claims") if isinstance(resources, Mapping) else None
            if not isinstance(used, list):
                continue
            where = f"{path}.{lists}[{j}].resources.claims" if path else f"{lists}[{j}].resources.claims"
            seen: set[str] = set()
            for i, u in enumerate(used):
                name = u.get("name") if isinstance(u, Mapping) else None
                if not isinstance(name, str) or not name:
                    out.append(f"{where}[{i}]: Required value")
                    continue
                request = u.get("request") or ""
                key = f"{name}/{request}" if request else name
                if key in seen:
                    out.append(f"{where}[{i}]: Duplicate value: {key!r}")
                seen.add(key)
                if name not in names:
                    listed = f": {', '.join(sorted(names))}" if names else " which is empty"
                    out.append(f"{where}[{i}]: Not found: {name!r}: must be one of the names in pod.spec.resourceClaims{listed}")
    return out
