"""Pull requests that try to weaken the gate that judges them, run through `check --base` as CI runs it.

Each commits a base in a temporary repository (the landed program, stacks, a rule file and CODEOWNERS),
makes the pull request's change, and reads the verdict: the change is judged with the base's gate settings,
the loosening and any change to the gate's own code is a mandatory finding naming the code owners.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gpu_platform import cli
from gpu_platform.change.base_rules import BaseVerdict
from gpu_platform.commands.change import base_only
from tests.change.gitrepo import git, make_repo
from tests.conftest import ROOT

PROD = "stacks/Pulumi.prod.yaml"
OPEN = ('publicAccessCidrs: ["198.51.100.0/27"]', 'publicAccessCidrs: ["0.0.0.0/0"]')
OWNER = "@acme/gpu-platform-owners"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("weakening"))
    (root / ".github").mkdir()
    shutil.copy(ROOT / ".github" / "CODEOWNERS", root / ".github" / "CODEOWNERS")
    shutil.copytree(ROOT / "policies", root / "policies", ignore=shutil.ignore_patterns("__pycache__"))
    for args in (["add", "-A"], ["commit", "-qm", "gate and owners"], ["tag", "-f", "base"]):
        git(root, *args)
    return root


BASE_POLICY = "  gpu-platform:policy:\n    enforcement: {documentation-cidr: advisory}\n"


def policy_block(block: str) -> Callable[[str], str]:
    """Replace prod's `gpu-platform:policy` block (its base keeps documentation-cidr advisory, so does every change here)."""

    def edit(text: str) -> str:
        assert BASE_POLICY in text
        return text.replace(BASE_POLICY, f"  gpu-platform:policy:\n{block}", 1)

    return edit


def pr(
    repo: Path, capsys: pytest.CaptureFixture[str], *edits: Callable[[str], str], extra: Callable[[Path], None] | None = None, own_code: bool = False
) -> tuple[int, dict]:
    """The verdict of `check --base base --format json` on the change; `own_code`: run by the pull request's own
    code (its `infra/` and `policies/` first on PYTHONPATH), as CI runs a pull request's checkout."""
    git(repo, "reset", "-q", "--hard", "base")
    git(repo, "clean", "-qfd")
    path = repo / PROD
    text = path.read_text()
    for edit in edits:
        text = edit(text)
    path.write_text(text)
    if extra:
        extra(repo)
    capsys.readouterr()
    argv = ["check", "--config", str(path), "--base", "base", "--format", "json"]
    if own_code:
        env = {**os.environ, "PYTHONPATH": f"{repo}/infra{os.pathsep}{repo}/policies", "PYTHONDONTWRITEBYTECODE": "1"}
        main = "import sys\nfrom gpu_platform import cli\nsys.exit(cli.main(sys.argv[1:]))"
        done = subprocess.run([sys.executable, "-c", main, *argv], cwd=repo, env=env, capture_output=True, text=True, check=False, timeout=600)
        assert done.returncode in (0, 1), done.stderr
        return done.returncode, json.loads(done.stdout)
    code = cli.main(argv)
    out = capsys.readouterr()
    assert code in (0, 1), out.err
    return code, json.loads(out.out)


def found(doc: dict, policy: str, about: str = "") -> list[dict]:
    return [v for v in doc["violations"] if v["policy"] == policy and about in v["message"]]


