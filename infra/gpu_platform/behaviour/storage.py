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
- aws-fsx-csi-driver (tag: the lockfile's eks.addons entry) pkg/driver/controller.go `CreateVolume`: the StorageClass parameters it reads and
  how it parses them; what it passes on, FSx `CreateFileSystem` judges (botocore's fsx model, below).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
FSX_PROVISIONER = "fsx.csi.aws.com"
# controller.go `volumeParams*` constants: every StorageClass parameter the driver reads; any other name is
# never looked at (a misspelt `deploymenttype` silently yields the API default, SCRATCH_1).
FSX_PARAMETERS = frozenset(
    {
        "subnetId", "securityGroupIds", "autoImportPolicy", "s3ImportPath", "s3ExportPath", "deploymentType", "kmsKeyId",
        "perUnitStorageThroughput", "storageType", "driveCacheType", "automaticBackupRetentionDays",
        "dailyAutomaticBackupStartTime", "copyTagsToBackups", "dataCompressionType", "weeklyMaintenanceStartTime",
        "fileSystemTypeVersion", "extraTags", "efaEnabled", "metadataConfigurationMode", "metadataIops",
    }
)  # fmt: skip
# external-provisioner strips these before CreateVolume (its `csi.storage.k8s.io/` prefixed keys).
PROVISIONER_PREFIX = "csi.storage.k8s.io/"
# controller.go parses these with strconv.ParseInt / strconv.ParseBool and fails CreateVolume with InvalidArgument.
FSX_INT_PARAMETERS = ("perUnitStorageThroughput", "automaticBackupRetentionDays", "metadataIops")
FSX_BOOL_PARAMETERS = ("copyTagsToBackups", "efaEnabled")
# botocore fsx service-2.json: LustreDeploymentType and DataCompressionType enums; PerUnitStorageThroughput's
# documented valid values per deployment type (SSD storage; HDD is PERSISTENT_1 only: 12, 40).
FSX_DEPLOYMENT_TYPES = ("SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
FSX_COMPRESSION = ("NONE", "LZ4")
FSX_SSD_THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
_GO_BOOLS = ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False")  # strconv.ParseBool


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
    if provisioner == FSX_PROVISIONER:
        problems = fsx_lustre_parameter_problems(by_name[name].get("parameters") or {})
        if problems:
            return Binding(False, name, "parameters: " + "; ".join(f"{k}: {why}" for k, why in problems))
    return Binding(True, name, f"class {name!r} exists, {provisioner} is installed with its credentials")


def _go_int(value: str) -> bool:
    """strconv.ParseInt(value, 10, 64) succeeds: an optional sign and decimal digits, nothing else."""
    body = value[1:] if value[:1] in "+-" else value
    return body.isascii() and body.isdigit()


def fsx_lustre_parameter_problems(parameters: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(parameter, what is wrong; what is allowed) for an FSx for Lustre StorageClass: what makes its claims stay Pending.

    First what aws-fsx-csi-driver's `CreateVolume` refuses itself (InvalidArgument on ParseInt/ParseBool), then
    what FSx `CreateFileSystem` refuses of what the driver passes on (SubnetIds: exactly one subnet,
    SecurityGroupIds split on ","; the deployment type enum; PerUnitStorageThroughput only with, and required
    by, PERSISTENT_* at the documented values), and parameter names the driver never reads.
    """
    out: list[tuple[str, str]] = []
    for key in parameters:
        if key not in FSX_PARAMETERS and not key.startswith(PROVISIONER_PREFIX):
            out.append((key, "not a parameter aws-fsx-csi-driver reads (controller.go ignores it); allowed: " + ", ".join(sorted(FSX_PARAMETERS))))
    values = {k: str(v) for k, v in parameters.items()}
    for key in FSX_INT_PARAMETERS:
        if key in values and not _go_int(values[key]):
            out.append((key, f"{values[key]!r} is not a number (CreateVolume: InvalidArgument); allowed: a decimal integer"))
    for key in FSX_BOOL_PARAMETERS:
        if key in values and values[key] not in _GO_BOOLS:
            out.append((key, f"{values[key]!r} is not a bool (CreateVolume: InvalidArgument); allowed: true or false"))
    if not values.get("subnetId") or "," in values["subnetId"]:
        out.append(("subnetId", "CreateFileSystem needs exactly one subnet; allowed: one subnet id"))
    if not values.get("securityGroupIds") or "" in values["securityGroupIds"].split(","):
        out.append(("securityGroupIds", "empty entry in the comma-separated list CreateFileSystem gets; allowed: sg-... ids joined by ','"))
    deployment = values.get("deploymentType", "SCRATCH_1")  # the API's default when the parameter is absent
    if deployment not in FSX_DEPLOYMENT_TYPES:
        out.append(("deploymentType", f"{deployment!r} is not an FSx for Lustre deployment type; allowed: {', '.join(FSX_DEPLOYMENT_TYPES)}"))
    if values.get("dataCompressionType", "NONE") not in FSX_COMPRESSION:
        out.append(("dataCompressionType", f"{values['dataCompressionType']!r}; allowed: {', '.join(FSX_COMPRESSION)}"))
    allowed = FSX_SSD_THROUGHPUT.get(deployment)
    throughput = values.get("perUnitStorageThroughput")
    if allowed is not None and values.get("storageType", "SSD") == "SSD":
        if throughput is None:
            out.append(("perUnitStorageThroughput", f"required with {deployment}; allowed: {', '.join(map(str, allowed))} (MB/s/TiB)"))
        elif _go_int(throughput) and int(throughput) not in allowed:
            out.append(("perUnitStorageThroughput", f"{throughput} is not valid for {deployment}; allowed: {', '.join(map(str, allowed))}"))
    elif allowed is None and throughput is not None and deployment in FSX_DEPLOYMENT_TYPES:
        out.append(("perUnitStorageThroughput", f"only PERSISTENT_1 and PERSISTENT_2 take it, not {deployment}; allowed: remove it"))
    return out


def on_claim_deleted(claim_spec: Mapping[str, Any], classes: Sequence[Mapping[str, Any]]) -> str:
    """What happens to a dynamically provisioned volume, and the data on it, when its claim is deleted: `kept` or `deleted`.

    pv_controller.go `provisionClaimOperation` copies the class's `reclaimPolicy` (default Delete, the API's
    defaulting of StorageClass) into the PersistentVolume it creates; when the claim goes, `reclaimVolume`
    leaves a `Retain` volume Released with its data for an admin, and for `Delete` runs `deleteVolumeOperation`,
    whose CSI DeleteVolume deletes the EBS volume or the FSx file system and everything on it.
    """
    name = claim_class(claim_spec, classes)
    found = next((c for c in classes if c["metadata"]["name"] == name), None)
    if found is None:
        raise ValueError(f"the claim's class {name!r} is not among the classes given")
    return "kept" if (found.get("reclaimPolicy") or "Delete") == "Retain" else "deleted"
