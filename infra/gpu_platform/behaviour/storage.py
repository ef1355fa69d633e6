"""Whether a PersistentVolumeClaim binds: the class it ends up with, and a provisioner that serves that class.

Sources, Kubernetes v1.35 and kubernetes-csi/external-provisioner v5:
- DefaultStorageClass admission (plugin/pkg/admission/storage/storageclass/setdefault/admission.go `Admit`,
  and pkg/volume/util/storageclass.go `GetDefaultClass`): a claim with no `storageClassName` gets the class
  annotated `storageclass.kubernetes.io/is-default-class: "true"` (the newest one if several); with no default
  class the claim keeps no class and only binds to a pre-created PV.
- PV controller (pkg/controller/volume/persistentvolume/pv_controller.go `provisionClaim` /
  `findProvisionablePlugin`): a claim naming a class that does not exist stays Pending
  ("storageclass.storage.k8s.io ... not found").
- external-provisioner (pkg/controller/controller.go `shouldProvision`): a CSI driver provisions only claims
  whose class's `provisioner` equals its driver name; no driver of that name, nobody provisions.
- A CSI controller calling a cloud API needs credentials (the EBS CSI controller: AWS credentials for
  ec2:CreateVolume; "UnauthorizedOperation" and the claim stays Pending without them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


@dataclass(frozen=True)
class Binding:
    """Whether a claim binds, and the stage that decides it (class, provisioner or credentials)."""

    binds: bool
    storage_class: str | None
    reason: str


def default_class(classes: Sequence[Mapping[str, Any]]) -> str | None:
    """storageclass.go `GetDefaultClass`: the class annotated default (newest wins; ties: by name here)."""
    defaults = [c for c in classes if (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
    if not defaults:
        return None
    return sorted(defaults, key=lambda c: (str(c["metadata"].get("creationTimestamp", "")), c["metadata"]["name"]))[-1]["metadata"]["name"]


def claim_class(claim_spec: Mapping[str, Any], classes: Sequence[Mapping[str, Any]]) -> str | None:
    """The class a claim has after admission: its own `storageClassName`, else the default class (setdefault `Admit`).

    An explicit empty string means "no class" and is kept (the docs: `storageClassName: ""` binds only static PVs).
    """
    if "storageClassName" in claim_spec and claim_spec["storageClassName"] is not None:
        return str(claim_spec["storageClassName"]) or None
    return default_class(classes)


def claim_binds(claim_spec: Mapping[str, Any], classes: Sequence[Mapping[str, Any]], drivers: Mapping[str, str | None]) -> Binding:
    """Whether a dynamically provisioned claim binds, and the stage that decides it.

    `drivers`: provisioner name -> None when it runs with what it needs, or a sentence saying what it lacks.
    """
    name = claim_class(claim_spec, classes)
    if name is None:
        return Binding(False, None, "class: the claim names no StorageClass and the cluster has no default one; nothing provisions it")
    by_name = {c["metadata"]["name"]: c for c in classes}
    if name not in by_name:
        return Binding(False, name, f"class: StorageClass {name!r} does not exist; the PV controller leaves the claim Pending")
    provisioner = str(by_name[name].get("provisioner"))
    if provisioner not in drivers:
        return Binding(False, name, f"provisioner: no driver named {provisioner!r} is installed, so no external-provisioner takes class {name!r}")
    lack = drivers[provisioner]
    if lack is not None:
        return Binding(False, name, f"credentials: {provisioner} is installed but {lack}")
    return Binding(True, name, f"class {name!r} exists, {provisioner} is installed with its credentials")
