"""Dynamic Resource Allocation as Kueue and the scheduler see a pod's `resourceClaims` (the lockfile's releases).

Kueue (kubernetes-sigs/kueue at the lockfile's tag):
- pkg/config/validation.go `validateDeviceClassMappings`: at most 16 mappings, each name a label key of at most 253
  characters, unique, 1 to 8 DeviceClass names, a DeviceClass in one mapping only (`mapping_errors`).
- pkg/workload/workload.go `HasResourceClaim` and pkg/controller/core/workload_controller.go: a pod set naming a
  ResourceClaim (`resourceClaimName`) leaves the Workload inadmissible, "KueueDRAIntegration feature does not support
  use of resource claims".
- pkg/dra/claims.go `GetResourceRequestsForResourceClaimTemplates` and `countDevicesPerClass`: for each
  `resourceClaimTemplateName` the template must exist in the namespace; each request must be `exactly` (not
  `firstAvailable`), without adminAccess, with allocationMode ExactCount (`All` is refused); its count is added per
  DeviceClass, and each DeviceClass must be mapped, else "DeviceClass X is not mapped in DRA configuration for podset
  Y". The sums are added to the pod set's requests under the mapped names (`kueue_claim_requests`).

The scheduler (kubernetes v1.35 pkg/scheduler/framework/plugins/dynamicresources): PreFilter fails while a
template's claim does not exist (the template itself missing: the resourceclaim controller cannot create it, so the
pod stays pending); Filter allocates every request of a claim on one node from the devices that node's ResourceSlices
publish (`node_fits`): on this platform only DRA pools' nodes run the driver's kubelet plugin, each publishing one
`gpu.nvidia.com` device per GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_MAPPINGS = 16
MAX_CLASSES_PER_MAPPING = 8
# apimachinery validation IsQualifiedName (a label key): optional DNS-1123 subdomain prefix, then a name of <= 63.
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _label_key_errors(key: str) -> list[str]:
    prefix, _, name = key.rpartition("/")
    out = []
    if "/" in key and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        out.append("prefix part must be a lowercase RFC 1123 subdomain")
    if not name or len(name) > 63 or not _NAME.match(name):
        out.append("name part must consist of alphanumeric characters, '-', '_' or '.', at most 63, starting and ending alphanumeric")
    return out


def mapping_errors(mappings: Sequence[Mapping[str, Any]]) -> list[str]:
    """What Kueue's Configuration validation refuses in `resources.deviceClassMappings` (the manager does not start)."""
    out: list[str] = []
    if len(mappings) > MAX_MAPPINGS:
        out.append(f"resources.deviceClassMappings: must have at most {MAX_MAPPINGS} items")
    seen: set[str] = set()
    owner: dict[str, str] = {}
    for i, m in enumerate(mappings):
        at = f"resources.deviceClassMappings[{i}]"
        name = str(m.get("name", ""))
        out += [f"{at}.name: Invalid value {name!r}: {e}" for e in _label_key_errors(name)]
        if len(name) > 253:
            out.append(f"{at}.name: must not exceed 253 characters")
        if name in seen:
            out.append(f"{at}.name: Duplicate value {name!r}")
        seen.add(name)
        classes = list(m.get("deviceClassNames") or [])
        if not classes:
            out.append(f"{at}.deviceClassNames: Required value: at least one device class name is required")
        if len(classes) > MAX_CLASSES_PER_MAPPING:
            out.append(f"{at}.deviceClassNames: must have at most {MAX_CLASSES_PER_MAPPING} items")
        for c in classes:
            if c in owner and owner[c] != name:
                out.append(f"{at}.deviceClassNames: device class {c!r} is already mapped to {owner[c]!r}")
            owner.setdefault(str(c), name)
    return out


