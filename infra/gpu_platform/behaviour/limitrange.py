"""What the API server does with a pod's resources before it stores it: defaulting, LimitRanger, validation.

Kubernetes v1.35, in the order a Pod CREATE meets them:
1. pkg/apis/core/v1/defaults.go `SetDefaults_Pod`: a container's limit stands in for a missing request
   (Pods only; Job and Deployment templates are never defaulted so).
2. plugin/pkg/admission/limitranger/admission.go `PodMutateLimitFunc` (`defaultContainerResourceRequirements`,
   `mergeContainerResources`): the namespace's Container `default` fills missing limits and `defaultRequest`
   missing requests; nothing present is changed.
3. pkg/apis/core/validation/validation.go `validateResourceRequirements`: a request above its limit is
   invalid; a resource that cannot be overcommitted (extended resources such as nvidia.com/gpu, hugepages)
   needs a limit equal to its request.
4. limitranger `PodValidateLimitFunc` (`minConstraint`, `maxConstraint`, `limitRequestRatioConstraint`).
The stored LimitRange has been defaulted itself (defaults.go `SetDefaults_LimitRangeItem`: `default` from
`max`, then `defaultRequest` from `default`, then from `min`); `stored_item` reproduces that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_platform.behaviour.apimachinery import parse_quantity, quantity_errors

Resources = dict[str, Any]


def _containers(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [("containers", c) for c in spec.get("containers") or []] + [("initContainers", c) for c in spec.get("initContainers") or []]


def stored_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """defaults.go `SetDefaults_LimitRangeItem` for a Container item: what the API server stores and readers see."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in item.items()}
    if out.get("type") != "Container":
        return out
    default = dict(out.get("default") or {})
    for k, v in (out.get("max") or {}).items():
        default.setdefault(k, v)
    request = dict(out.get("defaultRequest") or {})
    for k, v in default.items():
        request.setdefault(k, v)
    for k, v in (out.get("min") or {}).items():
        request.setdefault(k, v)
    if default:
        out["default"] = default
    if request:
        out["defaultRequest"] = request
    return out


def container_items(limit_ranges: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every stored Container item of the namespace's LimitRanges, in order."""
    return [stored_item(i) for lr in limit_ranges for i in (lr.get("spec") or {}).get("limits") or [] if i.get("type") == "Container"]


def _with_container(spec: Mapping[str, Any], change: Any) -> dict[str, Any]:
    out = dict(spec)
    for key in ("containers", "initContainers"):
        if spec.get(key):
            out[key] = [change(dict(c)) for c in spec[key]]
    return out


def pod_defaults(spec: Mapping[str, Any]) -> dict[str, Any]:
    """`SetDefaults_Pod`: each limit becomes the request where the container sets none."""

    def one(c: dict[str, Any]) -> dict[str, Any]:
        res = dict(c.get("resources") or {})
        limits = res.get("limits") or {}
        if limits:
            res["requests"] = {**limits, **(res.get("requests") or {})}
        c["resources"] = res
        return c

    return _with_container(spec, one)


def limitranger_defaults(spec: Mapping[str, Any], limit_ranges: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`PodMutateLimitFunc`: missing limits from `default`, missing requests from `defaultRequest` (a later item overwrites)."""
    limits: Resources = {}
    requests: Resources = {}
    for item in container_items(limit_ranges):
        limits |= item.get("default") or {}
        requests |= item.get("defaultRequest") or {}

    def one(c: dict[str, Any]) -> dict[str, Any]:
        res = dict(c.get("resources") or {})
        res["limits"] = {**limits, **(res.get("limits") or {})}
        res["requests"] = {**requests, **(res.get("requests") or {})}
        c["resources"] = res
        return c

    return _with_container(spec, one)


def _overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed: native resources but hugepages."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def requirement_errors(spec: Mapping[str, Any]) -> list[str]:
    """`validateResourceRequirements` for every container: the API server's 422 reasons (empty: valid)."""
    out = []
    indexed = [(key, i, c) for key in ("containers", "initContainers") for i, c in enumerate(spec.get(key) or [])]
    for key, i, c in indexed:
        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        at = f"spec.{key}[{i}].resources"
        bad = quantity_errors(f"{at}.requests", requests)[1] + quantity_errors(f"{at}.limits", limits)[1]
        if bad:  # ValidateResourceQuantityValue comes first: nothing else is compared on a bad quantity
            out += bad
            continue
        for name, value in requests.items():
            req = parse_quantity(value)
            if name in limits:
                lim = parse_quantity(limits[name])
                if req != lim and not _overcommit_allowed(name):
                    out.append(f"{at}.requests: Invalid value: {value!r}: must be equal to {name} limit of {limits[name]}")
                elif req > lim:
                    out.append(f"{at}.requests: Invalid value: {value!r}: must be less than or equal to {name} limit of {limits[name]}")
            elif not _overcommit_allowed(name):
                out.append(f"{at}.limits: Required value: Limit must be set for non overcommitable resources ({name})")
    return out


def limitranger_errors(spec: Mapping[str, Any], limit_ranges: Sequence[Mapping[str, Any]]) -> list[str]:
    """`PodValidateLimitFunc` for Container items: min, max and maxLimitRequestRatio, LimitRanger's own words."""
    out = []
    for item in container_items(limit_ranges):
        for _, c in _containers(spec):
            res = c.get("resources") or {}
            requests, limits = res.get("requests") or {}, res.get("limits") or {}
            for name, enforced in (item.get("min") or {}).items():
                e = parse_quantity(enforced)
                if name not in requests:
                    out.append(f"minimum {name} usage per Container is {enforced}.  No request is specified")
                elif parse_quantity(requests[name]) < e:
                    out.append(f"minimum {name} usage per Container is {enforced}, but request is {requests[name]}")
                elif name in limits and parse_quantity(limits[name]) < e:
                    out.append(f"minimum {name} usage per Container is {enforced}, but limit is {limits[name]}")
            for name, enforced in (item.get("max") or {}).items():
                e = parse_quantity(enforced)
                if name not in limits:
                    out.append(f"maximum {name} usage per Container is {enforced}.  No limit is specified")
                elif parse_quantity(limits[name]) > e:
                    out.append(f"maximum {name} usage per Container is {enforced}, but limit is {limits[name]}")
                elif name in requests and parse_quantity(requests[name]) > e:
                    out.append(f"maximum {name} usage per Container is {enforced}, but request is {requests[name]}")
            for name, ratio in (item.get("maxLimitRequestRatio") or {}).items():
                req, lim = parse_quantity(requests.get(name, 0)), parse_quantity(limits.get(name, 0))
                if req == 0:
                    out.append(f"{name} max limit to request ratio per Container is {ratio}, but no request is specified or request is 0")
                elif lim == 0:
                    out.append(f"{name} max limit to request ratio per Container is {ratio}, but no limit is specified or limit is 0")
                elif lim / req > parse_quantity(ratio):
                    out.append(f"{name} max limit to request ratio per Container is {ratio}, but provided ratio is {float(lim / req):f}")
    return out


def admitted_pod(spec: Mapping[str, Any], limit_ranges: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """(the pod spec as stored, the API server's refusals in order: validation 422, then LimitRanger 403)."""
    pod = limitranger_defaults(pod_defaults(spec), limit_ranges)
    invalid = requirement_errors(pod)
    if invalid:
        return pod, [f"invalid: {e}" for e in invalid]
    return pod, [f"forbidden: {e}" for e in limitranger_errors(pod, limit_ranges)]
