"""Each supported OS gets a driver and CUDA package set NVIDIA's repository for that OS publishes.

The lockfile's `package_availability` table records, per OS repository
(developer.download.nvidia.com/compute/cuda/repos/<os>/x86_64/), which driver branches and CUDA
toolkit minors exist there. apt and dnf resolve `nvidia-headless-<branch>=<version>` and
`cuda-toolkit-<major>-<minor>=<version>` only from that repository's index, so a pin missing from it
fails on the host in the middle of a converge; the preflight refuses it first, in one line.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.errors import ConfigError
from gpu_platform.versions import PackagePin, check_availability, check_image_kernels, minor, node_oses, parse_lockfile
from tests.ansible.helpers import (
    ANSIBLE_DIR,
    DEBIAN_12,
    HERE,
    RHEL_8,
    RHEL_9,
    UBUNTU_2204,
    UBUNTU_2404,
    ansible_env,
    failure_messages,
    load_lockfile,
    run_playbook,
)

LOCK = load_lockfile()
# The node OSes (gpu_platform.versions.node_oses): RHEL 8 boots cgroup v1, which the 1.35 kubelet refuses.
OSES = [(UBUNTU_2204, "ubuntu2204", "ubuntu"), (UBUNTU_2404, "ubuntu2404", "ubuntu"), (RHEL_9, "rhel9", "rhel")]
IDS = ["ubuntu2204", "ubuntu2404", "rhel9"]


def preflight(role: str, facts: dict[str, str], lockfile: Path | None = None, **role_vars: Any) -> tuple[int, str]:
    """Run one role's preflight posing as `facts`, optionally against a lockfile copy."""
    env = ansible_env(GPU_PLATFORM_VERSIONS_FILE=str(lockfile)) if lockfile else None
    extra = {"fake": facts, "role_name": role, "role_tasks": "preflight", **role_vars}
    result = run_playbook(HERE / "playbooks" / "role_under_test.yml", extra, "--check", env=env)
    return result.returncode, " | ".join(failure_messages(result))


def lockfile_copy(tmp_path: Path, **sections: dict[str, Any]) -> Path:
    data = load_lockfile()
    data.update(sections)
    path = tmp_path / "versions.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("facts", "os_key", "source"), OSES, ids=IDS)
def test_rendered_package_set_exists_in_that_os_repository(tmp_path: Path, facts: dict[str, str], os_key: str, source: str):
    out = tmp_path / "out"
    out.mkdir()
    result = run_playbook(HERE / "playbooks" / "render.yml", {"fake": facts, "out_dir": str(out)})
    assert result.returncode == 0, result.stdout[-3000:]
    got = json.loads((out / "facts.json").read_text())
    assert got["driver_repo_os"] == os_key
    assert got["driver_repo"].endswith(f"/{os_key}/x86_64/")
    avail = LOCK["package_availability"][os_key]
    assert avail["package_source"] == source
    assert LOCK["nvidia_driver"]["branch"] in avail["driver_branches"]
    assert got["driver_package_version"] == LOCK["nvidia_driver"]["packages"][source]
    cuda = LOCK["cuda"]["version"]
    assert got["cuda_package"] == "cuda-toolkit-{}-{}".format(*minor(cuda))
    assert minor(avail["cuda"]["min"]) <= minor(cuda) <= minor(avail["cuda"]["max"])


@pytest.mark.parametrize(("facts", "os_key", "source"), OSES, ids=IDS)
def test_preflight_accepts_the_production_pins(facts: dict[str, str], os_key: str, source: str):
    rc, msg = preflight("nvidia_driver", facts, nvidia_driver_running_kernel=False, nvidia_driver_gpu_model="H100-80GB")
    assert rc == 0, msg
    rc, msg = preflight("cuda_toolkit", facts)
    assert rc == 0, msg


@pytest.mark.parametrize(("facts", "os_key", "source"), OSES, ids=IDS)
def test_the_kernel_each_supported_os_boots_is_in_the_tested_range(facts: dict[str, str], os_key: str, source: str):
    """With the running kernel checked (as on a real host or a Packer build instance), the lockfile's
    kernel.min..kernel.max admits what each OS boots: RHEL 9's 5.14, Ubuntu 22.04's
    AWS 6.8, and the rolling 7.0 a fresh Ubuntu 24.04 cloud image boots. The preflight goes on to
    query the headers package on this test machine, which may fail; only the range assert matters."""
    _rc, msg = preflight("nvidia_driver", facts, nvidia_driver_gpu_model="H100-80GB")
    assert "is outside the range the driver branch is tested against" not in msg, msg
    # The range check ran: a check after it stopped the play (the headers lookup on this Debian test
    # machine: no such apt package, or no dnf for the RHEL host), never one before it.
    after_the_range = ("package in the configured repositories", "Error executing command", "not cgroup2fs")
    assert msg == "" or any(s in msg for s in after_the_range), msg


