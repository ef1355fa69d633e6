"""Every rule's finding names the stack key path the user wrote and its line, whatever the rule judged.

The rules judge rendered objects (node groups, ClusterQueues, Helm values); the key comes from the
stack entry the program built the object from (gpu_platform.provenance) or from the rule itself.
A new rule gets it without saying so, and cannot ship a finding that points nowhere: this test runs
every violating case of every rule (tests/policies/cases*.py) and places it in the stack file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform_policies.placement import place
from tests.change.cases import CHANGE_CASES, ChangeCase, run_change_case
from tests.conftest import stack_path
from tests.policies.builders import REPO
from tests.policies.cases import CASES, Case, run_case

VIOLATING = [c for c in CASES if c.fires_on is not None]


@pytest.mark.parametrize("case", VIOLATING, ids=[f"{c.rule}:{c.id}" for c in VIOLATING])
def test_violation_names_key_path_and_line(case: Case, tmp_path: Path) -> None:
    found = run_case(case, tmp_path)
    assert found, f"{case.rule}:{case.id} found nothing"
    for v in place(found, stack_path(case.stack), tmp_path / "repo" if case.repo else REPO):
        assert v.key, f"{case.rule}:{case.id}: finding on {v.resource} has no stack key path ({v.message})"
        assert v.line, f"{case.rule}:{case.id}: key {v.key} has no line in {v.file}"
        if v.key.startswith("gpu-platform:") and v.file == str(stack_path(case.stack)):
            # the line is inside `config:` and holds the key's last written segment (or a list item's first key)
            assert v.line > 1, f"{case.rule}:{case.id}: {v.key} placed on the file's first line"


CHANGES = [c for c in CHANGE_CASES if c.fires_on is not None]


@pytest.mark.parametrize("case", CHANGES, ids=[f"{c.rule}:{c.id}" for c in CHANGES])
def test_change_finding_names_key_path_and_line(case: ChangeCase) -> None:
    """The change rules of `check --base` too: every finding lands on a key and a line of prod's stack file or the lockfile."""
    found = run_change_case(case)
    assert found, f"{case.rule}:{case.id} found nothing"
    for v in place(found, stack_path("prod"), REPO):
        if case.rule == "gate-code-changed":  # about a file of the gate's code, not a stack key: the file it names
            assert v.file == case.file and case.file in v.message, v
            continue
        assert v.key and v.line, f"{case.rule}:{case.id}: finding on {v.resource} has key {v.key!r}, line {v.line!r} ({v.message})"
