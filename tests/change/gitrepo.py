"""A temporary git repository made from the landed program and stacks, as a pull request's clone would hold them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

GIT = ["git", "-c", "user.name=gate test", "-c", "user.email=gate@example.invalid", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    """Run git in `repo`; its stdout."""
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_repo(root: Path) -> Path:
    """`infra/` and `stacks/` of this checkout committed on `main` and tagged `base`."""
    shutil.copytree(ROOT / "infra", root / "infra", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "stacks", root / "stacks")
    (root / ".gitignore").write_text(".cache/\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "landed stacks"], ["tag", "base"]):
        git(root, *args)
    return root
