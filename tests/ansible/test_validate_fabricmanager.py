"""gpu_node_validate checks Fabric Manager on NVSwitch hosts, and the rolling upgrade moves it with the driver.

Fabric Manager's packages are unreachable from CI, so `systemctl` and `nv-fabricmanager` are stand-in
scripts on PATH reporting the states a real node can be in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ansible.helpers import ANSIBLE_DIR, BIN, DEBIAN_12, FIXTURES, HERE, LAB_OVERLAY, ansible_env, failure_messages, lab_lockfile

PLAYBOOK = HERE / "playbooks" / "role_under_test.yml"
NVSWITCH_POOLS = {"pool_h100_training", "pool_a100_mig"}


def fake_command(bindir: Path, name: str, stdout: str, rc: int) -> None:
    """Write an executable `name` that prints `stdout` and exits `rc`."""
    path = bindir / name
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' '{stdout}'\nexit {rc}\n")
    path.chmod(0o755)


def validate(tmp_path: Path, *, in_nvswitch_group: bool, state: str | None, version: str | None, **role_vars: Any):
    """Run gpu_node_validate on the recorded 8x H100 node with Fabric Manager faked; return (rc, failures, report)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    if state is not None:
        fake_command(bindir, "systemctl", state, 0 if state == "active" else 3)
    if version is not None:
        fake_command(bindir, "nv-fabricmanager", f"Fabric Manager version is : {version}", 0)
    groups: dict[str, Any] = {"gpu_nodes": {"hosts": {"localhost": {}}}}
    if in_nvswitch_group:
        groups["nvswitch_nodes"] = {"hosts": {"localhost": {}}}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": groups}}))
    report = tmp_path / "node-report.json"
    extra = {
        "ansible_python_interpreter": sys.executable,
        "fake": DEBIAN_12,
        # The recorded node runs the lab's driver build.
        "gpu_platform_versions_overlay": LAB_OVERLAY,
        "role_name": "gpu_node_validate",
        "gpu_node_validate_gpu_model": "H100-80GB",
        "gpu_node_validate_gpu_count": 8,
        "gpu_node_validate_xml_path": str(FIXTURES / "nvidia-smi-h100-sxm-8x-mig-disabled.xml"),
        "gpu_node_validate_mig_config_file": str(tmp_path / "no-mig-config.yaml"),
        "gpu_node_validate_check_container_runtime": False,
        "gpu_node_validate_report_path": str(report),
        **role_vars,
    }
    env = ansible_env()
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inventory), "-e", json.dumps(extra), str(PLAYBOOK)]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert report.exists(), result.stdout[-3000:] + result.stderr[-2000:]
    return result.returncode, " | ".join(failure_messages(result)), json.loads(report.read_text())


def test_nvswitch_host_passes_with_fabric_manager_active_at_the_driver_version(tmp_path):
    driver = lab_lockfile()["nvidia_driver"]["version"]
    rc, msg, report = validate(tmp_path, in_nvswitch_group=True, state="active", version=driver)
    assert rc == 0, msg
    assert report["passed"] is True
    assert report["fabric_manager"] == {"checked": True, "state": "active", "version": driver}


def test_nvswitch_host_fails_naming_a_stopped_fabric_manager_and_a_stale_version(tmp_path):
    driver = lab_lockfile()["nvidia_driver"]["version"]
    rc, msg, report = validate(tmp_path, in_nvswitch_group=True, state="inactive", version="535.247.01")
    assert rc != 0
    want = [
        "fabric manager: nvidia-fabricmanager.service is inactive, want active (NVSwitch host)",
        f"fabric manager: installed version 535.247.01 differs from the driver pin {driver}; CUDA fails until they are equal",
    ]
    assert report["passed"] is False
    assert report["failures"] == want
    for line in want:
        assert line in msg
    assert "failed 2 check(s)" in msg


def test_nvswitch_host_without_fabric_manager_installed_fails(tmp_path):
    rc, msg, report = validate(tmp_path, in_nvswitch_group=True, state="inactive", version=None)
    assert rc != 0
    assert "fabric manager: installed version not found (nv-fabricmanager missing)" in msg
    assert report["fabric_manager"]["version"] == ""


