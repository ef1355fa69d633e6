"""Pull requests that try to weaken the gate that judges them, run through `check --base` as CI runs it.

Each commits a base in a temporary repository (the landed program, stacks, a rule file and CODEOWNERS),
makes the pull request's change, and reads the verdict: the change is judged with the base's gate settings,
the loosening and any change to the gate's own code is a mandatory finding naming the code owners.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gpu_platform import cli
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
    rules = root / "policies" / "gpu_platform_policies" / "rules"
    rules.mkdir(parents=True)
    shutil.copy(ROOT / "policies" / "gpu_platform_policies" / "rules" / "security.py", rules / "security.py")
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


def pr(repo: Path, capsys: pytest.CaptureFixture[str], *edits: Callable[[str], str], extra: Callable[[Path], None] | None = None) -> tuple[int, dict]:
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
    code = cli.main(["check", "--config", str(path), "--base", "base", "--format", "json"])
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


def _gate_script_repo(tmp_path: Path) -> Path:
    """A repository with the stacks, the gate script and a stand-in `gpu-platform` that passes every stack."""
    root = make_repo(tmp_path / "repo")
    (root / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "change-gate.sh", root / "scripts" / "change-gate.sh")
    stub = root / ".venv" / "bin" / "gpu-platform"
    stub.parent.mkdir(parents=True)
    stub.write_text("#!/usr/bin/env bash\nexit 0\n")
    stub.chmod(0o755)
    return root


def test_a_deleted_stack_file_is_named_and_fails_the_gate(tmp_path: Path) -> None:
    """Every stack file that exists is judged; one the change deletes was judged by nothing before."""
    root = _gate_script_repo(tmp_path)
    script = ["bash", str(root / "scripts" / "change-gate.sh"), "base", str(tmp_path / "comment.md")]
    clean = subprocess.run(script, cwd=root, capture_output=True, text=True, check=False)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    git(root, "rm", "-q", PROD)
    done = subprocess.run(script, cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert f"::error file={PROD},title=stack-file-deleted::" in done.stdout
    assert f"### {PROD} deleted" in (tmp_path / "comment.md").read_text()


def test_turning_kueue_off_raising_a_tier_and_sharing_a_role_are_each_named(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    research_role = '"arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_ResearchScientist_5e0b7c3a1f9d2e84"'
    training_role = '"arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_LlmTraining_8a41d2c7e9b05f13"'
    code, doc = pr(
        repo,
        capsys,
        lambda t: t.replace("    kueue:\n      enabled: true", "    kueue:\n      enabled: false", 1),
        lambda t: t.replace("priority: experiments", "priority: inference", 1),
        lambda t: t.replace(research_role, training_role, 1),
    )
    assert code == 1
    assert found(doc, "scheduler-removed", "turns Kueue off") and found(doc, "tenant-tier-raised", "experiments -> inference")
    assert found(doc, "tenant-role-shared", "foundation-research, llm-training")


@pytest.mark.parametrize(
    ("trailer", "says"),
    [
        ("all", "has 1 part(s)"),
        ("all 2026-12-05T02:00Z/6h OPS-4711", "`all` covers nothing in particular"),
        ("train-h100-reserved 2026-12-05 OPS-4711", "window '2026-12-05' is not <start>/<end> in UTC"),
        ("train-h100-reserved 2026-12-05T08:00Z/2026-12-05T02:00Z OPS-4711", "does not end after it starts"),
        ("train-h100-reserved 2026-12-05T02:00Z/400h OPS-4711", "within 7 days"),
        ("train-h100-reserved 2026-12-05T02:00Z/6h later", "ticket 'later' is not KEY-123"),
    ],
)
def test_a_maintenance_trailer_that_says_too_little_is_refused(repo: Path, capsys: pytest.CaptureFixture[str], trailer: str, says: str) -> None:
    """A bare `GPU-Maintenance: all` silenced every capacity rule; a trailer now names its pools, window and ticket."""
    git(repo, "reset", "-q", "--hard", "base")
    git(repo, "clean", "-qfd")
    git(repo, "commit", "-q", "--allow-empty", "-m", f"replace the reserved nodes\n\nGPU-Maintenance: {trailer}")
    capsys.readouterr()
    code = cli.main(["check", "--config", str(repo / PROD), "--base", "base"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "GPU-Maintenance" in err[0] and says in err[0] and "allowed: GPU-Maintenance: <pool>" in err[0], err[0]


def test_a_strict_project_default_removed_from_pulumi_yaml_is_a_loosening(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The base's Pulumi.yaml holds the project default `policy: {enforcement: {spot-exposure: mandatory}}` (prod's own
    block removed, so the default applies, as pulumi's mergeConfig does). A PR deletes that default: the base read with
    its own Pulumi.yaml had spot-exposure mandatory, so the change is a loosening even though no stack file changed."""
    root = make_repo(tmp_path / "repo")
    project = (ROOT / "Pulumi.yaml").read_text()
    strict = project.replace(
        "  policy:\n    type: object\n    default: {}\n",
        "  policy:\n    type: object\n    default: {enforcement: {documentation-cidr: advisory, spot-exposure: mandatory}}\n",
    )
    assert strict != project
    (root / "Pulumi.yaml").write_text(strict)
    stack = root / PROD
    stack.write_text(stack.read_text().replace(BASE_POLICY, "", 1))
    for args in (["add", "-A"], ["commit", "-qm", "strict project default"], ["tag", "-f", "base"]):
        git(root, *args)
    (root / "Pulumi.yaml").write_text(
        project.replace(
            "  policy:\n    type: object\n    default: {}\n",
            "  policy:\n    type: object\n    default: {enforcement: {documentation-cidr: advisory}}\n",
        )
    )
    capsys.readouterr()
    code = cli.main(["check", "--config", str(stack), "--base", "base", "--format", "json"])
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert code == 1, out.err
    assert found(doc, "gate-loosened", "spot-exposure mandatory -> advisory"), [v["message"] for v in doc["violations"]][:5]
