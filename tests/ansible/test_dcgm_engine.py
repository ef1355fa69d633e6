"""One DCGM host engine per node, and the host exporter collects what the cluster's does.

dcgm-exporter starts an embedded engine unless `--remote-hostengine-info` is given
(NVIDIA/dcgm-exporter internal/pkg/dcgmprovider: `UseRemoteHE` is set only when the flag is set),
and two engines on a node contend for the profiling module, so the DCGM_FI_PROF_* fields vanish.
On Kubernetes nodes the GPU Operator's exporter owns the engine: the role keeps the host engine
stopped and installs no host exporter. On standalone hosts the host engine runs and the exporter
connects to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.k8s.gpu_operator import DCGM_METRICS_FILE, dcgm_metrics_configmap
from tests.ansible.helpers import DEBIAN_12, HERE, ROLES, ansible_env, run_playbook


def test_host_exporter_collects_the_clusters_metric_list():
    """The CSV the role installs equals the one the GPU Operator's exporter gets (regenerate the file from DCGM_METRICS)."""
    role_csv = (ROLES / "dcgm" / "files" / "dcgm-metrics.csv").read_text()
    assert role_csv == dcgm_metrics_configmap()["data"][DCGM_METRICS_FILE]


SYSTEMCTL = """#!/bin/sh
# Stand-in for systemctl on a machine without systemd: nvidia-dcgm.service loaded, running, enabled.
case "$1" in
  show) printf 'Id=%s\nLoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n' "$2" ;;
  is-enabled) echo enabled ;;
  is-active) echo active ;;
esac
exit 0
"""


def configure(mode: str, tmp_path: Path) -> dict[str, Any]:
    """Run the dcgm role's configure step in check mode against a stand-in systemctl; return each task's outcome."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text(SYSTEMCTL)
    (bindir / "systemctl").chmod(0o755)
    env = ansible_env()
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    extra = {
        "fake": DEBIAN_12,
        "gpu_platform_versions_overlay": "debian12-lab",
        "role_name": "dcgm",
        "role_tasks": "configure",
        "dcgm_mode": mode,
        "dcgm_install_packages": True,
    }
    result = run_playbook(HERE / "playbooks" / "role_under_test.yml", extra, "--check", env=env)
    data = json.loads(result.stdout)
    outcome: dict[str, Any] = {}
    for play in data["plays"]:
        for task in play["tasks"]:
            host = task["hosts"].get("localhost", {})
            outcome[task["task"]["name"].removeprefix("dcgm : ")] = host
    return outcome


@pytest.mark.parametrize("mode", ["kubernetes", "standalone"])
def test_exactly_one_owner_of_the_dcgm_engine(mode: str, tmp_path: Path):
    got = configure(mode, tmp_path)
    engine = got["Run the DCGM host engine on standalone hosts only"]
    unit = got["Install the dcgm-exporter unit"]
    removed = got["Remove a host exporter from a Kubernetes node"]
    if mode == "kubernetes":
        # The operator's exporter is the engine: the host's stays disabled and stopped, no host exporter.
        assert engine["invocation"]["module_args"]["enabled"] is False
        assert engine["invocation"]["module_args"]["state"] == "stopped"
        assert engine["changed"] is True, "a running host engine is stopped"
        assert unit.get("skipped") is True
        assert removed.get("skipped") is not True
    else:
        assert engine["invocation"]["module_args"]["enabled"] is True
        assert engine["invocation"]["module_args"]["state"] is None
        assert unit.get("skipped") is not True
        assert removed.get("skipped") is True