def test_host_outside_nvswitch_nodes_skips_the_check(tmp_path):
    # A single-GPU host or gpu-host-check.sh: no fabric, no Fabric Manager, still a pass.
    rc, msg, report = validate(tmp_path, in_nvswitch_group=False, state="inactive", version=None)
    assert rc == 0, msg
    assert report["passed"] is True
    assert report["fabric_manager"]["checked"] is False


def test_the_check_can_be_switched_on_outside_the_group(tmp_path):
    rc, msg, _ = validate(
        tmp_path,
        in_nvswitch_group=False,
        state="failed",
        version=lab_lockfile()["nvidia_driver"]["version"],
        gpu_node_validate_check_fabricmanager=True,
    )
    assert rc != 0
    assert "nvidia-fabricmanager.service is failed, want active" in msg


def rollout_play() -> dict[str, Any]:
    """The play of driver_upgrade.yml that upgrades the nodes."""
    return yaml.safe_load((ANSIBLE_DIR / "driver_upgrade.yml").read_text())[-1]


def test_driver_upgrade_upgrades_fabric_manager_right_after_the_driver():
    roles = [r if isinstance(r, str) else r["role"] for r in rollout_play()["roles"]]
    assert roles.index("nvidia_fabricmanager") == roles.index("nvidia_driver") + 1


def test_driver_upgrade_runs_fabric_manager_on_exactly_the_prod_nvswitch_hosts():
    entry = next(r for r in rollout_play()["roles"] if isinstance(r, dict) and r["role"] == "nvidia_fabricmanager")
    conditions = entry["when"] if isinstance(entry["when"], list) else [entry["when"]]
    # Evaluate the play's own condition for every prod host, with the prod inventory.
    expr = " and ".join(f"({c})" for c in conditions)
    env = ansible_env(ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    result = subprocess.run(
        [
            str(BIN / "ansible"),
            "gpu_nodes",
            "-i",
            str(ANSIBLE_DIR / "inventories" / "prod"),
            "-m",
            "ansible.builtin.debug",
            "-a",
            f"msg={{{{ {expr} }}}}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    runs = {host: str(res["msg"]) == "True" for host, res in json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"].items()}
    inventory = yaml.safe_load((ANSIBLE_DIR / "inventories" / "prod" / "hosts.yml").read_text())
    pools = inventory["all"]["children"]["gpu_nodes"]["children"]
    expected = {}
    for pool, body in pools.items():
        for pattern in body["hosts"]:
            prefix, span = pattern.split("[")
            first, last = span.rstrip("]").split(":")
            for n in range(int(first), int(last) + 1):
                expected[f"{prefix}{n:0{len(first)}d}"] = pool in NVSWITCH_POOLS
    assert runs == expected
    assert any(runs.values()) and not all(runs.values())


def test_driver_upgrade_validation_checks_fabric_manager_on_nvswitch_hosts():
    # The release step runs gpu_node_validate; its default turns the check on for nvswitch_nodes.
    defaults = yaml.safe_load((ANSIBLE_DIR / "roles" / "gpu_node_validate" / "defaults" / "main.yml").read_text())
    assert "groups['nvswitch_nodes']" in defaults["gpu_node_validate_check_fabricmanager"]


@pytest.mark.parametrize("inventory", ["prod", "lab"])
def test_rollout_lists_fabric_manager_tasks(inventory: str):
    result = subprocess.run(
        [str(BIN / "ansible-playbook"), "--list-tasks", "-i", str(ANSIBLE_DIR / "inventories" / inventory), str(ANSIBLE_DIR / "driver_upgrade.yml")],
        capture_output=True,
        text=True,
        env=ansible_env(ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default"),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rollout = result.stdout.split("Upgrade the NVIDIA driver one wave at a time")[1]
    assert "nvidia_fabricmanager : Install the pinned Fabric Manager" in rollout
    release = "Validate, wait for the GPUs to be advertised again, and uncordon the node"
    assert rollout.index("nvidia_driver :") < rollout.index("nvidia_fabricmanager :") < rollout.index(release)
