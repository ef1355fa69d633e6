"""The ResourceQuota admission plugin: what a pod or a claim adds to a namespace's usage, and when it is refused.

Kubernetes v1.35:
- plugin/pkg/admission/resourcequota/controller.go `checkRequest`: for each quota of the namespace, the
  evaluator's `Constraints` on the hard resource names it matches, then `Usage` of the new object added to
  the quota's recorded use; if any resource the quota lists goes above its hard value, the request is refused
  with "exceeded quota: <name>, requested: ..., used: ..., limited: ...".
- pkg/quota/v1/evaluator/core/pods.go `Constraints` / `enforcePodContainerConstraints`: where a quota lists
  cpu or memory (`requests.*`, `limits.*`), every container and init container must itself carry that
  request or limit, else "must specify <names>"; `podComputeUsageHelper` is what each counts.
- pkg/quota/v1/evaluator/core/resource_claims.go `Usage`: a ResourceClaim (DRA) counts
  `count/resourceclaims.resource.k8s.io` and, per DeviceClass of its `exactly` requests, the count under
  `<class>.deviceclass.resource.k8s.io/devices`; checked when the claim is created (a template's claim: by the
  resourceclaim controller, after the pod exists).
- pkg/quota/v1/evaluator/core/persistent_volume_claims.go `Usage`: a claim counts `persistentvolumeclaims`,
  `requests.storage` and, for its class, `<class>.storageclass.storage.k8s.io/{requests.storage,persistentvolumeclaims}`.

Admission runs mutating plugins first (LimitRanger's defaults, DefaultStorageClass), so callers pass the pod
after behaviour.limitrange `apply_defaults` and the claim with its class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from gpu_platform.behaviour.apimachinery import parse_quantity

# pods.go `validationSet`: the only resources whose presence the quota demands of each container.
VALIDATION_SET = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"


def _is_native(name: str) -> bool:
    """helper.IsNativeResource: no domain, or a kubernetes.io one."""
    return "/" not in name or "kubernetes.io/" in name


def container_usage(resources: Mapping[str, Any]) -> dict[str, Decimal]:
    """pods.go `podComputeUsageHelper` for one container's requests and limits."""
    requests = {k: parse_quantity(v) for k, v in (resources.get("requests") or {}).items()}
    limits = {k: parse_quantity(v) for k, v in (resources.get("limits") or {}).items()}
    out: dict[str, Decimal] = {}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):  # requestedResourcePrefixes
            out[name] = out[f"requests.{name}"] = value
        elif not _is_native(name):  # helper.IsExtendedResourceName: counted as `requests.<name>` only
            out[f"requests.{name}"] = value
    return out


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]


def missing_container_resources(pod_spec: Mapping[str, Any], hard: Mapping[str, Any]) -> list[str]:
    """pods.go `Constraints`: the cpu/memory names the quota lists that some container does not carry (sorted)."""
    required = {k for k in hard if k in VALIDATION_SET}
    missing: set[str] = set()
    for c in _containers(pod_spec):
        have = set(container_usage(c.get("resources") or {}))
        missing |= required - have
    return sorted(missing)


