"""The README is the front door: its config reference and commands match the code."""

from __future__ import annotations

from gpu_platform.cli import COMMANDS
from gpu_platform.spec.reference import markdown
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_config_reference_is_current() -> None:
    start = README.index("<!-- config-reference:start -->\n") + len("<!-- config-reference:start -->\n")
    end = README.index("<!-- config-reference:end -->")
    assert README[start:end].strip() == markdown().strip(), "regenerate: python -m gpu_platform.spec.reference"


def test_every_command_is_documented() -> None:
    for name in COMMANDS:
        assert f"gpu-platform {name}" in README, name


def test_quick_start_is_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    assert "make demo" in quick
    assert "make test" in quick
