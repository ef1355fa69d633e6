"""Project layout rules: playbooks only map groups to roles, roles follow the house conventions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.ansible.helpers import ANSIBLE_DIR, ROLES

PLAYBOOKS = ["site.yml", "validate.yml", "golden_image.yml", "driver_upgrade.yml", "node_taints.yml"]
ROLE_DIRS = sorted(p for p in ROLES.iterdir() if p.is_dir())
PLAY_KEYS = {
    "name",
    "hosts",
    "become",
    "roles",
    "serial",
    "max_fail_percentage",
    "gather_facts",
    "gather_subset",
    "connection",
    "pre_tasks",
    "post_tasks",
    "ansible.builtin.import_playbook",
}


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_playbooks_only_map_groups_to_roles(name: str):
    for play in yaml.safe_load((ANSIBLE_DIR / name).read_text()):
        assert set(play) <= PLAY_KEYS, f"{name}: {play.get('name')} has {set(play) - PLAY_KEYS}"
        for section in ("pre_tasks", "post_tasks"):
            for task in play.get(section, []):
                assert set(task) <= {"name", "ansible.builtin.include_role"}, f"{name}: logic in {section}: {task}"


def test_golden_image_runs_roles_then_cleanup_then_manifest():
    plays = yaml.safe_load((ANSIBLE_DIR / "golden_image.yml").read_text())
    assert "nvidia_driver" in plays[0]["roles"] and "nvidia_fabricmanager" in plays[0]["roles"]
    assert plays[-1]["roles"] == ["image_cleanup", "image_manifest"]


def test_rolling_upgrade_stops_at_the_first_failure():
    plays = yaml.safe_load((ANSIBLE_DIR / "driver_upgrade.yml").read_text())
    rollout = plays[-1]
    assert rollout["max_fail_percentage"] == 0
    assert "serial" in rollout
    assert rollout["pre_tasks"][0]["ansible.builtin.include_role"]["name"] == "k8s_node_maintenance"
    assert rollout["post_tasks"][0]["ansible.builtin.include_role"]["tasks_from"] == "release"
    release = yaml.safe_load((ROLES / "k8s_node_maintenance" / "tasks" / "release.yml").read_text())
    assert "stays" in release[0]["rescue"][0]["ansible.builtin.fail"]["msg"]
    uncordon = next(t for t in release if "kubernetes.core.k8s_drain" in t)
    assert uncordon["kubernetes.core.k8s_drain"]["state"] == "uncordon" and release.index(uncordon) > 0


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_role_has_argument_specs_readme_and_prefixed_variables(role: Path):
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    options = set(specs["main"].get("options", {}))
    readme = (role / "README.md").read_text()
    for option in options:
        assert f"`{option}`" in readme, f"{role.name}: README does not document {option}"
    prefix = role.name.split("_")[0] if role.name == "mig" else role.name
    defaults_file = role / "defaults" / "main.yml"
    defaults = yaml.safe_load(defaults_file.read_text()) if defaults_file.exists() else {}
    for var in defaults or {}:
        assert var.startswith(prefix), f"{role.name}: default {var} lacks the role prefix"
        assert var in options, f"{role.name}: default {var} has no argument spec"
    for varfile in (role / "vars").glob("*.yml"):
        for var in yaml.safe_load(varfile.read_text()) or {}:
            assert var.startswith(f"_{prefix}"), f"{role.name}: internal {var} in {varfile.name} lacks _{prefix}"
