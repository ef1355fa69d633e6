"""Helpers for the Ansible tests: paths, the lockfile, and running ansible-playbook."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_DIR = REPO / "ansible"
ROLES = ANSIBLE_DIR / "roles"
HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
LOCKFILE = REPO / "infra" / "gpu_platform" / "data" / "versions.yaml"
BIN = Path(sys.executable).parent

DEBIAN_12 = {
    "distribution": "Debian",
    "os_family": "Debian",
    "distribution_major_version": "12",
    "distribution_version": "12.8",
    "distribution_release": "bookworm",
    "architecture": "x86_64",
    "system": "Linux",
    "kernel": "6.1.0-28-cloud-amd64",
}
UBUNTU_2204 = {
    **DEBIAN_12,
    "distribution": "Ubuntu",
    "distribution_major_version": "22",
    "distribution_version": "22.04",
    "distribution_release": "jammy",
    "kernel": "6.8.0-1017-aws",
}
UBUNTU_2404 = {
    **UBUNTU_2204,
    "distribution_major_version": "24",
    "distribution_version": "24.04",
    "distribution_release": "noble",
    # Canonical's 24.04 AWS images boot the rolling linux-aws kernel: 7.0 since it followed the
    # 26.04 kernel (linux-image-aws-7.0 7.0.0-1012.12~24.04.1 in noble-updates, read 2026-11-26).
    "kernel": "7.0.0-1012-aws",
}
ROCKY_9 = {
    **DEBIAN_12,
    "distribution": "Rocky",
    "os_family": "RedHat",
    "distribution_major_version": "9",
    "distribution_version": "9.4",
    "distribution_release": "Blue Onyx",
    "kernel": "5.14.0-427.13.1.el9_4.x86_64",
}
RHEL_9 = {**ROCKY_9, "distribution": "RedHat", "distribution_release": "Plow"}
RHEL_8 = {
    **RHEL_9,
    "distribution_major_version": "8",
    "distribution_version": "8.10",
    "distribution_release": "Ootpa",
    "kernel": "4.18.0-553.22.1.el8_10.x86_64",
}


def load_lockfile() -> dict[str, Any]:
    """The version lockfile as data."""
    return yaml.safe_load(LOCKFILE.read_text(encoding="utf-8"))


# The Debian 12 lab's overlay: the recorded nvidia-smi fixtures and every test posing as Debian 12
# run on the lab's pins (Debian's own 535 build), as the Molecule scenario does.
LAB_OVERLAY = "debian12-lab"


def lab_lockfile() -> dict[str, Any]:
    """The lockfile as a host with gpu_platform_versions_overlay=debian12-lab reads it."""
    from gpu_platform.versions import overlay_data

    return overlay_data(load_lockfile(), LAB_OVERLAY)


def load_nvidia_smi_module() -> ModuleType:
    """Import the gpu_node_validate module file as a Python module."""
    path = ROLES / "gpu_node_validate" / "library" / "nvidia_smi_facts.py"
    spec = importlib.util.spec_from_file_location("nvidia_smi_facts", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ansible_env(**extra: str) -> dict[str, str]:
    """Environment for ansible-playbook with the project's roles, lookup and the test modules."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(ANSIBLE_DIR / "ansible.cfg"),
        ANSIBLE_ROLES_PATH=str(ROLES),
        ANSIBLE_LOOKUP_PLUGINS=str(ANSIBLE_DIR / "plugins" / "lookup"),
        # Each test fakes its own facts for localhost; none may leak into the next through a cache.
        ANSIBLE_CACHE_PLUGIN="ansible.builtin.memory",
        ANSIBLE_LIBRARY=str(HERE / "library"),
        # render.yml renders the toolkit's templates outside its role, so its filters by path.
        ANSIBLE_FILTER_PLUGINS=str(ROLES / "nvidia_container_toolkit" / "filter_plugins"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    env.update(extra)
    return env


def run_playbook(playbook: Path, extra_vars: dict[str, Any], *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a playbook on localhost with JSON extra vars."""
    extra_vars = {"ansible_python_interpreter": sys.executable, **extra_vars}
    cmd = [str(BIN / "ansible-playbook"), "-i", "localhost,", "-e", json.dumps(extra_vars), *args, str(playbook)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env or ansible_env(), timeout=300, check=False)


def failure_messages(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Messages of failed tasks from the json callback's output."""
    data = json.loads(result.stdout)
    messages = []
    for play in data["plays"]:
        for task in play["tasks"]:
            for host in task["hosts"].values():
                if host.get("failed"):
                    msg = host.get("msg", "")
                    messages.append(msg if isinstance(msg, str) else " ".join(map(str, msg)))
    return messages
