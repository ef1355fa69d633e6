"""The StorageClass every volume claim of the stack names.

EKS: an encrypted gp3 class served by the EBS CSI driver add-on (gpu_platform.aws.storage), annotated as the
cluster default, so claims without a class (a tenant's, a chart's) bind too. Existing clusters already have
their classes; the stack names one (`storage.className`) and creates none.
"""

from __future__ import annotations

from gpu_platform.aws.storage import PROVISIONER
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
