"""A change to the gate's own rules is judged by the base revision's rules as well as its own.

A pull request that weakens a rule under `policies/` (or the component behaviour the rules reproduce,
`infra/gpu_platform/behaviour/`) and, in the same diff, makes the change that rule would have refused
would otherwise be judged by the weakened rule. So when such code changed, `check --base` runs the
**base revision's** `check --base` over the **working tree's** plan: `git archive <base> infra policies`
into a temporary directory, a Python process of the same virtualenv with that tree first on PYTHONPATH
(the editable install's finder comes after PYTHONPATH on `sys.meta_path`), in the repository, with the
working tree's plan handed over in a file named by `GPU_PLATFORM_JUDGED_PLAN`. The base's own loader
reads the stack file, its own strictness, change rules and state rules judge; only the resources are
the working tree's, because the program (`infra/`) is the thing being judged, not the judge.

A base that predates `GPU_PLATFORM_JUDGED_PLAN` plans the stack with its own program instead (still the
base's rules, over the base program's resources). A base whose loader refuses the working tree's stack
(a key added in the same pull request) cannot judge it: that is said, and the change fails closed.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Where the rules live: a change under these is a change to the judge.
RULE_CODE = ("policies/", "infra/gpu_platform/behaviour/")
JUDGED_PLAN = "GPU_PLATFORM_JUDGED_PLAN"
TIMEOUT_S = 600
_MAIN = "import sys\nfrom gpu_platform import cli\nsys.exit(cli.main(sys.argv[1:]))\n"


def rule_code_changes(gate_changes: Sequence[str]) -> tuple[str, ...]:
    """The changed paths that are rule code (the rules, or the behaviour they reproduce)."""
    return tuple(p for p in gate_changes if p.startswith(RULE_CODE))


def judged_plan() -> list[dict[str, Any]] | None:
    """In the base's process: the working tree's plan to judge (None: plan the stack with this program)."""
    file = os.environ.get(JUDGED_PLAN)
    if not file:
        return None
    return list(json.loads(Path(file).read_text(encoding="utf-8")))


@dataclass
class BaseVerdict:
    """What the base revision's rules said of the change: their violations, or why they could not judge it."""

    commit: str
    changed: tuple[str, ...]  # the rule code the change touches
    violations: list[dict[str, Any]] = field(default_factory=list)  # `check --format json` violations
    problem: str = ""  # why the base's rules could not judge ("" when they did)

    @property
    def mandatory(self) -> int:
        """Mandatory violations the base's rules found."""
        return sum(v.get("level") == "mandatory" for v in self.violations)


def judge(root: Path, commit: str, stack_file: Path, after: list[dict[str, Any]], extra_args: Sequence[str], changed: tuple[str, ...]) -> BaseVerdict:
    """Run the base revision's `check --base <commit> --format json` over `after`, the working tree's plan."""
    verdict = BaseVerdict(commit, changed)
    listing = subprocess.run(["git", "ls-tree", "--name-only", commit, "infra", "policies"], cwd=root, capture_output=True, text=True, check=False)
    paths = [p for p in listing.stdout.split() if p in ("infra", "policies")]
    if "infra" not in paths:
        verdict.problem = f"the base revision {commit[:12]} has no infra/ to run"
        return verdict
    with tempfile.TemporaryDirectory(prefix="gpu-platform-base-rules-") as tmp:
        archive = subprocess.run(["git", "archive", "--format=tar", commit, *paths], cwd=root, capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        plan = Path(tmp) / "judged-plan.json"
        plan.write_text(json.dumps(after), encoding="utf-8")
        path = os.pathsep.join(filter(None, [f"{tmp}/infra", f"{tmp}/policies", os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path, JUDGED_PLAN: str(plan), "PYTHONDONTWRITEBYTECODE": "1"}
        args = [sys.executable, "-c", _MAIN, "check", "--config", str(stack_file.resolve()), "--base", commit, "--format", "json", *extra_args]
        try:
            done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            verdict.problem = f"the base revision's rules did not finish in {TIMEOUT_S} s"
            return verdict
    if done.returncode not in (0, 1):
        why = next((ln.strip() for ln in done.stderr.splitlines() if ln.strip()), f"exit code {done.returncode}")
        verdict.problem = f"the base revision's code refused the stack: {why.replace(tmp + '/', '')}"
        return verdict
    try:
        verdict.violations = list(json.loads(done.stdout)["violations"])
    except (ValueError, KeyError, TypeError):
        verdict.problem = "the base revision's code printed no `check --format json` document"
    return verdict
