"""What the Ubuntu, RHEL and Debian task files would install and write, rendered from the real lockfile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.ansible.helpers import DEBIAN_12, HERE, ROCKY_9, UBUNTU_2204, load_lockfile, run_playbook

LOCK = load_lockfile()
BRANCH = LOCK["nvidia_driver"]["branch"]
DRIVER = LOCK["nvidia_driver"]["version"]


def render(tmp_path: Path, facts: dict[str, str]) -> tuple[dict[str, Any], Path]:
    out = tmp_path / "out"
    out.mkdir()
    result = run_playbook(HERE / "playbooks" / "render.yml", {"fake": facts, "out_dir": str(out)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return json.loads((out / "facts.json").read_text()), out


def test_ubuntu_installs_the_branch_headless_set_from_nvidias_repository(tmp_path: Path):
    got, out = render(tmp_path, UBUNTU_2204)
    assert got["driver_packages"] == [
        f"nvidia-headless-{BRANCH}",
        f"nvidia-dkms-{BRANCH}",
        f"nvidia-utils-{BRANCH}",
        f"libnvidia-compute-{BRANCH}",
        f"nvidia-compute-utils-{BRANCH}",
    ]
    assert got["driver_repo"] == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"
    assert got["driver_headers_package"] == "linux-headers-6.8.0-1017-aws"
    pref = (out / "nvidia_driver.pref").read_text()
    assert f"Package: src:nvidia-graphics-drivers-{BRANCH}\n" in pref
    assert f"Pin: version {LOCK['nvidia_driver']['packages']['ubuntu']}\n" in pref
    assert "Pin-Priority: 1001" in pref
    assert got["dcgm_repo"].endswith("/ubuntu2204/x86_64/")
    assert f"Pin: version {LOCK['dcgm']['packages']['ubuntu']}" in (out / "dcgm.pref").read_text()
    cuda = LOCK["cuda"]["version"].split(".")
    assert got["cuda_package"] == f"cuda-toolkit-{cuda[0]}-{cuda[1]}"
    assert got["cuda_package_version"] == LOCK["cuda"]["packages"]["ubuntu"]
    assert (out / "nvidia_fabricmanager.pref").read_text().count(f"nvidia-fabricmanager-{BRANCH}") == 1


def test_rhel_installs_exact_nevras_from_the_module_stream_and_locks_them(tmp_path: Path):
    got, out = render(tmp_path, ROCKY_9)
    assert got["driver_module_stream"] == f"nvidia-driver:{BRANCH}-dkms"
    assert got["driver_repo"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/"
    assert f"nvidia-driver-{LOCK['nvidia_driver']['packages']['rhel']}.el9" in got["driver_rpm_specs"]
    assert f"kmod-nvidia-latest-dkms-{LOCK['nvidia_driver']['packages']['rhel']}.el9" in got["driver_rpm_specs"]
    assert all(DRIVER in spec for spec in got["driver_rpm_specs"])
    assert got["driver_headers_package"] == "kernel-devel-5.14.0-427.13.1.el9_4.x86_64"
    assert got["toolkit_rpm_specs"] == [
        f"{p}-{LOCK['container_toolkit']['packages']['rhel']}"
        for p in ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"]
    ]
    assert got["fabricmanager_package"] == "nvidia-fabric-manager"
    assert got["fabricmanager_package_version"].startswith(DRIVER + "-")
    assert got["dcgm_repo"].endswith("/rhel9/x86_64/")
    assert not list(out.glob("*.pref")), "no apt preferences on RHEL"


def test_debian_uses_nvidias_debian12_repository_for_nvidia_only_packages(tmp_path: Path):
    got, out = render(tmp_path, DEBIAN_12)
    assert got["dcgm_repo"].endswith("/debian12/x86_64/")
    assert "Package: src:nvidia-graphics-drivers\n" in (out / "nvidia_driver.pref").read_text()
    assert got["cuda_package_version"] == "", "the lockfile has no cuda.packages.debian"


@pytest.mark.parametrize("task_file", ["install-ubuntu.yml", "install-rhel.yml", "install-debian.yml"])
def test_driver_task_files_pin_and_hold(task_file: str):
    text = (HERE.parents[1] / "ansible" / "roles" / "nvidia_driver" / "tasks" / task_file).read_text()
    if task_file == "install-rhel.yml":
        assert "community.general.dnf_versionlock" in text and "_nvidia_driver_rpm_specs" in text
    else:
        assert "apt-preferences.pref.j2" in text and "'apt-mark', 'hold'" in text
