"""`diff --base` output and `check --base` bad input: one line, exit 2, never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpu_platform.cli import main
from gpu_platform_policies.reference import change_markdown
from tests.change.gitrepo import git, make_repo
from tests.conftest import ROOT, stack_path, without_lines

PROD = "stacks/Pulumi.prod.yaml"


def test_unknown_base_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "repo")
    assert main(["check", "--config", str(repo / PROD), "--base", "no-such-branch"]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"{repo / PROD}: --base: unknown git revision 'no-such-branch'; allowed: a branch, tag or commit of this clone (CI: fetch-depth 0)\n"
    )


def test_stack_outside_git_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    stack.write_text(stack_path("prod").read_text())
    assert main(["diff", "--config", str(stack), "--base", "main"]) == 2
    assert capsys.readouterr().err == f"{stack}: --base: the stack file is not in a git repository; allowed: a stack file of a git clone\n"


@pytest.mark.parametrize("option", ["--usage", "--demand"])
def test_usage_and_demand_need_base(option: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["check", "--config", str(stack_path("dev")), option, str(tmp_path / "x.json")]) == 2
    assert capsys.readouterr().err.endswith(f"{option}: only means something with --base; allowed: check --base GIT_REF {option} FILE\n")


def test_base_and_all_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--all", "--base", "main"]) == 2
    assert "--base: cannot be combined with --all" in capsys.readouterr().err


def test_diff_prints_replacements_and_gpus_per_tier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "repo")
    stack = repo / PROD
    ondemand = "- name: train-h100-ondemand\n      workloadClass: training\n      capacity: on-demand\n      instanceTypes: [p5.48xlarge]\n"
    text = stack.read_text().replace(
        ondemand + "      scaling: {min: 0, desired: 0, max: 2}", ondemand + "      scaling: {min: 0, desired: 0, max: 4}"
    )
    text = text.replace("instanceTypes: [p5.48xlarge]\n      scaling: {min: 4", "instanceTypes: [p4de.24xlarge]\n      scaling: {min: 4", 1)
    stack.write_text(text)
    assert main(["diff", "--config", str(stack), "--base", "base", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    replaced = {c["name"]: c for c in doc["changes"] if c["action"] == "replace"}
    assert replaced["pool-train-h100-reserved-ng"]["replaceFields"] == ["instanceTypes"]
    scaled = next(c for c in doc["changes"] if c["name"] == "pool-train-h100-ondemand-ng")
    # Node repair stops above half the group at its largest (gpu_platform.aws.node_repair): it scales with maxSize.
    assert scaled["action"] == "update" and "rollsNodes" not in scaled
    assert scaled["fields"] == ["nodeRepairConfig.maxUnhealthyNodeThresholdCount", "scalingConfig.maxSize"]
    assert {"key": "scalingConfig.maxSize", "before": 2, "after": 4} in scaled["values"]
    gpus = {(g["workloadClass"], g["tier"], g["gpuModel"]): (g["before"], g["after"]) for g in doc["gpus"]}
    assert gpus[("training", "on-demand", "H100-80GB")] == (16, 32)
    assert gpus[("training", "reserved", "H100-80GB")] == (32, 0) and gpus[("training", "reserved", "A100-80GB")] == (0, 32)
    assert main(["diff", "--config", str(stack), "--base", "base", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| training | on-demand | H100-80GB | 16 | 32 | +16 |" in md
    assert '| replace | `pool-train-h100-reserved-ng` | `aws:eks/nodeGroup:NodeGroup` | instanceTypes: ["p5.48xlarge"] → ["p4de.24xlarge"] |' in md


def test_policy_reference_lists_every_change_rule() -> None:
    reference = (ROOT / "docs" / "policies.md").read_text()
    table = re.search(r"<!-- change-reference:start -->\n(.*?)<!-- change-reference:end -->", reference, re.S)
    assert table is not None and table.group(1).strip() == change_markdown().strip(), "regenerate: scripts/refresh-docs.sh"


def test_bad_working_tree_stack_is_bad_input_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "repo")
    stack = repo / PROD
    stack.write_text(stack.read_text().replace("  gpu-platform:tags:", "  gpu-platform:tagz: {a: b}\n  gpu-platform:tags:"))
    assert main(["check", "--config", str(stack), "--base", "base", "--format", "json"]) == 2
    out = capsys.readouterr()
    assert without_lines(out.err).startswith(f"{stack}: gpu-platform:tagz: unknown key 'tagz' (did you mean 'tags'?)") and "Traceback" not in out.err
    assert len(out.err.splitlines()) == 1


def test_base_whose_stack_does_not_plan_names_the_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "repo")
    stack = repo / PROD
    good = stack.read_text()
    stack.write_text(good.replace("  gpu-platform:tags:", "  gpu-platform:tagz: {a: b}\n  gpu-platform:tags:"))
    git(repo, "commit", "-qam", "a broken stack lands")
    git(repo, "tag", "broken")
    stack.write_text(good)
    assert main(["diff", "--config", str(stack), "--base", "broken"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{PROD}@broken: --base: the base revision's stack does not plan: {PROD}: gpu-platform:tagz: unknown key 'tagz'"), err


def test_a_deleted_pool_says_what_it_was_built_from(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A reviewer sees why a node group goes: the base's stack key it came from, in JSON, text and Markdown."""
    repo = make_repo(tmp_path / "repo")
    stack = repo / "stacks/Pulumi.dev.yaml"
    text = stack.read_text()
    pool = "    - name: dev-l4-ondemand\n      workloadClass: development\n      capacity: on-demand\n      instanceTypes: [g6.xlarge]\n"
    pool += "      scaling: {min: 0, desired: 0, max: 2}\n      sharing: {mode: time-slicing, replicas: 4}\n"
    assert pool in text
    text = text.replace(pool, "").replace("        - {pool: dev-l4-ondemand, gpus: 1}\n", "")
    stack.write_text(text)
    assert main(["diff", "--config", str(stack), "--base", "base", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    gone = next(c for c in doc["changes"] if c["name"] == "pool-dev-l4-ondemand-ng")
    assert gone["action"] == "delete" and gone["source"] == "gpu-platform:nodePools[2]"
    assert any(k["key"] == "gpu-platform:nodePools[dev-l4-ondemand]" and "after" not in k for k in doc["stackKeys"])
    assert main(["diff", "--config", str(stack), "--base", "base", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    row = "| delete | `pool-dev-l4-ondemand-ng` | `aws:eks/nodeGroup:NodeGroup` | built from gpu-platform:nodePools[2] of the base, which this change"
    assert row in md
    assert main(["diff", "--config", str(stack), "--base", "base"]) == 0
    assert "delete   pool-dev-l4-ondemand-ng  (built from gpu-platform:nodePools[2] of the base)" in capsys.readouterr().out
