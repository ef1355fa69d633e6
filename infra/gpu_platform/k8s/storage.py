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


def storage_classes(spec: PlatformSpec) -> list[Manifest]:
    """The classes the stack creates: on EKS one gp3 class (encrypted, WaitForFirstConsumer, expandable, default)."""
    if not spec.is_eks or spec.storage_class is None:
        return []
    meta = metadata(spec.storage_class)
    meta["annotations"] = {DEFAULT_CLASS_ANNOTATION: "true"}
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": meta,
            "provisioner": PROVISIONER,
            # aws-ebs-csi-driver docs/parameters.md: `type`, `encrypted` ("true": the account's default EBS KMS key).
            "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
            # Create the volume in the zone the pod is scheduled to (EBS volumes are zonal; GPU pools are pinned to zones).
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
            "reclaimPolicy": "Delete",
        }
    ]


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
        # DeleteVolume deletes the file system with the claim; training data worth keeping lives in S3.
        "reclaimPolicy": "Delete",
        "mountOptions": ["flock"],
    }
