"""The GPU catalog: internally consistent, and its MIG data equal to NVIDIA's mig-parted configs."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.behaviour import mig
from gpu_platform.catalog import load_catalog
from gpu_platform.cli import main
from gpu_platform.pricing import TIERS, tier_rate
from gpu_platform.spec.checks import CAPACITY_BLOCK_FAMILIES
from gpu_platform.versions import load_lockfile
from tests.ansible.helpers import load_nvidia_smi_module
from tests.conftest import require_shared_crds, stack_path

SMI = load_nvidia_smi_module()

MIG_GPUS = ("A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB")


def test_families_a_user_expects_are_present() -> None:
    families = {t.family for t in load_catalog().instance_types.values()}
    assert families >= {"g4dn", "g5", "g6", "g6e", "p4d", "p4de", "p5", "p5e", "p5en"}


def test_prices_carry_region_date_and_source() -> None:
    c = load_catalog()
    assert c.pricing.region == "us-east-1"
    assert c.pricing.as_of[:4].isdigit()
    assert c.pricing.source.startswith("https://")
    priced = [t for t in c.instance_types.values() if t.price_per_hour is not None]
    assert len(priced) >= 30
    # More GPUs of the same model never cost less per hour.
    for fam in ("g5", "g6", "g6e"):
        sizes = [t for t in c.instance_types.values() if t.family == fam and t.price_per_hour]
        by_gpus = sorted(sizes, key=lambda t: (t.gpus, t.vcpu))
        assert by_gpus[-1].price_per_hour == max(t.price_per_hour or 0 for t in sizes)


def test_only_a100_h100_h200_class_support_mig() -> None:
    c = load_catalog()
    assert {g.name for g in c.gpus.values() if g.supports_mig} == set(MIG_GPUS)
    for name in MIG_GPUS:
        gpu = c.gpu(name)
        assert "all-balanced" in gpu.mig_configs
        for layout in gpu.mig_configs.values():
            slices = sum(int(p.split("g.")[0]) * n for p, n in layout.items())
            assert slices <= 7, (name, layout)


def test_every_gpu_model_has_a_driver_floor_in_the_lockfile() -> None:
    lock = load_lockfile()
    assert set(load_catalog().gpus) == set(lock.compatibility.gpu_min_driver_branch)


def test_nvswitch_and_efa_on_the_training_types() -> None:
    c = load_catalog()
    for name in ("p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"):
        t = c.instance(name)
        assert t.nvswitch and t.supports_efa and t.gpus == 8


def _mig_parted_layout(doc: dict[str, Any], name: str, device_id: str) -> dict[str, int] | None:
    """The layout mig-parted applies to a GPU with this PCI device id under config `name`, None if MIG is off.

    Decided by the mig role's own node check (gpu_node_validate's `nvidia_smi_facts.mig_layout_for`,
    which picks the entry the way mig-parted does), so the catalog and the nodes read configs alike.
    """
    entry = SMI.mig_layout_for({"index": 0, "pci_device_id": SMI._pci_id(device_id)}, doc, name)
    if entry is None or not entry["mig_enabled"]:
        return None
    return {str(k): int(v) for k, v in entry["mig_devices"].items()}


@pytest.mark.parametrize("gpu_name", MIG_GPUS)
def test_mig_configs_match_mig_parted(gpu_name: str) -> None:
    crds = require_shared_crds()
    doc = yaml.safe_load((crds / "mig-parted" / "v0.15.0" / "config-default.yaml").read_text())
    configs = doc["mig-configs"]
    gpu = load_catalog().gpu(gpu_name)
    for name, layout in gpu.mig_configs.items():
        assert name in configs, f"{name} is not a standard mig-parted config"
        assert _mig_parted_layout(doc, name, gpu.pci_device_id) == layout, (gpu_name, name)
    assert configs["all-disabled"][0]["mig-enabled"] is False


def test_mig_parted_cross_check_catches_a_wrong_layout() -> None:
    crds = require_shared_crds()
    doc = yaml.safe_load((crds / "mig-parted" / "v0.15.0" / "config-default.yaml").read_text())
    h100 = load_catalog().gpu("H100-80GB")
    assert _mig_parted_layout(doc, "all-1g.10gb", h100.pci_device_id) == {"1g.10gb": 7}
    a100_40 = load_catalog().gpu("A100-40GB")
    assert _mig_parted_layout(doc, "all-1g.10gb", a100_40.pci_device_id) == {"1g.10gb": 4}
    assert _mig_parted_layout(doc, "all-disabled", h100.pci_device_id) is None


# `nvidia-smi mig -lgip` and `-lgipp` recorded on a lent H100 80GB HBM3 and a lent H200 (driver 580.159.04,
# MIG disabled: the driver lists the profiles and placements all the same), unedited; see
# tests/ansible/fixtures/README.md.
SMI_FIXTURES = Path(__file__).resolve().parents[1] / "ansible" / "fixtures"
REAL_MIG_TABLES = {"H100-80GB": "real-h100", "H200-141GB": "real-h200"}


def real_profiles(gpu_name: str) -> dict[str, mig.Profile]:
    recorded = REAL_MIG_TABLES[gpu_name]
    lgip, lgipp = ((SMI_FIXTURES / f"nvidia-smi-mig-{table}-{recorded}.txt").read_text() for table in ("lgip", "lgipp"))
    return mig.parse_profiles(lgip, lgipp)


@pytest.mark.parametrize("gpu_name", sorted(REAL_MIG_TABLES))
def test_mig_layouts_fit_the_real_gpus_profiles_and_placements(gpu_name: str) -> None:
    profiles = real_profiles(gpu_name)
    gpu = load_catalog().gpu(gpu_name)
    # Every profile the driver offers, but the media-engine variant (+me), is one a catalog layout uses.
    assert {p for p in profiles if not p.endswith("+me")} == gpu.mig_profiles()
    for name, layout in gpu.mig_configs.items():
        for profile, count in layout.items():
            assert profile in profiles, f"{name}: the {gpu_name} has no MIG profile {profile}"
            assert count <= profiles[profile].most, f"{name}: at most {profiles[profile].most} x {profile}"
        assert mig.placeable(layout, profiles), f"{name}: no placement holds {layout}"


def test_placement_check_refuses_what_the_compute_slice_sum_allows() -> None:
    profiles = real_profiles("H100-80GB")
    # 1 + 1 + 3 + 2 = 7 compute slices, within the sum test above, but 2 + 2 + 4 + 2 = 10 of the GPU's 8
    # memory slices: no set of placements holds them.
    layout = {"1g.20gb": 2, "3g.40gb": 1, "2g.20gb": 1}
    assert sum(int(p.split("g.")[0]) * n for p, n in layout.items()) <= 7
    assert not mig.placeable(layout, profiles)
    assert mig.placeable({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, profiles)


def test_mig_tables_that_are_not_nvidia_smis_are_refused() -> None:
    with pytest.raises(ValueError, match="not a placement row"):
        mig.parse_profiles("", "GPU 0 Profile 19: 0-6")


# --- one catalog for every command -----------------------------------------------------------------

WALK = [(t, tier) for t in sorted(load_catalog().instance_types) for tier in TIERS]
UNPRICED = [(t, tier) for t, tier in WALK if tier_rate(load_catalog().instance(t), tier, load_catalog()) is None]


@pytest.mark.parametrize(("itype", "tier"), WALK)
def test_every_type_and_tier_has_a_dated_sourced_rate_or_none(itype: str, tier: str) -> None:
    """Every (instance type, tier) the gate accepts is costed by a rate with its date and source; the rest are refused below."""
    c = load_catalog()
    rate = tier_rate(c.instance(itype), tier, c)
    if rate is None:
        assert (itype, tier) in UNPRICED
        return
    assert rate.price > 0
    assert date.fromisoformat(rate.as_of) <= date.today()
    assert rate.source.startswith("https://aws.amazon.com/"), rate.source
    if tier == "capacity-block":
        assert rate.basis == "Capacity Block rate"


def test_the_unpriced_pairs_are_the_capacity_block_only_types() -> None:
    """AWS sells p5e and p5en as Capacity Blocks; p5en's rate is not in data/commitments.yaml, so nothing buys it here."""
    hourly = [(t, tier) for t, tier in UNPRICED if tier != "capacity-block"]
    assert hourly == [(t, tier) for t in ("p5e.48xlarge", "p5en.48xlarge") for tier in TIERS if tier != "capacity-block"]
    blocks = {t for t, tier in WALK if tier == "capacity-block" and (t, tier) not in UNPRICED}
    assert blocks == {"p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge"}


