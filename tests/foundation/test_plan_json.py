"""`plan --format json`: the whole plan as one JSON document, one resource per line."""

from __future__ import annotations

import json

import pytest

from gpu_platform.cli import main
from gpu_platform.commands.plan import plan_stack
from tests.conftest import stack_path


def test_plan_json_is_the_plan_with_one_resource_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "dev", "--format", "json"]) == 0
    out = capsys.readouterr().out
    expected = plan_stack(stack_path("dev"), "dev").to_json()
    assert json.loads(out) == expected
    # Each resource's whole record is one line of its own, in the plan's order: grep finds it, a diff names it.
    lines = [line.strip().rstrip(",") for line in out.splitlines() if line.startswith('    {"type": ')]
    assert [json.loads(line) for line in lines] == expected["resources"]
