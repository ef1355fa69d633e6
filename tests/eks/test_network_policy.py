"""Tenant NetworkPolicies on EKS are enforced, not just stored: the VPC CNI add-on has network policy on."""

from __future__ import annotations

import json

import pytest

from gpu_platform.aws.cluster import addon_configuration
from gpu_platform.versions import load_lockfile
from tests.conftest import plan_for

EKS_STACKS = ("dev", "staging", "prod")


# vpc-cni (NetworkPolicy enforcement, here) and the node monitoring agent (its DCGM server's tolerations,
# tests/journeys/test_gpu_fault_replaced.py) are the only add-ons whose defaults do not serve the platform.
CONFIGURED = {"vpc-cni", "eks-node-monitoring-agent"}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.lstrip("v").split("-")[0].split("."))


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_vpc_cni_addon_enforces_network_policies(stack: str) -> None:
    """EKS user guide, "Restrict Pod network traffic with Kubernetes network policies" → "Configure your
    cluster for Kubernetes network policies": network policy needs VPC CNI v1.14.0 or later and the add-on's
    configuration values `{"enableNetworkPolicy": "true"}` (the add-on schema takes the string "true"); only
    then does the aws-node network policy agent program the default-deny rules. EKS's CreateAddon reads
    `configurationValues` as a JSON document (botocore eks CreateAddonRequest.configurationValues, a string).
    The old plan sent no configuration values, so every tenant default-deny was inert."""
    addons = {r.inputs["addonName"]: r for r in plan_for(stack).of_type("aws:eks/addon:Addon")}
    cni = addons["vpc-cni"].inputs
    assert _version(cni["addonVersion"]) >= (1, 14, 0)
    assert isinstance(cni["configurationValues"], str), "EKS takes configurationValues as a JSON string"
    assert json.loads(cni["configurationValues"]) == {"enableNetworkPolicy": "true"}
    for name, addon in addons.items():
        if name not in CONFIGURED:
            assert "configurationValues" not in addon.inputs, name  # their defaults are what we want


def test_addon_configuration_is_pure_and_pinned_addons_only() -> None:
    """The add-on values are decided without Pulumi, for exactly the add-ons the lockfile pins."""
    pinned = load_lockfile().eks.addons
    assert "vpc-cni" in pinned
    assert {a for a in pinned if addon_configuration(a) is not None} == CONFIGURED
