"""What the Ubuntu, RHEL and Debian task files would install and write, rendered from the real lockfile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ansible.helpers import DEBIAN_12, HERE, ROCKY_9, UBUNTU_2204, load_lockfile, run_playbook

LOCK = load_lockfile()
BRANCH = LOCK["nvidia_driver"]["branch"]
DRIVER = LOCK["nvidia_driver"]["version"]


def render(tmp_path: Path, facts: dict[str, str], **role_vars: str) -> tuple[dict[str, Any], Path]:
    out = tmp_path / "out"
    out.mkdir()
    result = run_playbook(HERE / "playbooks" / "render.yml", {"fake": facts, "out_dir": str(out), **role_vars})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return json.loads((out / "facts.json").read_text()), out


def test_ubuntu_installs_the_branch_headless_set_from_nvidias_repository(tmp_path: Path):
    got, out = render(tmp_path, UBUNTU_2204)
    # The open kernel modules by default (NVIDIA's driver installation guide, Ubuntu: the -open packages).
    assert got["driver_packages"] == [
        f"nvidia-headless-{BRANCH}-open",
        f"nvidia-dkms-{BRANCH}-open",
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
    assert got["driver_module_stream"] == f"nvidia-driver:{BRANCH}-open"
    assert got["driver_repo"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/"
    assert f"nvidia-driver-{LOCK['nvidia_driver']['packages']['rhel']}.el9" in got["driver_rpm_specs"]
    assert f"kmod-nvidia-open-dkms-{LOCK['nvidia_driver']['packages']['rhel']}.el9" in got["driver_rpm_specs"]
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
    pref = (out / "nvidia_driver.pref").read_text()
    # Debian builds the open modules from their own source package: both are pinned to the build.
    assert "Package: src:nvidia-graphics-drivers\n" in pref and "Package: src:nvidia-open-gpu-kernel-modules\n" in pref
    assert got["driver_packages"][0] == "nvidia-open-kernel-dkms"
    assert got["cuda_package_version"] == "", "the lockfile has no cuda.packages.debian"


@pytest.mark.parametrize("task_file", ["install-ubuntu.yml", "install-rhel.yml", "install-debian.yml"])
def test_driver_task_files_pin_and_hold(task_file: str):
    text = (HERE.parents[1] / "ansible" / "roles" / "nvidia_driver" / "tasks" / task_file).read_text()
    if task_file == "install-rhel.yml":
        assert "community.general.dnf_versionlock" in text and "_nvidia_driver_rpm_specs" in text
    else:
        assert "apt-preferences.pref.j2" in text and "'apt-mark', 'hold'" in text


def test_rhel_driver_install_enables_epel_and_the_stream_then_locks_before_installing():
    """What dnf does with each step on a fresh RHEL host.

    - kmod-nvidia-latest-dkms `Requires: dkms` (NVIDIA yum-packaging-dkms-nvidia, dkms-nvidia.spec),
      which only EPEL provides: EPEL must be added before the driver packages.
    - `dnf install @stream` goes through ansible-core's dnf module `module_base.install()`
      (lib/ansible/modules/dnf.py), which installs the stream's default profile at its newest build;
      the stream must only be enabled (`dnf module enable`), and the exact NEVRAs installed.
    - The versionlock is written before the install so the transaction cannot resolve another build.
    """
    tasks = yaml.safe_load((HERE.parents[1] / "ansible" / "roles" / "nvidia_driver" / "tasks" / "install-rhel.yml").read_text())
    names = [t["name"] for t in tasks]

    def index(fragment: str) -> int:
        return next(i for i, name in enumerate(names) if fragment in name)

    epel = tasks[index("Add EPEL")]["ansible.builtin.dnf"]["name"]
    assert epel.endswith("/epel-release-latest-{{ ansible_facts['distribution_major_version'] }}.noarch.rpm")
    stream = tasks[index("Enable the driver branch module stream")]
    assert stream["ansible.builtin.command"]["argv"][:4] == ["dnf", "--assumeyes", "module", "enable"]
    assert not any(str(t.get("ansible.builtin.dnf", {}).get("name", "")).startswith("@") for t in tasks), "no module profile install"
    assert (
        index("Trust EPEL") < index("Add EPEL") < index("Enable the driver branch") < index("Lock the driver") < index("Install the driver packages")
    )


def test_mig_role_masks_the_packaged_mig_manager_unit():
    """nvidia-mig-manager's package enables its own unit, whose service.sh regenerates config.yaml
    and applies `all-disabled` at every boot (mig-parted deployments/systemd/service.sh and
    override.conf at the pinned tag); the role masks it. Molecule's verify reads LoadState=masked."""
    tasks = yaml.safe_load((HERE.parents[1] / "ansible" / "roles" / "mig" / "tasks" / "configure.yml").read_text())
    mask = next(t for t in tasks if "ansible.builtin.systemd_service" in t and t["ansible.builtin.systemd_service"].get("masked"))
    assert mask["ansible.builtin.systemd_service"]["name"] == "{{ _mig_vendor_unit }}"
    assert (
        yaml.safe_load((HERE.parents[1] / "ansible" / "roles" / "mig" / "vars" / "main.yml").read_text())["_mig_vendor_unit"]
        == "nvidia-mig-manager.service"
    )
    service = (HERE / "fixtures" / "mig-parted-nvidia-mig-manager.service").read_text()
    assert "ExecStart=/bin/bash /etc/nvidia-mig-manager/service.sh" in service


@pytest.mark.parametrize(
    ("facts", "open_module", "proprietary_module"),
    [
        (DEBIAN_12, "nvidia-open-kernel-dkms", "nvidia-kernel-dkms"),
        (UBUNTU_2204, f"nvidia-dkms-{BRANCH}-open", f"nvidia-dkms-{BRANCH}"),
        (ROCKY_9, "kmod-nvidia-open-dkms", "kmod-nvidia-latest-dkms"),
    ],
    ids=["debian12", "ubuntu2204", "rhel9"],
)
def test_kernel_module_type_selects_the_flavour_each_repository_names(
    tmp_path: Path, facts: dict[str, str], open_module: str, proprietary_module: str
):
    """The open and proprietary module builds are different packages in every repository (Debian:
    src:nvidia-open-gpu-kernel-modules vs nvidia-graphics-drivers; NVIDIA's CUDA repositories:
    `-open` packages and the `<branch>-open` dnf stream); the two cannot both be installed."""
    got, _ = render(tmp_path, facts)
    assert open_module in got["driver_packages"] and proprietary_module not in got["driver_packages"]
    (tmp_path / "p").mkdir()
    got, out = render(tmp_path / "p", facts, nvidia_driver_kernel_module_type="proprietary")
    assert proprietary_module in got["driver_packages"] and open_module not in got["driver_packages"]
    if facts is ROCKY_9:
        assert got["driver_module_stream"] == f"nvidia-driver:{BRANCH}-dkms"
    if facts is DEBIAN_12:
        assert "nvidia-open-gpu-kernel-modules" not in (out / "nvidia_driver.pref").read_text()