def pod_usage(pod_spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """pods.go `PodUsageFunc` for a pod that is not terminal: sum of containers, at least each init container, plus overhead; one pod."""
    total: dict[str, Decimal] = {}
    for c in pod_spec.get("containers") or []:
        for k, v in container_usage(c.get("resources") or {}).items():
            total[k] = total.get(k, Decimal(0)) + v
    for c in pod_spec.get("initContainers") or []:
        for k, v in container_usage(c.get("resources") or {}).items():
            total[k] = max(total.get(k, Decimal(0)), v)
    for k, v in (pod_spec.get("overhead") or {}).items():
        for name in (f"requests.{k}", k) if k in ("cpu", "memory") else (f"requests.{k}",):
            total[name] = total.get(name, Decimal(0)) + parse_quantity(v)
    total["pods"] = Decimal(1)
    total["count/pods"] = Decimal(1)
    return total


def claim_usage(claim_spec: Mapping[str, Any], storage_class: str | None) -> dict[str, Decimal]:
    """persistent_volume_claims.go `Usage` for a claim whose class (after DefaultStorageClass) is `storage_class`."""
    requested = parse_quantity(((claim_spec.get("resources") or {}).get("requests") or {}).get("storage", 0))
    out = {"persistentvolumeclaims": Decimal(1), "count/persistentvolumeclaims": Decimal(1), "requests.storage": requested}
    if storage_class:
        out[f"{storage_class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = Decimal(1)
        out[f"{storage_class}{STORAGE_CLASS_SUFFIX}requests.storage"] = requested
    return out


def device_class_key(device_class: str) -> str:
    """The quota name that counts devices claimed of a DeviceClass (resource_claims.go V1ResourceByDeviceClass)."""
    return f"{device_class}.deviceclass.resource.k8s.io/devices"


def resource_claim_usage(devices: Mapping[str, int]) -> dict[str, Decimal]:
    """resource_claims.go `Usage` for one ResourceClaim claiming `devices` (DeviceClass -> count)."""
    out = {"count/resourceclaims.resource.k8s.io": Decimal(1)}
    for device_class, n in devices.items():
        out[device_class_key(device_class)] = out.get(device_class_key(device_class), Decimal(0)) + Decimal(n)
    return out


def _fmt(values: Mapping[str, Decimal]) -> str:
    return ",".join(f"{k}={v.normalize():f}" for k, v in sorted(values.items()))


def exceeded(quota: Mapping[str, Any], usage: Mapping[str, Decimal], used: Mapping[str, Decimal] | None = None) -> str | None:
    """controller.go `checkRequest`: the refusal for adding `usage` to `used` under this quota, or None when it fits.

    Only resources the quota lists count (quota.Mask); each must stay at or below its hard value.
    """
    hard = {k: parse_quantity(v) for k, v in ((quota.get("spec") or {}).get("hard") or {}).items()}
    used = dict(used or {})
    requested = {k: v for k, v in usage.items() if k in hard}
    over = {k for k, v in requested.items() if used.get(k, Decimal(0)) + v > hard[k]}
    if not over:
        return None
    name = (quota.get("metadata") or {}).get("name", "")
    return (
        f"exceeded quota: {name}, requested: {_fmt({k: requested[k] for k in over})}, "
        f"used: {_fmt({k: used.get(k, Decimal(0)) for k in over})}, limited: {_fmt({k: hard[k] for k in over})}"
    )


def admit_pod(quotas: Sequence[Mapping[str, Any]], pod_spec: Mapping[str, Any], used: Mapping[str, Decimal] | None = None) -> str | None:
    """The ResourceQuota admission's refusal of a pod (after LimitRanger's defaults) in a namespace with these quotas, or None."""
    for q in quotas:
        hard = (q.get("spec") or {}).get("hard") or {}
        missing = missing_container_resources(pod_spec, hard)
        if missing:
            return f"failed quota: {(q.get('metadata') or {}).get('name', '')}: must specify {','.join(missing)}"
        refusal = exceeded(q, pod_usage(pod_spec), used)
        if refusal:
            return refusal
    return None


def admit_claim(
    quotas: Sequence[Mapping[str, Any]], claim_spec: Mapping[str, Any], storage_class: str | None, used: Mapping[str, Decimal] | None = None
) -> str | None:
    """The ResourceQuota admission's refusal of a claim of `storage_class`, or None when every quota admits it."""
    for q in quotas:
        refusal = exceeded(q, claim_usage(claim_spec, storage_class), used)
        if refusal:
            return refusal
    return None


def add(total: Mapping[str, Decimal], more: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """Recorded use after another admitted object (quota.Add)."""
    out = dict(total)
    for k, v in more.items():
        out[k] = out.get(k, Decimal(0)) + v
    return out
