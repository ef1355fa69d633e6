"""Inventories: every pool describes a GPU pool the roles can really build and validate."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from tests.ansible.helpers import ANSIBLE_DIR, ROLES, load_lockfile

INVENTORIES = sorted(p for p in (ANSIBLE_DIR / "inventories").iterdir() if p.is_dir())
SHARING = {"none", "time-slicing", "mps", "mig"}
MIG_MODELS = yaml.safe_load((ROLES / "mig" / "vars" / "main.yml").read_text())["_mig_gpu_models"]
MIG_CONFIG = yaml.safe_load((ROLES / "mig" / "files" / "config-default.yaml").read_text())
_spec = importlib.util.spec_from_file_location("mig_parted", ROLES / "mig" / "filter_plugins" / "mig_parted.py")
assert _spec and _spec.loader
mig_parted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mig_parted)


def groups_of(tree: dict, parent: str = "all") -> dict[str, set[str]]:
    """Group name -> child group names, from a YAML inventory."""
    out: dict[str, set[str]] = {}
    for name, body in ((tree or {}).get("children") or {}).items():
        out.setdefault(parent, set()).add(name)
        for child, grandchildren in groups_of(body or {}, name).items():
            out.setdefault(child, set()).update(grandchildren)
    return out


def pools(inventory: Path) -> dict[str, dict]:
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    names = groups_of(hosts["all"], "all").get("gpu_nodes", set())
    return {n: yaml.safe_load((inventory / "group_vars" / f"{n}.yml").read_text()) for n in sorted(names)}


def all_pools() -> list[tuple[str, str, dict]]:
    return [(inv.name, name, data) for inv in INVENTORIES for name, data in pools(inv).items()]


def test_lab_and_prod_exist():
    assert {p.name for p in INVENTORIES} >= {"lab", "prod"}


@pytest.mark.parametrize(("env", "pool", "data"), all_pools(), ids=lambda v: v if isinstance(v, str) else "")
def test_pool_describes_a_buildable_gpu_pool(env: str, pool: str, data: dict):
    lock = load_lockfile()
    where = f"inventories/{env}/group_vars/{pool}.yml"
    model = data["gpu_pool_gpu_model"]
    assert model in lock["compatibility"]["gpu_min_driver_branch"], f"{where}: unknown GPU model {model}"
    assert isinstance(data["gpu_pool_gpu_count"], int) and data["gpu_pool_gpu_count"] > 0, where
    assert data["gpu_pool_sharing"] in SHARING, f"{where}: sharing {data['gpu_pool_sharing']}"
    needed = lock["compatibility"]["gpu_min_driver_branch"][model]
    assert int(lock["nvidia_driver"]["branch"]) >= int(needed), (
        f"{where}: {model} needs driver branch {needed}, the lockfile pins {lock['nvidia_driver']['branch']}"
    )
    mig = data["gpu_pool_mig_config"]
    assert mig in MIG_CONFIG["mig-configs"], f"{where}: unknown MIG config {mig}"
    assert (data["gpu_pool_sharing"] == "mig") == (mig != "all-disabled"), f"{where}: sharing {data['gpu_pool_sharing']} with MIG config {mig}"
    if mig != "all-disabled":
        spec = MIG_MODELS[model]
        entry = mig_parted.mig_entry_for_device(MIG_CONFIG, mig, spec["device_ids"])
        assert spec["mig"] and entry is not None, f"{where}: {mig} has no layout for {model}"
        assert mig_parted.mig_layout_memory_gb(entry) <= spec["memory_gb"], where


@pytest.mark.parametrize("inventory", INVENTORIES, ids=lambda p: p.name)
def test_every_pool_group_has_group_vars_and_nvswitch_pools_are_gpu_pools(inventory: Path):
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    tree = groups_of(hosts["all"], "all")
    gpu_pools = tree.get("gpu_nodes", set())
    assert gpu_pools, f"{inventory.name}: no pools under gpu_nodes"
    for name in gpu_pools:
        assert (inventory / "group_vars" / f"{name}.yml").exists(), f"{inventory.name}: {name} has no group_vars"
    nvswitch = tree.get("nvswitch_nodes", set())
    assert nvswitch <= gpu_pools
    for name in nvswitch:
        data = pools(inventory)[name]
        assert data["gpu_pool_gpu_model"].startswith(("A100", "H100", "H200")) and data["gpu_pool_gpu_count"] == 8


@pytest.mark.parametrize("inventory", INVENTORIES, ids=lambda p: p.name)
def test_gpu_nodes_group_vars_wire_pools_to_every_role(inventory: Path):
    wiring = yaml.safe_load((inventory / "group_vars" / "gpu_nodes.yml").read_text())
    for var in [
        "nvidia_driver_gpu_model",
        "mig_gpu_model",
        "mig_config",
        "gpu_node_validate_gpu_model",
        "gpu_node_validate_gpu_count",
        "gpu_node_validate_mig_config",
    ]:
        assert "gpu_pool_" in str(wiring[var]), f"{inventory.name}: {var} is not taken from the pool"
