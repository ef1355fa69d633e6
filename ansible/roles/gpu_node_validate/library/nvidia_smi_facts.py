#!/usr/bin/python
"""Ansible module and CLI: parse `nvidia-smi -q -x` and check a GPU node against its pool."""
# ruff: noqa: E402  (Ansible plugin layout: DOCUMENTATION/RETURN come before the imports)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_smi_facts
short_description: Parse nvidia-smi XML and check a GPU node against its pool's expectations
description:
  - Runs C(nvidia-smi -q -x) (or reads a recorded XML file), parses driver, GPUs, ECC, retired
    pages, row remapping and MIG state, and compares them with what the host's pool expects.
  - Never fails on a check; it returns C(failures), each naming the GPU and the reason, so the
    caller can write the node report first and fail after.
  - Also runs as a CLI (C(python3 nvidia_smi_facts.py --xml FILE --expect JSON)) on hosts without Ansible.
options:
  xml_path:
    description: Read this recorded XML instead of running nvidia-smi.
    type: path
  nvidia_smi:
    description: nvidia-smi executable.
    type: str
    default: nvidia-smi
  expected:
    description: >-
      Expectations; keys driver_version, gpu_count, product_names (list of accepted product
      names), persistence_mode, ecc_enabled, mig_mode (enabled|disabled|any), mig_layout (per-GPU
      profile counts, or null).
    type: dict
    default: {}
  mig_config:
    description: mig-parted config document (the parsed YAML) used to derive the per-GPU MIG layout.
    type: dict
  mig_config_name:
    description: Name of the mig-parted config the node should have applied.
    type: str
  container_info:
    description: Output of C(nvidia-container-cli info); every GPU must be listed in it.
    type: str
  containerd:
    description: >-
      containerd's effective configuration; keys crictl_info (C(crictl info) JSON), config_dump
      (C(containerd config dump) TOML, read when crictl cannot answer) and cdi_spec_path (where
      the CDI spec is generated). CDI must be on in the table containerd reads.
      With cri_endpoint (the CRI socket) instead of the two outputs, the module runs
      C(crictl --runtime-endpoint <cri_endpoint> info) on the node itself, and
      C(containerd config dump) when crictl is missing or fails.
    type: dict
author: gpu-platform
"""

RETURN = r"""
report:
  description: Parsed node state (driver, CUDA, per-GPU details).
  type: dict
  returned: always
failures:
  description: One line per failed check, naming the GPU (index, UUID) and the reason.
  type: list
  returned: always
"""

import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

NA = {"", "N/A", "n/a", "[N/A]", "Not Supported", "[Not Supported]"}


def _text(node: ET.Element | None, path: str) -> str | None:
    """Return the stripped text at path, or None when absent or N/A."""
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in NA else value


def _int(node: ET.Element | None, path: str) -> int | None:
    """Return the integer at path (ignoring a unit suffix), or None."""
    value = _text(node, path)
    if value is None:
        return None
    match = re.match(r"^-?\d+", value)
    return int(match.group(0)) if match else None


def _pci_id(value: str | None) -> str | None:
    """PCI device ID as mig-parted's device-filter spells it (0x233510DE); driver 580 drops the 0x."""
    if not value:
        return None
    digits = value[2:] if value.lower().startswith("0x") else value
    return "0x" + digits.upper()


def _retired_pages(gpu: ET.Element) -> dict[str, Any]:
    """Parse page retirement (pre-Ampere and data-center Ampere+ both report it)."""
    node = gpu.find("retired_pages")
    if node is None:
        return {"supported": False, "pending": False, "sbe": 0, "dbe": 0}
    pending = _text(node, "pending_blacklist") or _text(node, "pending_retirement")
    return {
        "supported": pending is not None,
        "pending": (pending or "No").lower() == "yes",
        "sbe": _int(node, "multiple_single_bit_retirement/retired_count") or 0,
        "dbe": _int(node, "double_bit_retirement/retired_count") or 0,
    }