# The node OSes plus the Debian 12 lab (overlays.debian12-lab): every OS a role run may meet.
SUPPORTED_OSES = ["ubuntu2204", "ubuntu2404", "rhel9", "debian12"]
PREFLIGHT = HERE.parents[1] / "ansible" / "roles" / "nvidia_driver" / "tasks" / "preflight.yml"


def test_every_supported_os_records_the_kernels_its_images_boot_with_source_and_date():
    lock = parse_lockfile(load_lockfile())
    assert set(node_oses(lock)) <= set(SUPPORTED_OSES)
    for os_key in SUPPORTED_OSES:
        kernels = lock.package_availability[os_key].image_kernels
        assert kernels is not None, f"package_availability.{os_key}.image_kernels is missing"
        assert kernels.series, os_key
        assert all(s is not None for s in kernels.series.values()) or kernels.note, f"{os_key}: unsourced series without a note"
        assert kernels.sources and all(s.startswith("https://") for s in kernels.sources), os_key
        assert kernels.read.year >= 2026, os_key


def test_the_kernels_supported_os_images_boot_lie_in_the_range_the_driver_preflight_enforces():
    """The range is the one nvidia_driver's preflight asserts: kernel.min and kernel.max of the lockfile."""
    preflight_tasks = PREFLIGHT.read_text(encoding="utf-8")
    assert "is version(lookup('gpu_platform_versions', 'kernel.min'), '>=')" in preflight_tasks
    assert "is version(lookup('gpu_platform_versions', 'kernel.max'), '<=')" in preflight_tasks
    lock = parse_lockfile(load_lockfile())
    low, high = minor(lock.kernel.min), minor(lock.kernel.max)
    for os_key in SUPPORTED_OSES:
        kernels = lock.package_availability[os_key].image_kernels
        assert kernels is not None, os_key
        for flavour, series in kernels.series.items():
            assert series is None or low <= minor(series) <= high, (
                f"{os_key} images boot kernel {series} ({flavour}); the driver preflight allows "
                f"{lock.kernel.min} to {lock.kernel.max} (kernel.min/kernel.max)"
            )
    assert check_image_kernels(lock) == []


def test_an_os_image_kernel_past_the_range_is_reported_and_refused_by_the_preflight(tmp_path: Path):
    """A synthetic OS whose images boot 7.4 (past kernel.max): the lockfile check names it, and the
    preflight refuses a host running that kernel in one line."""
    data = load_lockfile()
    data["package_availability"]["ubuntu2610-synthetic"] = {
        **data["package_availability"]["ubuntu2404"],
        "image_kernels": {"series": {"hwe": "7.4"}, "sources": ["https://example.invalid/"], "read": "2026-11-26"},
    }
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    assert [str(p) for p in err.value.problems] == [
        "infra/gpu_platform/data/versions.yaml: package_availability.ubuntu2610-synthetic.image_kernels.series.hwe: "
        f"ubuntu2610-synthetic images boot kernel 7.4 (hwe), outside the driver's tested range; "
        f"allowed: kernel.min {LOCK['kernel']['min']} to kernel.max {LOCK['kernel']['max']}"
    ]
    rc, msg = preflight("nvidia_driver", {**UBUNTU_2404, "kernel": "7.4.0-1001-aws"}, nvidia_driver_gpu_model="H100-80GB")
    assert rc != 0
    assert "kernel 7.4.0-1001-aws is outside the range the driver branch is tested against" in msg


def test_the_old_kernel_max_would_refuse_ubuntu_2404_images():
    """Before 2026-11-26 kernel.max was 6.17; Ubuntu 24.04's rolling HWE and AWS kernels are 7.0 now."""
    data = load_lockfile()
    data["kernel"] = {**data["kernel"], "max": "6.17"}
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    paths = sorted(p.path for p in err.value.problems)
    assert paths == [
        "package_availability.ubuntu2404.image_kernels.series.aws-rolling",
        "package_availability.ubuntu2404.image_kernels.series.hwe",
    ]


