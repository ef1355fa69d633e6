"""Wrong variables fail fast: argument specs and preflight checks, with messages a user can act on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.helpers import DEBIAN_12, HERE, LAB_OVERLAY, UBUNTU_2204, failure_messages, lab_lockfile, run_playbook

PLAYBOOK = HERE / "playbooks" / "role_under_test.yml"


def run_role(role: str, facts: dict[str, Any] | None = None, tasks: str = "main", **role_vars: Any):
    """Run a role on localhost posing as `facts`; return (rc, failure messages)."""
    facts = facts or DEBIAN_12
    if facts["distribution"] == "Debian":
        # Debian 12 hosts are the lab: they read the lab overlay's pins, as Molecule does.
        role_vars.setdefault("gpu_platform_versions_overlay", LAB_OVERLAY)
    extra = {"fake": facts, "role_name": role, "role_tasks": tasks, **role_vars}
    # Check mode: even a role that got past its checks changes nothing on the test machine.
    result = run_playbook(PLAYBOOK, extra, "--check")
    return result.returncode, " | ".join(failure_messages(result)), result


def test_argument_spec_rejects_a_wrong_type():
    rc, msg, _ = run_role("gpu_node_validate", gpu_node_validate_gpu_model="H100-80GB", gpu_node_validate_gpu_count="eight")
    assert rc != 0
    assert "gpu_node_validate_gpu_count" in msg and "int" in msg


def test_argument_spec_rejects_an_unknown_gpu_model():
    rc, msg, _ = run_role("nvidia_driver", nvidia_driver_gpu_model="V100")
    assert rc != 0
    assert "nvidia_driver_gpu_model" in msg and "V100" in msg and "H100-80GB" in msg


def test_argument_spec_requires_the_pool_expectations():
    rc, msg, _ = run_role("gpu_node_validate")
    assert rc != 0
    assert "gpu_node_validate_gpu_model" in msg and "gpu_node_validate_gpu_count" in msg


def test_preflight_rejects_an_unsupported_os():
    arch = {**DEBIAN_12, "distribution": "Archlinux", "os_family": "Archlinux", "distribution_major_version": "NA"}
    rc, msg, _ = run_role("nvidia_driver", arch)
    assert rc != 0
    assert "nvidia_driver: Archlinux NA on x86_64 is not supported" in msg


def test_preflight_rejects_an_unsupported_architecture():
    rc, msg, _ = run_role("nvidia_container_toolkit", {**DEBIAN_12, "architecture": "ppc64le"})
    assert rc != 0
    assert "on ppc64le is not supported" in msg


def test_preflight_rejects_a_driver_branch_too_old_for_the_gpu():
    lab = lab_lockfile()
    branch = lab["nvidia_driver"]["branch"]
    needed = lab["compatibility"]["gpu_min_driver_branch"]["H200-141GB"]
    assert int(branch) < int(needed), "this test needs the lab's branch older than the H200's minimum"
    rc, msg, _ = run_role("nvidia_driver", nvidia_driver_gpu_model="H200-141GB", nvidia_driver_running_kernel=False)
    assert rc != 0
    assert f"driver branch {branch} is too old for H200-141GB" in msg
    assert f"needs branch {needed} or newer" in msg


def test_preflight_accepts_a_gpu_the_branch_drives():
    rc, msg, result = run_role("nvidia_driver", tasks="preflight", nvidia_driver_gpu_model="H100-80GB", nvidia_driver_running_kernel=False)
    assert rc == 0, msg or result.stdout[-2000:]


def test_preflight_rejects_a_driver_version_that_differs_from_the_lockfile():
    rc, msg, _ = run_role("nvidia_driver", nvidia_driver_version="535.999.99", nvidia_driver_running_kernel=False)
    assert rc != 0
    assert "differs from the version lockfile" in msg
    assert f"nvidia_driver.version={lab_lockfile()['nvidia_driver']['version']}" in msg


def test_debian_without_the_lab_overlay_fails_on_the_production_branch(lockfile):
    """Debian's archive (the Debian path's only source) has no R580 build: one line says so and names the way out."""
    rc, msg, _ = run_role("nvidia_driver", gpu_platform_versions_overlay="", nvidia_driver_running_kernel=False)
    assert rc != 0
    branch = lockfile["nvidia_driver"]["branch"]
    assert f"nvidia_driver: driver branch {branch} (nvidia_driver.branch) has no packages for debian12" in msg
    assert "published there: 535" in msg and "gpu_platform_versions_overlay=debian12-lab" in msg


def test_the_lab_overlay_is_refused_on_another_os():
    rc, msg, _ = run_role("nvidia_driver", UBUNTU_2204, gpu_platform_versions_overlay=LAB_OVERLAY, nvidia_driver_running_kernel=False)
    assert rc != 0
    assert "gpu_platform_versions_overlay=debian12-lab applies to" in msg and "not Ubuntu 22" in msg


def test_an_unknown_overlay_names_the_defined_ones():
    rc, msg, _ = run_role("nvidia_driver", UBUNTU_2204, gpu_platform_versions_overlay="debian13-lab", nvidia_driver_running_kernel=False)
    assert rc != 0
    assert "overlays.debian13-lab: no such overlay in the version lockfile; defined: debian12-lab" in msg


@pytest.mark.parametrize(
    ("role", "var", "key"),
    [
        ("nvidia_container_toolkit", "nvidia_container_toolkit_version", "container_toolkit.version"),
        ("dcgm", "dcgm_version", "dcgm.version"),
        ("mig", "mig_parted_version", "mig_parted.version"),
        ("nvidia_fabricmanager", "nvidia_fabricmanager_version", "fabric_manager.version"),
    ],
)
def test_every_package_role_rejects_a_version_off_the_lockfile(role, var, key):
    rc, msg, _ = run_role(role, **{var: "0.0.1"})
    assert rc != 0
    assert key in msg and "0.0.1" in msg


def test_fabric_manager_must_equal_the_driver(lockfile):
    rc, msg, _ = run_role("nvidia_fabricmanager", nvidia_fabricmanager_version=lockfile["nvidia_driver"]["version"] + "9")
    assert rc != 0
    assert "must equal the driver exactly" in msg


def test_preflight_rejects_a_mig_layout_on_a_gpu_without_mig():
    rc, msg, _ = run_role("mig", mig_gpu_model="T4", mig_config="all-1g.10gb")
    assert rc != 0
    assert "MIG config all-1g.10gb does not fit a T4 pool: T4 has no MIG" in msg


def test_preflight_rejects_a_mig_layout_bigger_than_the_gpu():
    rc, msg, _ = run_role("mig", mig_gpu_model="A100-40GB", mig_config="all-3g.40gb")
    assert rc != 0
    assert "the layout needs 80 GB, the GPU has 40" in msg


def test_preflight_rejects_an_unknown_mig_config_name():
    rc, msg, _ = run_role("mig", mig_gpu_model="A100-80GB", mig_config="all-2g.99gb")
    assert rc != 0
    assert "mig_config=all-2g.99gb is not a mig-parted config name" in msg and "all-balanced" in msg


def test_validation_rejects_mig_on_a_pool_without_mig():
    rc, msg, _ = run_role(
        "gpu_node_validate", gpu_node_validate_gpu_model="L4", gpu_node_validate_gpu_count=1, gpu_node_validate_mig_config="all-1g.10gb"
    )
    assert rc != 0
    assert "L4 has no MIG" in msg


def test_mig_preflight_accepts_the_pool_layout():
    rc, msg, result = run_role("mig", tasks="preflight", mig_gpu_model="A100-80GB", mig_config="all-balanced")
    assert rc == 0, msg or result.stdout[-2000:]


def test_preflight_rejects_a_kernel_outside_the_tested_range(lockfile):
    rc, msg, _ = run_role("nvidia_driver", {**DEBIAN_12, "kernel": "7.4.44-fc-v669"}, nvidia_driver_gpu_model="H100-80GB")
    assert rc != 0
    assert f"kernel 7.4.44-fc-v669 is outside the range the driver branch is tested against ({lockfile['kernel']['min']} to" in msg


def test_preflight_rejects_a_kernel_without_published_headers():
    rc, msg, _ = run_role("nvidia_driver", {**DEBIAN_12, "kernel": "6.1.0-999-nonexistent-amd64"}, nvidia_driver_gpu_model="H100-80GB")
    assert rc != 0
    assert "no linux-headers-6.1.0-999-nonexistent-amd64 package in the configured repositories" in msg
