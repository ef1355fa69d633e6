"""The MIG apply unit is ordered like NVIDIA's own (mig-parted deployments/systemd, commit in fixtures/README.md).

Upstream's nvidia-mig-manager.service runs After=nvidia-persistenced.service nvidia-fabricmanager.service
and Before=nvidia-gpu-reset.target; its hooks.sh orders the driver services (nvidia-dcgm.service) after
that target and stops/starts dcgm-exporter.service and kubelet.service around a change. The role's
unit has no reset target, so it must name those services in Before= itself.
"""

from __future__ import annotations

import configparser
import json
from pathlib import Path

from tests.ansible.helpers import FIXTURES, HERE, UBUNTU_2204, run_playbook


def unit_deps(text: str) -> dict[str, set[str]]:
    """After=/Before= of a unit file as systemd reads them (space-separated, repeatable)."""
    parser = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#", ";"))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {key: set(parser["Unit"].get(key, "").split()) for key in ("After", "Before")}


def rendered_unit(tmp_path: Path) -> str:
    out = tmp_path / "out"
    out.mkdir()
    result = run_playbook(HERE / "playbooks" / "render.yml", {"fake": UBUNTU_2204, "out_dir": str(out)})
    assert result.returncode == 0, result.stdout[-3000:]
    assert json.loads((out / "facts.json").read_text())
    return (out / "nvidia-mig-apply.service").read_text()


def test_mig_unit_runs_after_what_upstream_waits_for_and_before_what_upstream_stops(tmp_path: Path):
    upstream = unit_deps((FIXTURES / "mig-parted-nvidia-mig-manager.service").read_text())
    ours = unit_deps(rendered_unit(tmp_path))
    assert upstream["After"] <= ours["After"], f"missing: {upstream['After'] - ours['After']}"
    # hooks.sh: driver_services (after nvidia-gpu-reset.target) and k8s_services.
    assert {"nvidia-dcgm.service", "dcgm-exporter.service", "kubelet.service"} <= ours["Before"]
    assert not ours["After"] & ours["Before"]