def test_disabling_the_rule_it_breaks_does_not_let_it_through(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = pr(
        repo, capsys, lambda t: t.replace(*OPEN), policy_block("    enforcement: {documentation-cidr: advisory, eks-endpoint-restricted: disabled}\n")
    )
    assert code == 1
    assert found(doc, "eks-endpoint-restricted"), "judged with the base's level: mandatory"
    (loose,) = found(doc, "gate-loosened")
    assert "eks-endpoint-restricted mandatory -> disabled" in loose["message"] and OWNER in loose["message"]
    assert loose["keyPath"] == "gpu-platform:policy.enforcement.eks-endpoint-restricted" and loose["line"]
    assert doc["summary"]["loosened"][0]["change"] == "disabled"
    assert doc["summary"]["mandatoryWithOwnSettings"] < sum(v["level"] == "mandatory" for v in doc["violations"])


def test_declaring_prod_not_production_does_not_drop_production_rules(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = pr(repo, capsys, lambda t: t.replace(*OPEN), policy_block("    enforcement: {documentation-cidr: advisory}\n    production: false\n"))
    assert code == 1 and found(doc, "eks-endpoint-restricted") and found(doc, "gate-loosened", "production true -> false")


def test_raising_a_threshold_is_judged_at_the_base_threshold(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = pr(
        repo,
        capsys,
        lambda t: t.replace(*OPEN),
        policy_block("    enforcement: {documentation-cidr: advisory}\n    thresholds: {eks-public-max-addresses: 4294967296}\n"),
    )
    assert code == 1 and found(doc, "eks-endpoint-restricted") and found(doc, "gate-loosened", "eks-public-max-addresses 65536 -> ")


def test_disabling_the_loosening_rule_itself_is_a_loosening(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = "    enforcement: {documentation-cidr: advisory, gate-loosened: disabled, fixed-capacity-replaced: disabled}\n"
    code, doc = pr(repo, capsys, policy_block(block))
    assert code == 1
    assert {v["message"].split(" loosens")[0] for v in found(doc, "gate-loosened")} == {
        "policy.enforcement.fixed-capacity-replaced mandatory -> disabled",
        "policy.enforcement.gate-loosened mandatory -> disabled",
    }


def test_tightening_the_gate_needs_nobody(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = pr(repo, capsys, policy_block("    enforcement: {documentation-cidr: advisory, spot-exposure: mandatory}\n"))
    assert not found(doc, "gate-loosened") and not found(doc, "gate-code-changed")
    assert code == 0, [v["policy"] for v in doc["violations"] if v["level"] == "mandatory"]


def test_editing_a_rule_in_the_same_pull_request_is_named_with_its_owners(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def weaken(root: Path) -> None:
        rule = root / "policies" / "gpu_platform_policies" / "rules" / "security.py"
        rule.write_text(rule.read_text().replace('"mandatory"', '"advisory"', 1))

    code, doc = pr(repo, capsys, lambda t: t, extra=weaken)
    (hit,) = found(doc, "gate-code-changed")
    assert code == 1 and hit["file"].endswith("policies/gpu_platform_policies/rules/security.py") and OWNER in hit["message"]


def _silence_endpoint_rule(root: Path) -> None:
    rule = root / "policies" / "gpu_platform_policies" / "rules" / "security.py"
    text = rule.read_text()
    hook = "    if not production:\n        return\n    vpc = "
    assert hook in text
    rule.write_text(text.replace(hook, "    return\n    vpc = ", 1))


BASE_SAYS = "(the base revision's rule; this change's own rules did not find it)"


def test_a_rule_weakened_in_the_pull_request_it_judges_is_overruled_by_the_base_rule(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The PR opens the endpoint to the world and, in the same diff, makes eks-endpoint-restricted return early.
    Its own rules see nothing; the base revision's rules, run over the PR's plan, find the open endpoint."""
    code, doc = pr(repo, capsys, lambda t: t.replace(*OPEN), extra=_silence_endpoint_rule, own_code=True)
    assert code == 1
    (hit,) = found(doc, "eks-endpoint-restricted")
    assert hit["level"] == "mandatory" and hit["message"].startswith(BASE_SAYS) and "0.0.0.0/0" in hit["message"]
    assert hit["file"].endswith(PROD) and hit["keyPath"].startswith("gpu-platform:cluster") and hit["line"]
    rules = doc["summary"]["baseRules"]
    assert rules["judged"] and rules["onlyBase"] >= 1 and rules["ruleCodeChanged"] == ["policies/gpu_platform_policies/rules/security.py"]


def test_the_base_rules_judge_the_pull_requests_plan_not_their_own(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Same weakened rule, and the PR changes the program too: it stops restricting the endpoint for every stack.
    The base's rules must see the PR's resources (the judged program), not what the base's program would build."""

    def both(root: Path) -> None:
        _silence_endpoint_rule(root)
        cluster = root / "infra" / "gpu_platform" / "aws" / "cluster.py"
        text = cluster.read_text()
        written = "public_access_cidrs=list(spec.public_access_cidrs) if"
        assert written in text, "the program writes publicAccessCidrs"
        cluster.write_text(text.replace(written, 'public_access_cidrs=["0.0.0.0/0"] if', 1))

    code, doc = pr(repo, capsys, extra=both, own_code=True)
    assert code == 1
    (hit,) = found(doc, "eks-endpoint-restricted")
    assert hit["message"].startswith(BASE_SAYS) and "0.0.0.0/0" in hit["message"]


def test_a_base_that_cannot_judge_fails_the_change_closed() -> None:
    """The base's code refuses the stack (a key added in the same PR): nothing judged the weakened rules, so mandatory."""
    verdict = BaseVerdict("0" * 40, ("policies/gpu_platform_policies/rules/security.py",), problem="the base revision's code refused the stack: x")
    (only,) = base_only(verdict, [])
    assert only.level == "mandatory" and only.policy == "gate-code-changed" and "cannot be judged by the rules it changes" in only.message
