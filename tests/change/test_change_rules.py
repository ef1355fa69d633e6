"""Every change rule: a violating change names the resource, stack key and file; a legitimate one stays silent."""

from __future__ import annotations

import pytest

from gpu_platform_policies import CHANGE_RULES, RULES
from tests.change.cases import CHANGE_CASES, ChangeCase, assert_change_case, run_change_case


@pytest.mark.parametrize("case", CHANGE_CASES, ids=[f"{c.rule}:{c.id}" for c in CHANGE_CASES])
def test_change_case(case: ChangeCase) -> None:
    assert_change_case(case, run_change_case(case))


def test_every_change_rule_has_a_violating_and_a_legitimate_change() -> None:
    for name in CHANGE_RULES:
        kinds = {c.fires_on is not None for c in CHANGE_CASES if c.rule == name}
        assert kinds == {True, False}, f"change rule {name} needs a violating and a legitimate change (has {kinds or 'none'})"
    assert not {c.rule for c in CHANGE_CASES} - set(CHANGE_RULES)


@pytest.mark.parametrize("name", sorted(CHANGE_RULES))
def test_disabling_a_change_rule_fails_its_case(name: str) -> None:
    """Mutation check: with the rule disabled, its violating cases must fail."""
    for case in (c for c in CHANGE_CASES if c.rule == name and c.fires_on):
        with pytest.raises(AssertionError):
            assert_change_case(case, run_change_case(case, enforcement={name: "disabled"}))


def test_change_rules_stay_out_of_the_state_gate() -> None:
    """CrossGuard and `check` without --base see one plan: change rules must not be among their rules."""
    assert not set(CHANGE_RULES) & set(RULES)
    for rule in CHANGE_RULES.values():
        assert rule.scope == "change" and rule.level in ("advisory", "mandatory") and rule.description.endswith("."), rule.name