def _stack_with_pool(tmp_path: Path, itype: str, tier: str) -> Path:
    doc = yaml.safe_load(stack_path("dev").read_text())
    pool: dict[str, Any] = {"name": "walk", "workloadClass": "training", "capacity": tier, "instanceTypes": [itype]}
    if tier in ("reserved", "capacity-block"):
        pool["reservation"] = {"id": "cr-0a1b2c3d4e5f60718"} | ({"start": "2026-11-16", "end": "2027-05-17"} if tier == "capacity-block" else {})
        pool["availabilityZones"] = ["us-west-2a"]
    pool["scaling"] = {"min": 0 if tier != "reserved" else 1, "desired": 0 if tier != "reserved" else 1, "max": 1}
    doc["config"]["gpu-platform:nodePools"].append(pool)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# A Capacity Block pool of a family AWS does not sell as blocks (g6) is refused for that, not for its rate.
SOLD_UNPRICED = [(t, tier) for t, tier in UNPRICED if tier != "capacity-block" or t.split(".")[0] in CAPACITY_BLOCK_FAMILIES]


@pytest.mark.parametrize(("itype", "tier"), SOLD_UNPRICED)
def test_check_and_capacity_refuse_an_unpriced_pool_with_the_same_line(
    itype: str, tier: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check` accepted what `capacity` refused (p5e, reserved): now both exit 2 with one identical line naming the type."""
    path = _stack_with_pool(tmp_path, itype, tier)
    lines = {}
    for command in ("check", "capacity"):
        code = main([command, "--config", str(path)])
        err = capsys.readouterr().err
        assert code == 2, (command, err)
        lines[command] = [line for line in err.splitlines() if itype in line and "nodePools[3].instanceTypes[0]" in line]
    assert lines["check"] == lines["capacity"] and len(lines["check"]) == 1, lines
    what = "Capacity Block rate" if tier == "capacity-block" else "On-Demand list price"
    assert f"'{itype}' ({load_catalog().instance(itype).gpu.name}) has no {what}" in lines["check"][0]
