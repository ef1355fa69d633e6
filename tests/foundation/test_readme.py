"""The README is the front door: its config reference and commands match the code."""

from __future__ import annotations

from gpu_platform.cli import COMMANDS
from gpu_platform.spec.reference import markdown
from gpu_platform_policies.reference import markdown as policy_markdown
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def _generated(marker: str) -> str:
    start = README.index(f"<!-- {marker}:start -->\n") + len(f"<!-- {marker}:start -->\n")
    return README[start : README.index(f"<!-- {marker}:end -->")].strip()


def test_config_reference_is_current() -> None:
    assert _generated("config-reference") == markdown().strip(), "regenerate: scripts/refresh-readme.sh"


def test_policy_reference_is_current() -> None:
    assert _generated("policy-reference") == policy_markdown().strip(), "regenerate: scripts/refresh-readme.sh"


def test_every_command_is_documented() -> None:
    for name in COMMANDS:
        assert f"gpu-platform {name}" in README, name


def test_quick_start_is_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    assert "make demo" in quick
    assert "make test" in quick
