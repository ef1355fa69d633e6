"""The version lockfile: the compatibility matrix holds, and no version literal lives anywhere else."""

from __future__ import annotations

import copy
import re
from datetime import date
from pathlib import Path

import pytest

from gpu_platform.errors import ConfigError
from gpu_platform.versions import deep_merge, load_lockfile, overlay_data, overlay_lockfile, parse_lockfile, past_support, raw_lockfile, support_end
from tests.conftest import ROOT

LOCKFILE = ROOT / "infra" / "gpu_platform" / "data" / "versions.yaml"


def test_lockfile_loads_and_pins_every_component() -> None:
    lock = load_lockfile()
    assert lock.nvidia_driver.version.startswith(lock.nvidia_driver.branch + ".")
    assert lock.fabric_manager.version == lock.nvidia_driver.version
    for key in ("gpu-operator", "kueue", "volcano", "cluster-autoscaler", "kube-prometheus-stack"):
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", lock.chart(key).version), key
    for key in ("driver", "device-plugin", "mig-manager", "dcgm-exporter", "cluster-autoscaler"):
        assert lock.image(key).tag not in {"latest", ""}


@pytest.mark.parametrize(
    ("override", "path", "fragment"),
    [
        ({"cuda": {"version": "13.1.0"}}, "cuda.version", "needs a newer driver"),
        ({"fabric_manager": {"version": "535.230.02"}}, "fabric_manager.version", "differs from the driver"),
        ({"nvidia_driver": {"version": "550.54.15"}}, "nvidia_driver.version", "is not on branch 580"),
        ({"nvidia_driver": {"packages": {"debian": "535.247.01-1"}}}, "nvidia_driver.packages.debian", "does not carry driver"),
        # Volcano 1.15 stops at 1.35 (its README's compatibility table): why the pin is 1.35, not 1.36.
        ({"kubernetes": {"version": "1.36"}}, "compatibility.kubernetes.volcano", "outside volcano's supported range"),
        ({"kernel": {"min": "6.9", "max": "6.8"}}, "kernel", "above max"),
        ({"images": {"mig-manager": {"tag": "v0.14.0"}}}, "images.mig-manager.tag", "same release"),
        ({"images": {"device-plugin": {"tag": "latest"}}}, "images.device-plugin.tag", "floating version"),
        ({"eks": {"ami_release_version": "1.32.9-20251001"}}, "eks.ami_release_version", "not built for Kubernetes 1.35"),
        ({"images": {"dcgm-exporter": {"tag": "3.3.9-3.6.1-ubuntu22.04"}}}, "images.dcgm-exporter.tag", "not built on DCGM"),
        # The EKS AMI's own packages (amazon-eks-ami CHANGELOG.md): CDI needs containerd 1.7+, the driver is the AMI's.
        ({"eks": {"ami_packages": {"containerd": "1.6.36"}}}, "eks.ami_packages.containerd", "cannot inject GPUs by CDI"),
    ],
)
def test_compatibility_matrix_rejects_drift(override: dict, path: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_lockfile(deep_merge(raw_lockfile(), override))
    lines = [str(p) for p in err.value.problems]
    assert any(f": {path}: " in line and fragment in line for line in lines), lines


def test_the_eks_ami_ships_the_driver_branch_the_lockfile_names() -> None:
    """eks.ami_driver_branch (what the gate judges GPUs against) is the AMI release's real driver (eks.ami_packages)."""
    eks = load_lockfile().eks
    assert eks.ami_packages["kmod-nvidia-latest-dkms"].split(".")[0] == eks.ami_driver_branch


def test_unknown_lockfile_key_is_rejected() -> None:
    data = copy.deepcopy(raw_lockfile())
    data["nvidia_driver"]["brnach"] = "535"
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    assert "nvidia_driver.brnach" in str(err.value)


# A version-looking literal: 1.2.3, v0.19.2, 535.261.03, 12.2 after a version-ish key.
VERSION_LITERAL = re.compile(r"""(?<![\w.])v?\d+\.\d+\.\d+(?:[-+.][\w.]+)?(?![\w.])""")
IPV4 = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
SCANNED = ("infra", "stacks", "ansible", "policies")
SKIP_PARTS = {"__pycache__", ".gpu-host-deps", "fixtures", "molecule"}
# Files allowed to hold version literals: the lockfile itself; catalog data that describes
# hardware (prices, not software); and toolchain manifests whose own tools need literal pins
# (ansible-galaxy reads requirements.yml, like pip reads requirements.txt, which is not scanned;
# `packer init` reads required_plugins, literals only, kept equal to the lockfile by test_packer.py).
ALLOWED = {
    LOCKFILE,
    ROOT / "infra" / "gpu_platform" / "data" / "catalog.yaml",
    ROOT / "ansible" / "requirements.yml",
    ROOT / "ansible" / "packer" / "plugins.pkr.hcl",
}


def _scanned_files() -> list[Path]:
    out = []
    for top in SCANNED:
        for path in (ROOT / top).rglob("*"):
            scanned_kind = path.is_file() and path.suffix in {".py", ".yaml", ".yml", ".j2", ".hcl", ".cfg", ".toml", ".txt"}
            if scanned_kind and not SKIP_PARTS & set(path.relative_to(ROOT).parts) and path not in ALLOWED:
                out.append(path)
    return out


def stray_pins(text: str) -> list[str]:
    """Version literals in a file's lines (comments included: a stale comment misleads as much as code)."""
    hits = []
    for line in text.splitlines():
        for m in VERSION_LITERAL.finditer(line):
            if IPV4.fullmatch(m.group(0)):
                continue  # an address or CIDR, not a version
            if "://" in line and m.group(0) in line.split("://", 1)[1].split()[0]:
                continue  # part of a URL path
            hits.append(m.group(0))
    return hits


def test_stray_pin_detector_finds_pins() -> None:
    assert stray_pins('version: "0.19.2"') == ["0.19.2"]
    assert stray_pins("image: nvcr.io/nvidia/driver:535.261.03") == ["535.261.03"]
    assert stray_pins("tag: v1.33.2") == ["v1.33.2"]
    assert stray_pins("cidr: 10.40.0.0/16") == []  # an IPv4 CIDR has four parts, not a version
    assert stray_pins("name: all-1g.10gb") == []


def test_no_version_literal_outside_the_lockfile() -> None:
    files = _scanned_files()
    assert any(p.suffix == ".py" for p in files)
    offenders = {str(p.relative_to(ROOT)): hits for p in files if (hits := stray_pins(p.read_text(errors="replace")))}
    assert not offenders, f"version literals outside {LOCKFILE.relative_to(ROOT)}: {offenders}"


def test_lab_overlay_says_what_it_overrides_and_yields_a_consistent_lockfile() -> None:
    """The lookup plugin and gpu_platform.versions lay `overlays.<name>.overrides` over the pins the same way."""
    raw = raw_lockfile()
    lab = raw["overlays"]["debian12-lab"]
    assert "535" in lab["why"] and "Debian" in lab["why"]
    assert lab["applies_to"] == {"Debian": ["12"]}
    merged = overlay_data(raw, "debian12-lab")
    # The lab converges Debian's own 535 build; the Ubuntu/RHEL production pins are removed, not kept.
    assert merged["nvidia_driver"] == {"branch": "535", "version": "535.261.03", "packages": {"debian": "535.261.03-1"}}
    assert merged["fabric_manager"]["version"] == merged["images"]["driver"]["tag"] == "535.261.03"
    assert merged["cuda"]["packages"] == {}
    # Everything the overlay does not name stays the production pin.
    assert merged["dcgm"] == raw["dcgm"] and merged["container_toolkit"] == raw["container_toolkit"]
    merged.pop("overlays")
    parse_lockfile(merged)


def test_an_overlay_that_breaks_the_matrix_is_reported_under_its_own_key_path() -> None:
    data = copy.deepcopy(raw_lockfile())
    del data["overlays"]["debian12-lab"]["overrides"]["fabric_manager"]
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    assert [str(p) for p in err.value.problems] == [
        "infra/gpu_platform/data/versions.yaml: overlays.debian12-lab.overrides.fabric_manager.version: "
        f"'{data['fabric_manager']['version']}' differs from the driver 535.261.03; fabric manager must equal the driver version exactly"
    ]


def test_production_driver_branch_is_in_support_with_its_source() -> None:
    """NVIDIA's driver lifecycle table gives each branch's end of life; the production pin must be inside it."""
    lock = load_lockfile()
    end = support_end(lock, "nvidia_driver_branches", lock.nvidia_driver.branch)
    assert end is not None and end.source.startswith("https://docs.nvidia.com/")
    assert support_end(lock, "nvidia_driver_branches", "535").ends == date(2026, 6, 30)  # type: ignore[union-attr]
    assert end.ends > date(2026, 11, 26)
    release_lines = {
        "cuda": ".".join(lock.cuda.version.split(".")[:2]),
        "dcgm": ".".join(lock.dcgm.version.split(".")[:2]),
        "fabric_manager": lock.nvidia_driver.branch,
    }
    for component, key in release_lines.items():
        assert support_end(lock, component, key) is not None, f"support.{component}.{key} missing"


@pytest.mark.parametrize(
    ("component", "key", "pinned_at"),
    [
        ("cuda", "12.9", "cuda.version"),
        ("fabric_manager", "580", "fabric_manager.version"),
        ("dcgm", "4.6", "dcgm.version"),
        ("container_toolkit", "1.20", "container_toolkit.version"),
        ("mig_parted", "0.15", "mig_parted.version"),
    ],
)
def test_every_node_component_needs_its_support_entry(component: str, key: str, pinned_at: str) -> None:
    """Each component the Ansible roles install carries its end of support, or says why there is none."""
    data = copy.deepcopy(raw_lockfile())
    del data["support"][component][key]
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    assert [str(p) for p in err.value.problems] == [
        f"infra/gpu_platform/data/versions.yaml: support.{component}: no end-of-support entry for '{key}' (pinned at {pinned_at}); "
        f'allowed: support.{component}."{key}": {{ends: YYYY-MM-DD, source: <vendor URL>}} '
        "(ends: null only with policy: <why the vendor publishes no date>)"
    ]


def test_an_undated_support_entry_must_say_why() -> None:
    data = copy.deepcopy(raw_lockfile())
    data["support"]["dcgm"]["4.6"] = {"ends": None, "source": "https://github.com/NVIDIA/DCGM/blob/master/docs/support_EOL.md"}
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    (problem,) = err.value.problems
    assert problem.path == "support.dcgm.4.6"
    assert "ends is null without a policy" in str(problem)


def test_undated_entries_are_kept_through_an_overlay_and_never_expire() -> None:
    """An overlay's null removes a key it names; the base's own `ends: null` is a value and stays."""
    lock = load_lockfile()
    lab = overlay_lockfile(lock, "debian12-lab")
    toolkit = support_end(lab, "container_toolkit", ".".join(lab.container_toolkit.version.split(".")[:2]))
    assert toolkit is not None and toolkit.ends is None and toolkit.policy
    assert not past_support(toolkit, date(2099, 1, 1))
    assert lab.cuda.packages == {} and lab.nvidia_driver.branch == "535"


def test_the_matrix_knows_r595_and_r620_with_their_toolkits() -> None:
    """NVIDIA's Table 2 (docs/620) lists R595 (production branch) and R620 (long-term support) beside R580;
    CUDA 13.2 GA needs a 595 driver (CUDA 13.2 release notes, Table 3), so it is refused on R580 and judged
    on R595 only by what is still unrecorded: NVIDIA's repositories per OS and the support entries."""
    on_580 = {"cuda": {"version": "13.2.0"}}
    with pytest.raises(ConfigError) as err:
        parse_lockfile(deep_merge(raw_lockfile(), on_580))
    assert any("cuda.version: CUDA 13.2.0 needs a newer driver than branch 580; allowed: CUDA <= 13.0" in str(p) for p in err.value.problems)

    packages = {"ubuntu": "595.45.04-0ubuntu1", "rhel": "595.45.04-1"}
    on_595 = {"nvidia_driver": {"branch": "595", "version": "595.45.04", "packages": packages}, "cuda": {"version": "13.2.0"}}
    with pytest.raises(ConfigError) as err:
        parse_lockfile(deep_merge(raw_lockfile(), on_595))
    lines = [str(p) for p in err.value.problems]
    assert not any("not in compatibility.driver_branches" in line or "needs a newer driver" in line for line in lines), lines
    assert any("driver branch 595 is not published for ubuntu2204" in line for line in lines), lines

    support = load_lockfile().support["nvidia_driver_branches"]
    assert (support["595"].ends, support["620"].ends) == (date(2027, 3, 31), date(2029, 9, 30))
