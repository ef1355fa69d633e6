"""The base decides how strict the gate is: a pull request's own `policy` block can tighten the gate, never loosen it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from gpu_platform.change.owners import GATE_PATHS, owners_of, read_codeowners
from gpu_platform_policies.model import CHANGE_RULES, THRESHOLD_DEFAULTS
from gpu_platform_policies.strictness import GateSetting, loosened, setting_of, strictest, tighter_threshold
from tests.conftest import ROOT

NS = "gpu-platform:"


def _policy(**block: object) -> dict[str, object]:
    return {NS + "environment": "prod", NS + "policy": block}


def test_every_threshold_says_which_way_is_stricter() -> None:
    for name in THRESHOLD_DEFAULTS:
        assert tighter_threshold(name) in (min, max), name


def test_a_disabled_rule_a_raised_ceiling_and_production_off_are_loosenings_judged_at_the_base() -> None:
    base = setting_of(_policy())
    head = setting_of(
        _policy(
            enforcement={"eks-endpoint-restricted": "disabled", "spot-exposure": "mandatory"},
            thresholds={"eks-public-max-addresses": 2**32, "min-demand-coverage": 0.99},
            production=False,
        )
    )
    assert loosened(base, head) == [
        (f"{NS}policy.enforcement.eks-endpoint-restricted", "mandatory", "disabled"),
        (f"{NS}policy.thresholds.eks-public-max-addresses", "65536", "4.29497e+09"),
        (f"{NS}policy.production", "true", "false"),
    ]
    judged = strictest(base, head)
    assert judged.enforcement["eks-endpoint-restricted"] == "mandatory"
    assert judged.enforcement["spot-exposure"] == "mandatory", "a tightening in the change applies at once"
    assert judged.thresholds["eks-public-max-addresses"] == 65536
    assert judged.thresholds["min-demand-coverage"] == 0.99
    assert judged.production is True


def test_a_stack_that_was_not_production_may_stay_so_and_tightening_is_not_a_finding() -> None:
    base = GateSetting({"spot-exposure": "disabled"}, {}, production=False)
    head = GateSetting({"spot-exposure": "advisory"}, {}, production=False)
    assert loosened(base, head) == []
    assert strictest(base, head).enforcement["spot-exposure"] == "advisory"


def test_malformed_policy_values_read_as_unset() -> None:
    """A value the loader would refuse cannot make the base look looser than it is."""
    s = setting_of({NS + "environment": "prod", NS + "policy": {"enforcement": {"eks-endpoint-restricted": "off"}, "production": "no"}})
    assert s.enforcement == {} and s.production is True


def test_the_shipped_codeowners_covers_the_gate_and_the_stacks() -> None:
    rules = read_codeowners(ROOT)
    assert rules, ".github/CODEOWNERS exists"
    for path in (
        "policies/gpu_platform_policies/rules/security.py",
        "infra/gpu_platform/behaviour/kueue.py",
        "infra/gpu_platform/change/base_rules.py",
        "infra/gpu_platform/commands/check.py",
        "infra/gpu_platform/commands/change.py",
        ".github/workflows/pull-request.yml",
        ".ci/run",
        "scripts/change-gate.sh",
        "Pulumi.yaml",
    ):
        assert any(path.startswith(p.rstrip("/")) for p in GATE_PATHS), path
        assert owners_of(path, rules), f"{path} has no code owner"
    for gate in GATE_PATHS:  # every path the gate names as its own has an owner to name
        assert owners_of(gate.rstrip("/") + ("/x" if gate.endswith("/") else ""), rules), gate
    assert owners_of("stacks/Pulumi.prod.yaml", rules), "a stack file's policy block needs its owners"
    assert not owners_of("infra/gpu_platform/k8s/kueue.py", rules)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("/policies/", "policies/a/b.py", True),
        ("/policies/", "x/policies/a.py", False),
        ("*.py", "deep/down/a.py", True),
        ("docs/*", "docs/a.md", True),
        ("docs/*", "docs/a/b.md", False),
        ("/stacks/Pulumi.*.yaml", "stacks/Pulumi.prod.yaml", True),
        ("**/CODEOWNERS", ".github/CODEOWNERS", True),
    ],
)
def test_codeowners_patterns_match_as_github_documents(pattern: str, path: str, matches: bool, tmp_path: Path) -> None:
    """GitHub "About code owners", example file: anchoring, trailing slash, `*` not crossing `/`, `**`."""
    (tmp_path / "CODEOWNERS").write_text(f"{pattern} @team\n")
    assert bool(owners_of(path, read_codeowners(tmp_path))) is matches


def test_only_the_documented_rules_read_a_maintenance_trailer() -> None:
    """docs/gate.md names the rules a trailer can let through; every other change rule never asks."""
    readers = {name for name, r in CHANGE_RULES.items() if "stated_maintenance" in inspect.getsource(r.check)}
    assert readers == {"fixed-capacity-replaced", "fixed-capacity-recycled", "driver-or-cuda-moved"}
    text = (ROOT / "docs" / "gate.md").read_text()
    assert "Only `fixed-capacity-replaced`, `fixed-capacity-recycled` and\n`driver-or-cuda-moved` read a trailer" in text
