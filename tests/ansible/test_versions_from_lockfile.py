"""The roles read every version from infra/gpu_platform/data/versions.yaml and from nowhere else."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ansible.helpers import ANSIBLE_DIR, DEBIAN_12, HERE, ROCKY_9, UBUNTU_2204, ansible_env, load_lockfile, run_playbook

# Collection pins are Galaxy's format and are checked against the bundled collections instead;
# the vendored mig-parted config is upstream data (profile names such as 1g.10gb, no versions);
# Packer reads `required_plugins` before any variable or file function, so only literals work there
# (test_packer.py keeps them equal to the lockfile's tools.packer-plugin-*).
EXEMPT = {
    ANSIBLE_DIR / "requirements.yml",
    ANSIBLE_DIR / "roles" / "mig" / "files" / "config-default.yaml",
    ANSIBLE_DIR / "packer" / "plugins.pkr.hcl",
}
SKIP_DIRS = {".gpu-host-deps", "reports", "manifests", "__pycache__"}
TEXT_SUFFIXES = {".yml", ".yaml", ".j2", ".py", ".cfg", ".hcl", ".sh", ".md", ".toml", ".conf", ""}


def ansible_files() -> list[Path]:
    files = []
    for path in ANSIBLE_DIR.rglob("*"):
        if path.is_file() and path not in EXEMPT and path.suffix in TEXT_SUFFIXES and not SKIP_DIRS & set(path.relative_to(ANSIBLE_DIR).parts):
            files.append(path)
    return files


def version_values(node: Any, path: str = "") -> dict[str, str]:
    """Every versioned value of the lockfile (not the compatibility matrix), by key path."""
    out: dict[str, str] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            if path == "" and key in {"compatibility", "schema"}:
                continue
            out.update(version_values(value, f"{path}.{key}" if path else str(key)))
    elif isinstance(node, str) and re.search(r"\d+\.\d+", node) and "://" not in node:
        out[path] = node
    return out


LOCKED = version_values(load_lockfile())


def test_the_lockfile_has_the_versions_the_roles_need():
    for key in [
        "nvidia_driver.version",
        "nvidia_driver.packages.ubuntu",
        "nvidia_driver.packages.rhel",
        "container_toolkit.version",
        "dcgm.version",
        "mig_parted.version",
        "fabric_manager.version",
        "cuda.version",
    ]:
        assert key in LOCKED


@pytest.mark.parametrize("path", ansible_files(), ids=lambda p: str(p.relative_to(ANSIBLE_DIR)))
def test_no_lockfile_version_is_copied_into_the_ansible_tree(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    copies = [f"{key}={value}" for key, value in LOCKED.items() if re.search(rf"(?<![\w.:-]){re.escape(value)}(?![\w.-])", text)]
    assert copies == [], f"{path.relative_to(ANSIBLE_DIR)} repeats lockfile versions: {copies}"


@pytest.mark.parametrize("path", ansible_files(), ids=lambda p: str(p.relative_to(ANSIBLE_DIR)))
def test_no_dotted_version_literal_in_the_ansible_tree(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    # x.y.z anywhere, or a version-looking value assigned to a *version* key.
    pins = re.findall(r"(?<![\w.])\d+\.\d+\.\d+(?![\w.])", text)
    pins += re.findall(r"version\w*\s*[:=]\s*[\"']?v?\d+\.\d+", text)
    assert pins == [], f"{path.relative_to(ANSIBLE_DIR)} pins versions outside the lockfile: {pins}"


def mutated_lockfile(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of the lockfile with every pinned version changed."""
    data = load_lockfile()
    data["nvidia_driver"].update(version="999.10.20", packages={"debian": "999.10.20-7", "ubuntu": "999.10.20-0ubuntu7", "rhel": "999.10.20-7"})
    data["fabric_manager"]["version"] = "999.10.20"
    data["container_toolkit"].update(version="9.8.7", packages={k: "9.8.7-3" for k in ("debian", "ubuntu", "rhel")})
    data["dcgm"].update(version="8.7.6", packages={"debian": "1:8.7.6-2", "ubuntu": "1:8.7.6-2", "rhel": "8.7.6-2"})
    data["cuda"].update(version="77.1.0", packages={"ubuntu": "77.1.0-4", "rhel": "77.1.0-4"})
    data["mig_parted"].update(version="5.4.3", packages={k: "5.4.3-9" for k in ("debian", "ubuntu", "rhel")})
    data["images"]["dcgm-exporter"]["tag"] = "8.7.6-test"
    path = tmp_path / "versions.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path, data


@pytest.mark.parametrize(
    ("facts", "source"), [(DEBIAN_12, "debian"), (UBUNTU_2204, "ubuntu"), (ROCKY_9, "rhel")], ids=["debian12", "ubuntu2204", "rocky9"]
)
def test_changing_the_lockfile_changes_every_role_pin(tmp_path: Path, facts: dict[str, str], source: str):
    lock, data = mutated_lockfile(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    result = run_playbook(
        HERE / "playbooks" / "render.yml", {"fake": facts, "out_dir": str(out)}, env=ansible_env(GPU_PLATFORM_VERSIONS_FILE=str(lock))
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    got = json.loads((out / "facts.json").read_text())
    assert got["driver_package_version"] == data["nvidia_driver"]["packages"][source]
    assert got["toolkit_package_version"] == data["container_toolkit"]["packages"][source]
    assert got["dcgm_package_version"] == data["dcgm"]["packages"][source]
    assert got["cuda_package_version"] == data["cuda"]["packages"].get(source, "")
    assert got["fabricmanager_package_version"].startswith("999.10.20-")
    assert got["mig_parted_version"] == "5.4.3"
    assert got["mig_parted_package_version"] == "5.4.3-9"
    assert got["dcgm_exporter_image"].endswith(":8.7.6-test")
    assert got["validate_driver_version"] == "999.10.20"
    if source != "rhel":
        assert "Pin: version 999.10.20-" in (out / "nvidia_driver.pref").read_text()
        assert "Pin: version 9.8.7-3" in (out / "nvidia_container_toolkit.pref").read_text()