def _remapped_rows(gpu: ET.Element) -> dict[str, Any]:
    """Parse row remapping (Ampere and newer)."""
    node = gpu.find("remapped_rows")
    if node is None or _text(node, "remapped_row_pending") is None:
        return {"supported": False, "pending": False, "failure": False, "correctable": 0, "uncorrectable": 0}
    # The field is remapped_row_failure_occurred up to the 5xx DTD v12, remapped_row_failure in v13.
    failure = _text(node, "remapped_row_failure_occurred") or _text(node, "remapped_row_failure") or "No"
    return {
        "supported": True,
        "pending": (_text(node, "remapped_row_pending") or "No").lower() == "yes",
        "failure": failure.lower() == "yes",
        "correctable": _int(node, "remapped_row_corr") or 0,
        "uncorrectable": _int(node, "remapped_row_unc") or 0,
    }


def _mig_devices(gpu: ET.Element) -> list[dict[str, Any]]:
    """Parse MIG devices; the profile name comes from the memory size and slice counts."""
    devices = []
    for dev in gpu.findall("mig_devices/mig_device"):
        devices.append(
            {
                "index": _int(dev, "index"),
                "gpu_instance_id": _int(dev, "gpu_instance_id"),
                "compute_instance_id": _int(dev, "compute_instance_id"),
                "multiprocessor_count": _int(dev, "device_attributes/shared/multiprocessor_count"),
                "memory_total_mib": _int(dev, "fb_memory_usage/total"),
                "profile": _text(dev, "profile_name"),
            }
        )
    return devices


def parse(xml_text: str) -> dict[str, Any]:
    """Parse `nvidia-smi -q -x` output into a plain dict."""
    root = ET.fromstring(xml_text)
    gpus = []
    for index, gpu in enumerate(root.findall("gpu")):
        gpus.append(
            {
                "index": _int(gpu, "minor_number") if _int(gpu, "minor_number") is not None else index,
                "pci_bus_id": gpu.get("id"),
                "uuid": _text(gpu, "uuid"),
                "serial": _text(gpu, "serial"),
                "product_name": _text(gpu, "product_name"),
                "product_architecture": _text(gpu, "product_architecture"),
                "pci_device_id": _pci_id(_text(gpu, "pci/pci_device_id")),
                "memory_total_mib": _int(gpu, "fb_memory_usage/total"),
                "persistence_mode": (_text(gpu, "persistence_mode") or "").lower() == "enabled",
                "ecc_current": (_text(gpu, "ecc_mode/current_ecc") or "").lower() == "enabled",
                "ecc_pending": (_text(gpu, "ecc_mode/pending_ecc") or "").lower() == "enabled",
                "ecc_supported": _text(gpu, "ecc_mode/current_ecc") is not None,
                "mig_current": (_text(gpu, "mig_mode/current_mig") or "").lower() or None,
                "mig_pending": (_text(gpu, "mig_mode/pending_mig") or "").lower() or None,
                "mig_devices": _mig_devices(gpu),
                "unrepairable_memory": (_text(gpu, "ecc_errors/unrepairable_memory") or "No").lower() == "yes",
                "retired_pages": _retired_pages(gpu),
                "remapped_rows": _remapped_rows(gpu),
            }
        )
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": _int(root, "attached_gpus"),
        "gpus": gpus,
    }