def class_map(mappings: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """DeviceClass -> the resource name Kueue counts it under (ResourceMapper.Lookup)."""
    return {str(c): str(m["name"]) for m in mappings for c in m.get("deviceClassNames") or []}


@dataclass(frozen=True)
class Claims:
    """A pod spec's claims as Kueue counts them: devices per DeviceClass, mapped requests, or why it is inadmissible."""

    devices: dict[str, int] = field(default_factory=dict)
    """DeviceClass -> devices one pod claims."""
    requests: dict[str, int] = field(default_factory=dict)
    """Mapped resource name -> devices one pod adds to its pod set's requests."""
    error: str | None = None
    missing_template: str | None = None


def count_devices(claim_spec: Mapping[str, Any]) -> tuple[dict[str, int], str | None]:
    """pkg/dra/claims.go `countDevicesPerClass`: devices per DeviceClass of one claim spec, or Kueue's refusal."""
    out: dict[str, int] = {}
    for i, req in enumerate(((claim_spec.get("devices") or {}).get("requests")) or []):
        at = f"devices.requests[{i}]"
        if req.get("firstAvailable") is not None:
            return {}, f"{at}: FirstAvailable device selection is not supported"
        exactly = req.get("exactly")
        if exactly is None:
            return {}, f"{at}: Exactly must be set if FirstAvailable is nil"
        if exactly.get("adminAccess"):
            return {}, f"{at}.exactly.adminAccess: AdminAccess is not supported"
        mode = exactly.get("allocationMode", "ExactCount")  # the API server defaults it (resource v1 defaults.go)
        if mode == "All":
            return {}, f"{at}.exactly.allocationMode: AllocationMode 'All' is not supported"
        if mode != "ExactCount":
            return {}, f"{at}.exactly.allocationMode: unsupported allocation mode: {mode}"
        name = str(exactly.get("deviceClassName") or "")
        if name:
            out[name] = out.get(name, 0) + int(exactly.get("count", 1))  # count defaults to 1 with ExactCount
    return out, None


def kueue_claim_requests(
    pod_spec: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]], mappings: Sequence[Mapping[str, Any]] | None
) -> Claims:
    """What Kueue adds to one pod set's requests for its pods' claims (`templates`: the namespace's, by name).

    `mappings` None: no Kueue manages the pods; the devices are still counted (the scheduler allocates them), nothing
    is mapped and no Kueue refusal applies.
    """
    claims = list(pod_spec.get("resourceClaims") or [])
    if mappings is not None and any(c.get("resourceClaimName") for c in claims):
        return Claims(
            error="KueueDRAIntegration feature does not support use of resource claims (resourceClaimName); use a resourceClaimTemplateName"
        )
    mapped = class_map(mappings or [])
    devices: dict[str, int] = {}
    requests: dict[str, int] = {}
    for j, c in enumerate(claims):
        name = c.get("resourceClaimTemplateName")
        if not name:
            continue
        template = templates.get(str(name))
        if template is None:
            return Claims(
                error=f'resourceClaims[{j}]: failed to get claim spec for ResourceClaimTemplate {name}: resourceclaimtemplates "{name}" not found',
                missing_template=str(name),
            )
        counted, refused = count_devices((template.get("spec") or {}).get("spec") or {})
        if refused:
            return Claims(error=f"resourceClaims[{j}].{refused.split(': ', 1)[0]}: ResourceClaimTemplate {name}: {refused.split(': ', 1)[1]}")
        for cls, n in counted.items():
            devices[cls] = devices.get(cls, 0) + n
            if mappings is None:
                continue
            if cls not in mapped:
                return Claims(error=f"resourceClaims[{j}].resourceClaimTemplateName: DeviceClass {cls} is not mapped in DRA configuration")
            requests[mapped[cls]] = requests.get(mapped[cls], 0) + n
    return Claims(devices=devices, requests=requests)


def node_fits(devices: Mapping[str, int], published: Mapping[str, int]) -> str | None:
    """The DRA Filter on one node: every claimed device from that node's ResourceSlices, or why not.

    `published`: DeviceClass -> devices the node's driver publishes that the class selects. None when it fits.
    """
    for cls, n in sorted(devices.items()):
        have = published.get(cls, 0)
        if have == 0:
            return f"cannot allocate all claims: no device of class {cls} on the node (no DRA driver publishes one there)"
        if have < n:
            return f"cannot allocate all claims: {n} devices of class {cls} asked, the node publishes {have}"
    return None
