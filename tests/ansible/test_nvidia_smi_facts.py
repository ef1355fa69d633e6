"""nvidia-smi XML parsing and node checks, against recorded `nvidia-smi -q -x` outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu_platform.catalog import load_catalog
from tests.ansible.helpers import FIXTURES, ROLES, lab_lockfile, load_nvidia_smi_module

smi = load_nvidia_smi_module()
MIG_CONFIG = yaml.safe_load((ROLES / "mig" / "files" / "config-default.yaml").read_text(encoding="utf-8"))
# The synthetic fixtures follow the lab's driver build (the Debian 12 overlay's pin).
DRIVER = lab_lockfile()["nvidia_driver"]["version"]
H100 = FIXTURES / "nvidia-smi-h100-sxm-8x-mig-disabled.xml"
A100_MIG = FIXTURES / "nvidia-smi-a100-80gb-4x-mig-all-1g.10gb.xml"
FAULTY = FIXTURES / "nvidia-smi-a100-40gb-2x-faulty.xml"
PRODUCTS = yaml.safe_load((ROLES / "gpu_node_validate" / "vars" / "main.yml").read_text())["_gpu_node_validate_models"]


def report(path: Path) -> dict:
    return smi.parse(path.read_text(encoding="utf-8"))


def expect(model: str, count: int, **kw) -> dict:
    return {
        "driver_version": DRIVER,
        "gpu_count": count,
        "product_names": PRODUCTS[model]["products"],
        "persistence_mode": True,
        "ecc_enabled": True,
        **kw,
    }


def test_h100_node_parses_every_gpu():
    r = report(H100)
    assert r["driver_version"] == DRIVER
    assert r["cuda_version"] == "12.2"
    assert [g["index"] for g in r["gpus"]] == list(range(8))
    first = r["gpus"][0]
    assert first["product_name"] == "NVIDIA H100 80GB HBM3"
    assert first["pci_device_id"] == "0x233010DE"
    assert first["uuid"].startswith("GPU-")
    assert first["persistence_mode"] and first["ecc_current"]
    assert first["mig_current"] == "disabled"
    assert first["retired_pages"] == {"supported": True, "pending": False, "sbe": 0, "dbe": 0}
    assert first["remapped_rows"]["pending"] is False


def test_healthy_h100_node_passes_its_pool():
    assert smi.evaluate(report(H100), expect("H100-80GB", 8, mig_mode="disabled")) == []


def test_h100_node_in_an_a100_pool_names_each_gpu_and_the_accepted_products():
    failures = smi.evaluate(report(H100), expect("A100-80GB", 8))
    assert len(failures) == 8
    assert failures[3].startswith("GPU 3 (GPU-")
    assert "NVIDIA H100 80GB HBM3" in failures[3]
    assert "NVIDIA A100-SXM4-80GB" in failures[3] and "not one the pool accepts" in failures[3]


def test_missing_gpu_and_driver_drift_are_reported_for_the_node():
    failures = smi.evaluate(report(H100), expect("H100-80GB", 16, driver_version="535.999.99"))
    assert f"node: driver version {DRIVER} differs from the pin 535.999.99" in failures
    assert "node: 8 GPUs visible, the pool expects 16" in failures


def test_mig_node_matches_all_1g_10gb_from_the_mig_parted_config():
    r = report(A100_MIG)
    assert r["gpus"][0]["mig_current"] == "enabled"
    assert len(r["gpus"][0]["mig_devices"]) == 7
    assert smi.evaluate(r, expect("A100-80GB", 4), MIG_CONFIG, "all-1g.10gb") == []


def test_mig_layout_mismatch_names_gpu_and_both_layouts():
    failures = smi.evaluate(report(A100_MIG), expect("A100-80GB", 4), MIG_CONFIG, "all-3g.40gb")
    assert len(failures) == 4
    assert "GPU 0 (" in failures[0]
    # nvidia-smi XML has no profile names: devices that fit no expected profile are named by size.
    assert "MIG layout {9.5GiBx7} differs from all-3g.40gb {3g.40gbx2}" in failures[0]


def test_mig_enabled_where_pool_wants_it_disabled():
    failures = smi.evaluate(report(A100_MIG), expect("A100-80GB", 4), MIG_CONFIG, "all-disabled")
    assert failures[0].endswith("MIG mode is enabled, expected disabled")


def test_mig_expected_but_disabled():
    failures = smi.evaluate(report(H100), expect("H100-80GB", 8), MIG_CONFIG, "all-1g.10gb")
    assert len(failures) == 8
    assert all("MIG mode is disabled, expected enabled" in f for f in failures)


def test_faulty_node_names_the_bad_gpu_and_every_reason():
    failures = smi.evaluate(report(FAULTY), expect("A100-40GB", 2, mig_mode="disabled"))
    assert failures, "a node with pending retired pages must fail"
    assert all(f.startswith("GPU 1 (") for f in failures), "GPU 0 is healthy and must not be named"
    text = "\n".join(failures)
    assert "ECC is disabled (enabled after reboot)" in text
    assert "retired pages pending" in text
    assert "row remapping pending" in text
    assert "row remapping failed" in text


def test_faulty_gpu_counters_are_parsed():
    gpu = report(FAULTY)["gpus"][1]
    assert gpu["retired_pages"]["dbe"] == 2
    assert gpu["remapped_rows"]["uncorrectable"] == 3
    assert gpu["ecc_current"] is False and gpu["ecc_pending"] is True


def test_persistence_mode_off_is_reported():
    xml = H100.read_text().replace("<persistence_mode>Enabled</persistence_mode>", "<persistence_mode>Disabled</persistence_mode>", 1)
    failures = smi.evaluate(smi.parse(xml), expect("H100-80GB", 8))
    assert failures == [f"{failures[0].split(':')[0]}: persistence mode is disabled"]
    assert failures[0].startswith("GPU 0 (")


def test_container_runtime_must_see_every_gpu():
    r = report(H100)
    uuids = [g["uuid"] for g in r["gpus"]]
    info = "".join(f"Device Index: {i}\nModel: NVIDIA H100 80GB HBM3\nUUID: {u}\n" for i, u in enumerate(uuids[:7]))
    failures = smi.evaluate(r, expect("H100-80GB", 8), container_info=info)
    assert failures == [f"GPU 7 ({uuids[7]}, NVIDIA H100 80GB HBM3): not visible to the container runtime (nvidia-container-cli info)"]


def test_cli_prints_report_and_exits_nonzero_on_failures():
    script = ROLES / "gpu_node_validate" / "library" / "nvidia_smi_facts.py"
    ok = subprocess.run(
        [sys.executable, str(script), "--xml", str(H100), "--expect", json.dumps(expect("H100-80GB", 8))], capture_output=True, text=True, check=False
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout)["report"]["gpus"][0]["product_name"] == "NVIDIA H100 80GB HBM3"
    bad = subprocess.run(
        [sys.executable, str(script), "--xml", str(FAULTY), "--expect", json.dumps(expect("A100-40GB", 2))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    assert any("retired pages pending" in f for f in json.loads(bad.stdout)["failures"])


REAL = sorted(FIXTURES.glob("nvidia-smi-real-*.xml"))


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_recorded_real_gpu_is_accepted_by_the_pool_of_its_model(path: Path):
    """Output recorded on real hardware: the pool for its model accepts it (driver aside)."""
    r = report(path)
    assert r["gpus"], "a recorded real node has GPUs"
    product = r["gpus"][0]["product_name"]
    models = [m for m, v in PRODUCTS.items() if product in v["products"]]
    assert models, f"{product} is not in gpu_node_validate's product table"
    expected = expect(models[0], len(r["gpus"]), driver_version=r["driver_version"])
    # A cloud VM may run with persistence mode off; that is reported, nothing else may be.
    failures = [f for f in smi.evaluate(r, expected) if not f.endswith("persistence mode is disabled")]
    assert failures == []


REAL_H200 = FIXTURES / "nvidia-smi-real-h200-1x-driver580.xml"


def test_real_h200_is_parsed_like_nvidia_smi_reports_it():
    r = report(REAL_H200)
    gpu = r["gpus"][0]
    assert (r["driver_version"], r["cuda_version"], r["attached_gpus"]) == ("580.159.04", "13.0", 1)
    assert gpu["product_name"] == "NVIDIA H200"
    # Driver 580 writes the device ID without 0x; it is normalised to mig-parted's spelling.
    assert gpu["pci_device_id"] == "0x233510DE"
    assert gpu["memory_total_mib"] == 143771
    assert gpu["persistence_mode"] and gpu["ecc_current"] and gpu["mig_current"] == "disabled"
    # Hopper retires no pages (N/A), it remaps rows.
    assert gpu["retired_pages"]["supported"] is False and gpu["remapped_rows"]["supported"] is True


def test_real_h200_fails_the_lockfile_pin_and_passes_everything_else():
    r = report(REAL_H200)
    assert smi.evaluate(r, expect("H200-141GB", 1)) == [f"node: driver version 580.159.04 differs from the pin {DRIVER}"]
    assert smi.evaluate(r, expect("H200-141GB", 1, driver_version="580.159.04", mig_mode="disabled")) == []


def test_real_h200_mig_layout_comes_from_its_pci_device_id():
    r = report(REAL_H200)
    entry = smi.mig_layout_for(r["gpus"][0], MIG_CONFIG, "all-1g.18gb")
    assert entry == {"mig_enabled": True, "mig_devices": {"1g.18gb": 7}}
    # all-1g.10gb's entries are filtered to A100/H100 device IDs: none applies to the H200.
    assert smi.mig_layout_for(r["gpus"][0], MIG_CONFIG, "all-1g.10gb") is None
    assert smi.mig_layout_for(report(H100)["gpus"][0], MIG_CONFIG, "all-1g.10gb")["mig_devices"] == {"1g.10gb": 7}
    failures = smi.evaluate(r, expect("H200-141GB", 1, driver_version="580.159.04"), MIG_CONFIG, "all-1g.18gb")
    assert failures == ["GPU 0 (GPU-95028e4a-2b33-611b-2638-8975ceb97d0f, NVIDIA H200): MIG mode is disabled, expected enabled"]


REAL_H100 = FIXTURES / "nvidia-smi-real-h100-1x-driver580.xml"


def test_real_h100_is_parsed_like_nvidia_smi_reports_it_and_matches_the_catalog():
    """The GPU of the p5 pools, recorded on a lent H100 (driver 580): what the catalog says of it is what it reports."""
    r = report(REAL_H100)
    gpu = r["gpus"][0]
    assert (r["driver_version"], r["cuda_version"], r["attached_gpus"]) == ("580.159.04", "13.0", 1)
    h100 = load_catalog().gpu("H100-80GB")
    # The catalog's product name and PCI device ID are how validation and mig-parted recognise the GPU.
    assert (gpu["product_name"], gpu["pci_device_id"]) == (h100.product, h100.pci_device_id) == ("NVIDIA H100 80GB HBM3", "0x233010DE")
    assert gpu["product_name"] in PRODUCTS["H100-80GB"]["products"]
    assert gpu["memory_total_mib"] == 81559 and gpu["memory_total_mib"] / 1024 <= h100.memory_gib
    assert gpu["persistence_mode"] and gpu["ecc_current"] and gpu["mig_current"] == "disabled"
    assert gpu["retired_pages"]["supported"] is False and gpu["remapped_rows"]["supported"] is True


def test_real_h100_mig_layouts_come_from_its_pci_device_id():
    r = report(REAL_H100)
    for name, layout in load_catalog().gpu("H100-80GB").mig_configs.items():
        assert smi.mig_layout_for(r["gpus"][0], MIG_CONFIG, name) == {"mig_enabled": True, "mig_devices": layout}, name
    failures = smi.evaluate(r, expect("H100-80GB", 1, driver_version="580.159.04"), MIG_CONFIG, "all-3g.40gb")
    assert failures == ["GPU 0 (GPU-4affe45d-d096-b4dc-d10b-9e716c209af5, NVIDIA H100 80GB HBM3): MIG mode is disabled, expected enabled"]


def test_driver_580_row_remap_failure_and_unrepairable_memory_are_reported():
    xml = REAL_H200.read_text().replace("<remapped_row_failure>No</remapped_row_failure>", "<remapped_row_failure>Yes</remapped_row_failure>")
    xml = xml.replace("<unrepairable_memory>No</unrepairable_memory>", "<unrepairable_memory>Yes</unrepairable_memory>")
    failures = smi.evaluate(smi.parse(xml), expect("H200-141GB", 1, driver_version="580.159.04"))
    assert failures == [
        "GPU 0 (GPU-95028e4a-2b33-611b-2638-8975ceb97d0f, NVIDIA H200): row remapping failed (uncorrectable memory; replace the GPU)",
        "GPU 0 (GPU-95028e4a-2b33-611b-2638-8975ceb97d0f, NVIDIA H200): unrepairable memory reported (replace the GPU)",
    ]
