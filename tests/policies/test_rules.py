"""Every rule: its compliant cases stay silent, its violating cases name the resource; no rule is untested."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform_policies import RULES
from tests.policies.cases import CASES, Case, assert_case, run_case


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}:{c.id}" for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    assert_case(case, run_case(case, tmp_path))


def test_every_rule_has_a_compliant_and_a_violating_case() -> None:
    for name in RULES:
        kinds = {c.fires_on is not None for c in CASES if c.rule == name}
        assert kinds == {True, False}, f"rule {name} needs a compliant and a violating case (has {kinds or 'none'})"
    unknown = {c.rule for c in CASES} - set(RULES)
    assert not unknown, f"cases for rules that do not exist: {unknown}"


@pytest.mark.parametrize("name", sorted(RULES))
def test_switching_the_rule_off_fails_a_test(name: str, tmp_path: Path) -> None:
    """Mutation check: with the rule disabled (as a stack would disable it), some case of it must fail."""
    failed = []
    for case in (c for c in CASES if c.rule == name):
        try:
            assert_case(case, run_case(case, tmp_path / case.id, enforcement={name: "disabled"}))
        except AssertionError:
            failed.append(case.id)
    assert failed, f"disabling {name} broke no test: the rule is untested"


def test_rules_are_well_formed() -> None:
    for rule in RULES.values():
        assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name, rule.name
        assert rule.description.endswith(".") and "\n" not in rule.description, rule.name
        assert rule.level in ("advisory", "mandatory"), rule.name
    assert len(RULES) >= 20
    assert RULES["spot-exposure"].level == "advisory"
    assert RULES["imdsv2-required"].level == "mandatory"
