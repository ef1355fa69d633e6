"""The StorageClass every volume claim of the stack names.

EKS: an encrypted gp3 class served by the EBS CSI driver add-on (gpu_platform.aws.storage), annotated as the
cluster default, so claims without a class (a tenant's, a chart's) bind too; where `storage.fsxLustre.enabled`,
also an FSx for Lustre class (gpu_platform.aws.fsx creates it, with the subnet and security group it names). Existing clusters already have
their classes; the stack names one (`storage.className`) and creates none.
"""

from __future__ import annotations

from typing import Any

from gpu_platform.aws.storage import PROVISIONER
from gpu_platform.behaviour.storage import FSX_PROVISIONER
from gpu_platform.k8s.objects import Manifest, metadata
from gpu_platform.spec.models import PlatformSpec

# The DefaultStorageClass admission plugin gives a claim with no storageClassName the class with this
# annotation set to "true" (plugin/pkg/admission/storage/storageclass/setdefault/admission.go, `GetDefaultClass`).
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def _gp3(name: str, reclaim: str) -> Manifest:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata(name),
        "provisioner": PROVISIONER,
        # aws-ebs-csi-driver docs/parameters.md: `type`, `encrypted` ("true": the account's default EBS KMS key).
        "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
        # Create the volume in the zone the pod is scheduled to (EBS volumes are zonal; GPU pools are pinned to zones).
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
        "reclaimPolicy": reclaim,
    }


def storage_classes(spec: PlatformSpec) -> list[Manifest]:
    """The classes the stack creates on EKS: the default gp3 class (scratch) and `gp3-retain` (checkpoints, datasets).

    Both encrypted, WaitForFirstConsumer and expandable; gp3's volumes go with their claims, gp3-retain's stay.

    The PV controller copies a class's reclaimPolicy into each volume it provisions and, when the claim goes,
    deletes the volume only for `Delete` (behaviour.storage `on_claim_deleted`).
    """
    if not spec.is_eks or spec.storage_class is None or spec.retain_storage_class is None:
        return []
    default = _gp3(spec.storage_class, "Delete")
    default["metadata"]["annotations"] = {DEFAULT_CLASS_ANNOTATION: "true"}
    return [default, _gp3(spec.retain_storage_class, "Retain")]


def fsx_storage_class(spec: PlatformSpec, subnet_id: Any, security_group_id: Any) -> Manifest:
    """The FSx for Lustre class (`storage.fsxLustre`): one file system per claim, in one subnet, behind the Lustre group.

    Parameter names are those aws-fsx-csi-driver's `CreateVolume` reads (pkg/driver/controller.go at the lockfile's tag);
    behaviour.storage `fsx_lustre_parameter_problems` judges them as the driver and FSx do. `subnet_id` and
    `security_group_id` are the stack's own (Pulumi outputs in the program, strings in tests).
    """
    fsx = spec.storage.fsx_lustre
    parameters: dict[str, Any] = {
        "subnetId": subnet_id,
        "securityGroupIds": security_group_id,
        "deploymentType": fsx.deployment_type,
        "dataCompressionType": fsx.data_compression_type,
    }
    if fsx.throughput is not None:
        parameters["perUnitStorageThroughput"] = str(fsx.throughput)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata(fsx.class_name),
        "provisioner": FSX_PROVISIONER,
        "parameters": parameters,
        # A file system lives in one subnet: bind immediately there; pods then need that zone (the class's
        # zone is the first cluster zone unless `zone` says otherwise; pin training pools there).
        "volumeBindingMode": "Immediate",
        # Retain (the default): deleting a claim leaves its file system and data for an admin to delete;
        # with Delete the CSI driver's DeleteVolume deletes the file system with the claim.
        "reclaimPolicy": fsx.reclaim_policy,
        "mountOptions": ["flock"],
    }
