"""The driver role's GPU tables cannot drift from the project's catalog and lockfile."""

from __future__ import annotations

from typing import Any

import yaml

from tests.ansible.helpers import REPO, ROLES

CATALOG = REPO / "infra" / "gpu_platform" / "data" / "catalog.yaml"


def driver_vars() -> dict[str, Any]:
    """nvidia_driver's internal variables."""
    return yaml.safe_load((ROLES / "nvidia_driver" / "vars" / "main.yml").read_text())


def test_driver_role_gpu_architectures_equal_the_catalog():
    catalog = yaml.safe_load(CATALOG.read_text())["gpus"]
    want = {model: gpu["architecture"] for model, gpu in catalog.items()}
    assert driver_vars()["_nvidia_driver_gpu_architectures"] == want


def test_every_catalog_gpu_has_a_minimum_driver_branch_and_a_driven_architecture(lockfile):
    catalog = yaml.safe_load(CATALOG.read_text())["gpus"]
    compat = lockfile["compatibility"]
    assert set(compat["gpu_min_driver_branch"]) == set(catalog)
    driven = {arch for branch in compat["driver_branches"].values() for arch in branch["architectures"]}
    assert {gpu["architecture"] for gpu in catalog.values()} <= driven


def test_driver_and_validate_roles_accept_exactly_the_catalog_models():
    catalog = set(yaml.safe_load(CATALOG.read_text())["gpus"])
    for role, option in (("nvidia_driver", "nvidia_driver_gpu_model"), ("gpu_node_validate", "gpu_node_validate_gpu_model")):
        spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"][option]
        # nvidia_driver also accepts "" (no GPU model known: skip the branch check).
        assert set(spec["choices"]) - {""} == catalog, f"{role}: {option} choices differ from catalog.yaml"
