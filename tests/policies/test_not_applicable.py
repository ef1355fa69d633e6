"""Rules whose input a stack lacks report "not applicable" in every output format, and are not counted as run."""

from __future__ import annotations

import json

import pytest

from gpu_platform.cli import main
from gpu_platform_policies import RULES
from gpu_platform_policies.evaluate import not_applicable
from tests.policies.cases import context, resources
from tests.policies.cases_capacity import declare_demand

DEMAND_RULES = ("demand-coverage", "demand-spot-exposure", "spot-fallback-for-non-interruptible")


def test_without_demand_the_demand_rules_are_not_applicable() -> None:
    idle = dict(not_applicable(resources("prod"), context("prod")))
    assert set(DEMAND_RULES) <= set(idle) and all("declares no gpu-platform:demand" in idle[r] for r in DEMAND_RULES)


def test_with_demand_they_apply() -> None:
    res = declare_demand("prod", ("inference", 24, "inference", False))(resources("prod"))
    assert not set(DEMAND_RULES) & {n for n, _ in not_applicable(res, context("prod"))}


def test_a_stack_without_kueue_or_blocks_says_so() -> None:
    idle = dict(not_applicable(resources("dev"), context("dev")))
    assert idle["capacity-block-in-dates"] == "the stack has no Capacity Block pool"
    assert "kueue-preemption-enforced" not in idle  # dev runs Kueue


def test_a_disabled_rule_is_not_also_not_applicable() -> None:
    assert "demand-coverage" not in dict(not_applicable(resources("prod"), context("prod"), {"demand-coverage": "disabled"}))


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_every_output_format_reports_it(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--stack", "dev", "--format", fmt])
    out = capsys.readouterr().out
    if fmt == "json":
        doc = json.loads(out)
        names = {e["policy"] for e in doc["gate"]["notApplicable"]}
        assert set(DEMAND_RULES) <= names
        assert doc["summary"]["rulesRun"] == len(RULES) - doc["summary"]["notApplicable"] - len(doc["gate"]["disabled"])
    elif fmt == "text":
        assert "not applicable)" in out.splitlines()[0]
        assert "not applicable: spot-fallback-for-non-interruptible (the stack declares no gpu-platform:demand)" in out
    else:
        assert "title=spot-fallback-for-non-interruptible not applicable::the stack declares no gpu-platform:demand" in out
