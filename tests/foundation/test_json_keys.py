"""Every command's JSON speaks camelCase, like the Pulumi wire inputs and Kubernetes objects it sits beside.

One walk over the JSON of every command on prod (plan, render, check, check --all, check --base, diff,
capacity, capacity plan, explain); a snake_case key fails the test with the command and the key's path.
Documents someone else owns are not ours to rename and are skipped: a resource's recorded inputs (Helm
values such as Alertmanager's `send_resolved` are the chart's keys), and the old and new values a change
report quotes from them or from the stack file (a `versions` override copies the lockfile's snake_case keys).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.cli import main
from tests.change.gitrepo import git, make_repo
from tests.conftest import ROOT

SNAKE = re.compile(r"[a-z0-9]_[a-z0-9]")
# paths of documents whose keys belong to upstream APIs and charts
UPSTREAM_OWNED = (
    re.compile(r"^\.resources\[\]\.inputs(\.|$)"),
    re.compile(r"^(\.change)?\.stackKeys\[\]\.(before|after)(\.|$)"),
    re.compile(r"^(\.change)?\.changes\[\]\.values\[\]\.(before|after)(\.|$)"),
)
AMI = "1.35.7-20260812"
AMI_OVERRIDE = f"""  gpu-platform:versions:
    eks: {{ami_release_version: "{AMI}"}}
    support: {{eks_ami: {{"{AMI}": {{ends: "2027-03-27", source: "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"}}}}}}
"""


def snake_keys(value: Any, path: str = "") -> Iterator[str]:
    """Paths (`.pools[].monthly_cost`) of snake_case keys in `value`, outside upstream-owned documents."""
    if any(p.match(path) for p in UPSTREAM_OWNED):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}"
            if SNAKE.search(str(key)):
                yield here
            yield from snake_keys(item, here)
    elif isinstance(value, list):
        for item in value:
            yield from snake_keys(item, path + "[]")


def test_the_walk_finds_snake_case_and_skips_upstream_inputs() -> None:
    doc = {
        "pools": [{"monthly_cost": 1, "gpuModel": "L4"}],
        "resources": [{"inputs": {"send_resolved": True}, "type": "t"}],
        "stackKeys": [{"key": "v", "after": {"eks": {"ami_release_version": "1"}}, "some_key": 1}],
    }
    assert list(snake_keys(doc)) == [".pools[].monthly_cost", ".stackKeys[].some_key"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The landed stacks committed as `base`, then prod's AMI bumped in the working tree (a change with findings)."""
    root = make_repo(tmp_path_factory.mktemp("camel"))
    prod = root / "stacks/Pulumi.prod.yaml"
    prod.write_text(prod.read_text().replace("  gpu-platform:tags:", AMI_OVERRIDE + "  gpu-platform:tags:"))
    git(root, "commit", "-qam", "bump the AMI")
    return root


def commands(repo: Path, out: Path) -> dict[str, list[str]]:
    prod = str(ROOT / "stacks/Pulumi.prod.yaml")
    changed = str(repo / "stacks/Pulumi.prod.yaml")
    return {
        "plan": ["plan", "--config", prod],
        "render": ["render", "--config", prod, "--out", str(out)],
        "check": ["check", "--config", prod],
        "check --all": ["check", "--all"],
        "check --base": ["check", "--config", changed, "--base", "base"],
        "diff --base": ["diff", "--config", changed, "--base", "base"],
        "capacity": ["capacity", "--config", prod],
        "capacity plan": ["capacity", "plan", "--config", prod, "--demand", str(ROOT / "examples/demand/teams.yaml")],
        "explain": ["explain", "--config", prod, "--workload", str(ROOT / "examples/workloads/train-efa-2node.yaml")],
        "versions": ["versions", "--config", prod, "--today", "2026-12-28"],
    }


def test_every_commands_json_is_camel_case(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GPU_PLATFORM_ROOT", str(ROOT))
    found: dict[str, list[str]] = {}
    for name, argv in commands(repo, tmp_path / "render").items():
        code = main([*argv, "--format", "json"])
        out = capsys.readouterr()
        assert code in (0, 1), f"{name}: exit {code}: {out.err}"
        bad = sorted(set(snake_keys(json.loads(out.out))))
        if bad:
            found[name] = bad
    assert found == {}, f"snake_case keys in JSON output: {found}"