def test_cuda_that_predates_the_ubuntu_2404_repository_fails_in_one_line(tmp_path: Path):
    old = lockfile_copy(tmp_path, cuda={"version": "12.2.2", "packages": {"ubuntu": "12.2.2-1", "rhel": "12.2.2-1"}})
    rc, msg = preflight("cuda_toolkit", UBUNTU_2404, old)
    assert rc != 0
    src = LOCK["package_availability"]["ubuntu2404"]
    assert msg == (
        f"cuda_toolkit: CUDA 12.2.2 (cuda.version) is not published for ubuntu2404 ({src['source']}); "
        f"published there: {src['cuda']['min']} to {src['cuda']['max']}"
    )
    # The same pin exists in the 22.04 repository, so that host passes.
    rc, msg = preflight("cuda_toolkit", UBUNTU_2204, old)
    assert rc == 0, msg


def test_a_driver_branch_missing_from_the_os_repository_fails_in_one_line(tmp_path: Path):
    old = lockfile_copy(
        tmp_path,
        nvidia_driver={"branch": "535", "version": "535.261.03", "packages": {"ubuntu": "535.261.03-0ubuntu1", "rhel": "535.261.03-1"}},
    )
    rc, msg = preflight("nvidia_driver", UBUNTU_2404, old, nvidia_driver_running_kernel=False)
    assert rc != 0
    assert msg.startswith("nvidia_driver: driver branch 535 (nvidia_driver.branch) has no packages for ubuntu2404 (")
    assert "published there: " + ", ".join(LOCK["package_availability"]["ubuntu2404"]["driver_branches"]) in msg


def test_lockfile_check_names_each_os_a_pin_is_missing_from():
    """The same table is checked when the lockfile loads (plan, check, make test), before any host."""
    lock = parse_lockfile(load_lockfile())
    old_cuda = PackagePin(version="12.2.2", packages={"ubuntu": "12.2.2-1", "rhel": "12.2.2-1"})
    problems = [str(p) for p in check_availability(lock.model_copy(update={"cuda": old_cuda}))]
    assert problems == [
        "infra/gpu_platform/data/versions.yaml: cuda.packages.ubuntu: CUDA 12.2.2 is not published for ubuntu2404 "
        f"({LOCK['package_availability']['ubuntu2404']['source']}); allowed on ubuntu2404: CUDA 12.5..13.0"
    ]


@pytest.mark.parametrize("facts", [RHEL_8], ids=["rhel8"])
def test_rhel_8_is_refused_because_it_boots_cgroup_v1(facts: dict[str, str]):
    assert "rhel8" not in node_oses(parse_lockfile(load_lockfile()))
    rc, msg = preflight("nvidia_driver", facts, nvidia_driver_running_kernel=False)
    assert rc != 0
    assert msg.startswith("nvidia_driver: RedHat 8 on x86_64 is not supported")


def test_the_image_manifest_role_offers_exactly_the_node_oses() -> None:
    """Its argument spec listed rhel8 after the lockfile dropped it as a node OS (issue 34)."""
    spec = yaml.safe_load((ANSIBLE_DIR / "roles/image_manifest/meta/argument_specs.yml").read_text())
    text = " ".join(spec["argument_specs"]["declared_os"]["options"]["image_manifest_os"]["description"].split())
    offered = re.findall(r"C\((\w+)\)", text.split("; not ")[0])
    assert set(offered) - {"package_availability"} == set(node_oses(parse_lockfile(load_lockfile())))


def test_a_host_not_booted_into_cgroup_v2_fails_preflight_in_one_line(tmp_path: Path):
    """stat -f names /sys/fs/cgroup's filesystem: cgroup2fs on the unified hierarchy, tmpfs under v1."""
    # A kernel whose headers this Debian test machine's archive publishes, so the checks before pass.
    headers = subprocess.run(
        ["apt-cache", "search", "--names-only", r"^linux-headers-6\.1\.0-[0-9]+-amd64$"], capture_output=True, text=True, check=False
    )
    kernels = sorted(line.split()[0].removeprefix("linux-headers-") for line in headers.stdout.splitlines())
    if not kernels:
        pytest.skip("no Debian kernel headers in this machine's apt index")
    facts = {**DEBIAN_12, "kernel": kernels[-1]}
    rc, msg = preflight(
        "nvidia_driver",
        facts,
        nvidia_driver_gpu_model="H100-80GB",
        _nvidia_driver_cgroup_root=str(tmp_path),
        gpu_platform_versions_overlay="debian12-lab",
    )
    assert rc != 0
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True, check=True).stdout.strip()
    kube = LOCK["kubernetes"]["version"]
    assert msg == (
        f"nvidia_driver: {tmp_path} on localhost is {fs}, not cgroup2fs; the kubelet of Kubernetes {kube} refuses cgroup v1 "
        "(failCgroupV1, KEP-5573): boot with systemd.unified_cgroup_hierarchy=1 or use an OS whose images boot cgroup v2"
    )