def mig_layout_for(gpu: dict[str, Any], mig_config: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Return the mig-parted entry of config `name` that applies to this GPU, the way mig-parted picks it."""
    entries = (mig_config.get("mig-configs") or {}).get(name)
    if entries is None:
        return None
    for entry in entries:
        filters = entry.get("device-filter")
        if isinstance(filters, str):
            filters = [filters]
        if filters and gpu.get("pci_device_id") not in {_pci_id(f) for f in filters}:
            continue
        devices = entry.get("devices", "all")
        if devices != "all" and gpu["index"] not in devices:
            continue
        return {"mig_enabled": bool(entry.get("mig-enabled")), "mig_devices": dict(entry.get("mig-devices") or {})}
    return None


def _gpu_name(gpu: dict[str, Any]) -> str:
    return f"GPU {gpu['index']} ({gpu.get('uuid') or gpu.get('pci_bus_id')}, {gpu.get('product_name')})"


def _profile_gb(profile: str) -> float | None:
    match = re.match(r"^\d+g\.(\d+)gb", profile)
    return float(match.group(1)) if match else None


def _profile_counts(gpu: dict[str, Any], want_profiles: list[str]) -> dict[str, int]:
    """Count MIG devices per profile.

    nvidia-smi's XML has no profile name for a MIG device, so each device is matched to the
    expected profile whose memory size is within 15% of the device's; others are named by size.
    """
    counts: dict[str, int] = {}
    for dev in gpu["mig_devices"]:
        profile = dev.get("profile")
        if not profile:
            gib = (dev.get("memory_total_mib") or 0) / 1024
            profile = f"{gib:.1f}GiB"
            for candidate in want_profiles:
                size = _profile_gb(candidate)
                if size and abs(gib - size) / size <= 0.15:
                    profile = candidate
                    break
        counts[profile] = counts.get(profile, 0) + 1
    return counts


def container_gpu_uuids(info_text: str) -> list[str]:
    """GPU UUIDs that `nvidia-container-cli info` lists (what containers will get)."""
    return re.findall(r"^\s*UUID:\s*(GPU-[0-9a-fA-F-]+)\s*$", info_text, flags=re.MULTILINE)


# Where containerd keeps its CDI switch: the CRI plugin's own table in 1.x (PluginConfig in
# pkg/cri/config/config.go), the CRI runtime plugin in 2.x (RuntimeConfig in internal/cri/config).
CDI_TABLES = ('plugins."io.containerd.grpc.v1.cri"', 'plugins."io.containerd.cri.v1.runtime"')


def containerd_cdi(crictl_info: str | None = None, config_dump: str | None = None) -> dict[str, Any]:
    """CDI as containerd applies it: `crictl info` (the running CRI's config), else `containerd config dump`.

    crictl prints the CRI plugin's config as JSON under `config`, with the PluginConfig (1.x) or
    RuntimeConfig (2.x) fields inline: `enableCDI`, `cdiSpecDirs`. `containerd config dump` prints
    the merged TOML; only the two tables containerd reads count (a key under a sub-table is ignored).
    """
    if crictl_info and crictl_info.strip().startswith("{"):
        try:
            config = json.loads(crictl_info).get("config") or {}
        except ValueError:
            config = {}
        if isinstance(config, str):  # crictl versions that print the raw info string
            config = json.loads(config)
        if "enableCDI" in config:
            return {"source": "crictl info", "enabled": bool(config["enableCDI"]), "spec_dirs": list(config.get("cdiSpecDirs") or [])}
    if config_dump:
        table, found = "", None
        dirs: list[str] = []
        for raw in config_dump.splitlines():
            line = raw.strip()
            if line.startswith("["):
                table = line.strip("[]").strip()
            elif table in CDI_TABLES and "=" in line:
                key, value = (part.strip() for part in line.split("=", 1))
                if key == "enable_cdi":
                    found = value == "true"
                elif key == "cdi_spec_dirs":
                    dirs = re.findall(r'"([^"]+)"', value)
        if found is not None:
            return {"source": "containerd config dump", "enabled": found, "spec_dirs": dirs}
        return {"source": "containerd config dump", "enabled": False, "spec_dirs": []}
    return {"source": "", "enabled": False, "spec_dirs": []}


def read_containerd(run: Callable[[list[str]], tuple[int, str]], which: Callable[[str], str | None], endpoint: str) -> dict[str, str]:
    """`crictl info` from the CRI, else `containerd config dump`: the outputs `containerd_cdi` reads.

    The dump is only read when crictl is missing or fails, as an operator would fall back to it.
    """
    crictl = which("crictl")
    if crictl:
        rc, out = run([crictl, "--runtime-endpoint", endpoint, "info"])
        if rc == 0:
            return {"crictl_info": out, "config_dump": ""}
    containerd = which("containerd")
    if containerd:
        rc, out = run([containerd, "config", "dump"])
        if rc == 0:
            return {"crictl_info": "", "config_dump": out}
    return {"crictl_info": "", "config_dump": ""}


def containerd_failures(cdi: dict[str, Any], spec_path: str | None) -> list[str]:
    """What stops GPUs from reaching containers through CDI (the GPU Operator's default from 25.10)."""
    if not cdi["source"]:
        return ["containerd: effective configuration unreadable (crictl info and containerd config dump both failed)"]
    if not cdi["enabled"]:
        return [
            f"containerd: CDI is off in the effective configuration ({cdi['source']}); set enable_cdi in "
            f'[{CDI_TABLES[0]}] (containerd 1.7) or [{CDI_TABLES[1]}] (2.x)'
        ]
    if spec_path and cdi["spec_dirs"] and os.path.dirname(spec_path) not in cdi["spec_dirs"]:
        return [f"containerd: CDI spec directory {os.path.dirname(spec_path)} is not in cdi_spec_dirs {cdi['spec_dirs']}"]
    return []


def evaluate(
    report: dict[str, Any],
    expected: dict[str, Any],
    mig_config: dict[str, Any] | None = None,
    mig_config_name: str | None = None,
    container_info: str | None = None,
    containerd: dict[str, Any] | None = None,
) -> list[str]:
    """Compare a parsed report with the pool's expectations; one message per failed check."""
    failures: list[str] = []
    if containerd is not None:
        cdi = containerd_cdi(containerd.get("crictl_info"), containerd.get("config_dump"))
        report["containerd_cdi"] = cdi
        failures.extend(containerd_failures(cdi, containerd.get("cdi_spec_path")))
    if container_info is not None:
        seen = set(container_gpu_uuids(container_info))
        missing = [g for g in report["gpus"] if g.get("uuid") not in seen]
        report["container_runtime_gpus"] = sorted(seen)
        failures.extend(f"{_gpu_name(g)}: not visible to the container runtime (nvidia-container-cli info)" for g in missing)
    want_driver = expected.get("driver_version")
    if want_driver and report.get("driver_version") != want_driver:
        failures.append(f"node: driver version {report.get('driver_version')} differs from the pin {want_driver}")
    gpus = report["gpus"]
    want_count = expected.get("gpu_count")
    if want_count is not None and len(gpus) != int(want_count):
        failures.append(f"node: {len(gpus)} GPUs visible, the pool expects {want_count}")
    products = [p.lower() for p in expected.get("product_names") or []]
    for gpu in gpus:
        name = _gpu_name(gpu)
        if products and (gpu.get("product_name") or "").lower() not in products:
            failures.append(f"{name}: product is not one the pool accepts ({', '.join(expected['product_names'])})")
        if expected.get("persistence_mode", True) and not gpu["persistence_mode"]:
            failures.append(f"{name}: persistence mode is disabled")
        if expected.get("ecc_enabled", True):
            if not gpu["ecc_supported"]:
                failures.append(f"{name}: ECC mode is not reported")
            elif not gpu["ecc_current"]:
                failures.append(f"{name}: ECC is disabled" + (" (enabled after reboot)" if gpu["ecc_pending"] else ""))
        if gpu["retired_pages"]["pending"]:
            failures.append(f"{name}: retired pages pending (reset the GPU or reboot, then recheck; replace if it recurs)")
        if gpu["remapped_rows"]["pending"]:
            failures.append(f"{name}: row remapping pending (reset the GPU to apply the remap)")
        if gpu["remapped_rows"]["failure"]:
            failures.append(f"{name}: row remapping failed (uncorrectable memory; replace the GPU)")
        if gpu.get("unrepairable_memory"):
            failures.append(f"{name}: unrepairable memory reported (replace the GPU)")
        failures.extend(_mig_failures(gpu, name, expected, mig_config, mig_config_name))
    return failures


def _mig_failures(
    gpu: dict[str, Any], name: str, expected: dict[str, Any], mig_config: dict[str, Any] | None, mig_config_name: str | None
) -> list[str]:
    """MIG checks: mode (current and pending) and, when a layout is known, the profile counts."""
    want_mode = expected.get("mig_mode", "any")
    layout = None
    if mig_config and mig_config_name:
        layout = mig_layout_for(gpu, mig_config, mig_config_name)
        if layout is None:
            return [f"{name}: mig config {mig_config_name} has no entry for PCI device {gpu.get('pci_device_id')}"]
        want_mode = "enabled" if layout["mig_enabled"] else "disabled"
    if want_mode == "any":
        return []
    have = gpu["mig_current"]
    if have is None:
        return [] if want_mode == "disabled" else [f"{name}: MIG mode expected {want_mode}, this GPU has no MIG"]
    out = []
    if have != want_mode:
        return [f"{name}: MIG mode is {have}, expected {want_mode}"]
    if gpu["mig_pending"] and gpu["mig_pending"] != have:
        out.append(f"{name}: MIG mode change to {gpu['mig_pending']} is pending a GPU reset")
    want_layout = layout["mig_devices"] if layout else expected.get("mig_layout")
    if want_mode == "enabled" and want_layout:
        want = {str(k): int(v) for k, v in want_layout.items()}
        have_layout = _profile_counts(gpu, list(want))
        if have_layout != want:
            out.append(f"{name}: MIG layout {_fmt(have_layout)} differs from {mig_config_name or 'expected'} {_fmt(want)}")
    return out


def _fmt(counts: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}x{v}" for k, v in sorted(counts.items())) + "}" if counts else "{none}"


def run_nvidia_smi(executable: str) -> str:
    """Run nvidia-smi -q -x and return its XML."""
    return subprocess.run([executable, "-q", "-x"], check=True, capture_output=True, text=True).stdout


def _cli(argv: list[str]) -> int:
    """Parse XML from a file or nvidia-smi, print the report and failures as JSON; exit 1 on failures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--xml", help="recorded nvidia-smi -q -x output; default: run nvidia-smi")
    parser.add_argument("--expect", default="{}", help="JSON expectations (see the module documentation)")
    parser.add_argument("--mig-config", help="mig-parted config YAML file (needs PyYAML)")
    parser.add_argument("--mig-config-name", help="name of the mig-parted config the node should have applied")
    args = parser.parse_args(argv)
    if args.xml:
        with open(args.xml, encoding="utf-8") as handle:
            xml_text = handle.read()
    else:
        xml_text = run_nvidia_smi("nvidia-smi")
    mig_config = None
    if args.mig_config:
        import yaml  # noqa: PLC0415  (only this option needs PyYAML; the CLI must run without it)

        with open(args.mig_config, encoding="utf-8") as handle:
            mig_config = yaml.safe_load(handle)
    report = parse(xml_text)
    failures = evaluate(report, json.loads(args.expect), mig_config, args.mig_config_name)
    print(json.dumps({"report": report, "failures": failures}, indent=2))
    return 1 if failures else 0


def main() -> None:
    """Ansible entry point."""
    from ansible.module_utils.basic import AnsibleModule  # noqa: PLC0415  (the CLI runs without Ansible)

    module = AnsibleModule(
        argument_spec={
            "xml_path": {"type": "path"},
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "expected": {"type": "dict", "default": {}},
            "mig_config": {"type": "dict"},
            "mig_config_name": {"type": "str"},
            "container_info": {"type": "str"},
            "containerd": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        if params["xml_path"]:
            with open(params["xml_path"], encoding="utf-8") as handle:
                xml_text = handle.read()
        else:
            executable = module.get_bin_path(params["nvidia_smi"], required=True)
            xml_text = run_nvidia_smi(executable)
        report = parse(xml_text)
    except (OSError, subprocess.CalledProcessError, ET.ParseError) as exc:
        module.fail_json(msg=f"cannot read GPU state from nvidia-smi: {exc}")
    containerd = params["containerd"]
    if containerd is not None and containerd.get("cri_endpoint") and "crictl_info" not in containerd and "config_dump" not in containerd:
        # Read on the node in this same call: one round trip instead of one per command.
        def run(argv: list[str]) -> tuple[int, str]:
            rc, out, _err = module.run_command(argv)
            return rc, out

        containerd = {**containerd, **read_containerd(run, module.get_bin_path, str(containerd["cri_endpoint"]))}
    failures = evaluate(report, params["expected"], params["mig_config"], params["mig_config_name"], params["container_info"], containerd)
    module.exit_json(changed=False, report=report, failures=failures)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("--"):
        sys.exit(_cli(sys.argv[1:]))
    main()
