"""Pulumi.yaml: the project file `pulumi up` reads declares exactly the keys the spec accepts."""

from __future__ import annotations

import yaml

from gpu_platform.spec.loader import PROJECT, PROJECT_KEYS
from tests.conftest import ROOT, STACKS, stack_path

PROJECT_FILE = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
# Pulumi's project schema: the config types a declaration may name.
CONFIG_TYPES = {"string", "integer", "boolean", "array", "object"}


def test_project_runs_infra_in_the_repository_venv() -> None:
    assert PROJECT_FILE["name"] == PROJECT
    assert PROJECT_FILE["runtime"] == {"name": "python", "options": {"toolchain": "uv", "virtualenv": ".venv"}}
    assert PROJECT_FILE["main"] == "infra/"
    assert PROJECT_FILE["stackConfigDir"] == "stacks"
    assert (ROOT / "infra" / "__main__.py").is_file()


def test_config_block_declares_every_spec_key_with_type_and_description() -> None:
    config = PROJECT_FILE["config"]
    assert set(config) == set(PROJECT_KEYS)
    for key, decl in config.items():
        assert decl["type"] in CONFIG_TYPES, key
        assert decl["description"], key
        if decl["type"] == "array":
            assert decl["items"]["type"] in CONFIG_TYPES, key


def test_keys_without_default_are_set_by_every_stack() -> None:
    """Pulumi requires a stack value for a declared key that has no default."""
    required = {k for k, decl in PROJECT_FILE["config"].items() if "default" not in decl}
    assert required == {"environment", "cluster", "nodePools"}
    for name in STACKS:
        values = yaml.safe_load(stack_path(name).read_text())["config"]
        assert {f"{PROJECT}:{k}" for k in required} <= set(values), name
