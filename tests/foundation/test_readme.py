"""The README is the front door and docs/ the reference: generated tables match the code, every command is documented."""

from __future__ import annotations

import re

import pytest

from gpu_platform.cli import COMMANDS
from tests.conftest import ROOT
from tests.foundation.docs import GENERATED, block, generate, recipes

README = (ROOT / "README.md").read_text()
# The recipes the front door promises (issue 18): the two most common edits, the gate, the planner, explain,
# Ansible on one's own hosts, and a deploy.
PROMISED_RECIPES = ("add-pool", "add-tenant", "pull-request", "capacity-plan", "explain", "ansible", "deploy")


@pytest.mark.parametrize(("page", "marker", "module"), GENERATED, ids=[marker for _, marker, _ in GENERATED])
def test_generated_tables_are_current(page: str, marker: str, module: tuple[str, ...]) -> None:
    assert block((ROOT / page).read_text(), marker) == generate(module), f"{page}: {marker} drifted; regenerate: scripts/refresh-docs.sh"


def test_every_command_is_documented() -> None:
    cli = (ROOT / "docs" / "cli.md").read_text()
    for name in COMMANDS:
        assert f"`gpu-platform {name}" in cli, f"docs/cli.md has no row for `gpu-platform {name}`"


def test_quick_start_is_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    first = re.search(r"```sh\n(.*?)```", quick, re.S)
    assert first is not None
    assert [line.split()[:2] for line in first.group(1).splitlines()] == [["make", "demo"], ["make", "test"]]


def test_readme_is_a_front_door() -> None:
    """About 250 lines: what it is, the diagram, the two commands, the recipes, where to read more."""
    lines = README.count("\n")
    assert lines <= 300, f"README.md has {lines} lines; the reference belongs in docs/"
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings == ["Quick start", "Recipes", "Where to read more"], headings
    assert "```mermaid" in README


def test_readme_has_every_promised_recipe() -> None:
    found = recipes(README)
    assert tuple(found) == PROMISED_RECIPES, list(found)
    for name, recipe in found.items():
        assert recipe.shell, f"recipe {name} has no shell block"


def test_readme_points_into_every_docs_page() -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in README, f"README's 'Where to read more' does not link docs/{page.name}"


def test_the_project_has_the_licence_its_metadata_names() -> None:
    """pyproject.toml says Apache-2.0 (as the components it configures): LICENSE is that licence's text."""
    text = (ROOT / "LICENSE").read_text()
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
