"""behaviour.ecr reproduces amazon-eks-ami's get-ecr-uri.sh: each region pulls EKS's images from its own registry."""

from __future__ import annotations

import pytest

from gpu_platform.behaviour import ecr
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.efa import device_plugin_values
from tests.conftest import STACKS, spec_for

EFA = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"


@pytest.mark.parametrize(
    ("region", "registry"),
    [
        ("us-east-1", "602401143452.dkr.ecr.us-east-1.amazonaws.com"),  # the non-opt-in commercial regions share one account
        ("eu-west-1", "602401143452.dkr.ecr.eu-west-1.amazonaws.com"),
        ("af-south-1", "877085696533.dkr.ecr.af-south-1.amazonaws.com"),  # opt-in regions have their own
        ("ap-southeast-7", "121268973566.dkr.ecr.ap-southeast-7.amazonaws.com"),
        ("cn-north-1", "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn"),
        ("us-gov-west-1", "013241004608.dkr.ecr.us-gov-west-1.amazonaws.com"),
    ],
)
def test_registry_per_region(region: str, registry: str) -> None:
    assert ecr.registry(region) == registry


def test_only_eks_registry_images_move_and_keep_their_path() -> None:
    assert ecr.in_region(EFA, "af-south-1") == "877085696533.dkr.ecr.af-south-1.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    mirror = "123456789012.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"  # a user's own mirror: theirs to place
    assert ecr.in_region(mirror, "us-east-1") == mirror
    assert ecr.in_region("registry.k8s.io/autoscaling/cluster-autoscaler", "us-east-1") == "registry.k8s.io/autoscaling/cluster-autoscaler"
    assert ecr.canonical(EFA) == ecr.canonical(ecr.in_region(EFA, "me-central-1")) == "eks-registry/eks/aws-efa-k8s-device-plugin"
    assert ecr.ecr_region(EFA) == "us-west-2" and ecr.ecr_region("nvcr.io/nvidia/gpu-operator") is None


@pytest.mark.parametrize("stack", [s for s in STACKS if spec_for(s).region])
def test_the_efa_plugin_is_pulled_in_the_stacks_region(stack: str) -> None:
    """Before: every stack pulled the chart's us-west-2 image, cross-region through NAT (issue 34)."""
    spec = spec_for(stack)
    repository = device_plugin_values(spec, load_catalog())["image"]["repository"]
    assert ecr.ecr_region(repository) == spec.region and repository.endswith("/eks/aws-efa-k8s-device-plugin")
