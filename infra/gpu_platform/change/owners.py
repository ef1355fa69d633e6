"""Who must approve a change to the gate itself: the repository's CODEOWNERS, read as GitHub reads it.

GitHub docs, "About code owners": the file is `.github/CODEOWNERS` (else `CODEOWNERS` or `docs/CODEOWNERS`);
each line is a pattern and owners; the **last** matching pattern wins; patterns follow gitignore rules (a
leading `/` anchors at the root, a trailing `/` matches a folder and everything below it, `*` any run of
characters but `/` (so `docs/*` owns docs' own files, not docs/a/b.md), `**` across folders, a pattern
without `/` matches at any depth). The gate names the
owners; branch protection ("Require review from Code Owners") is what enforces their approval.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

CODEOWNERS_PLACES = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
# What the gate is made of: its rules, and how CI runs it. A change here changes the judge, not the judged.
# Pulumi.yaml too: its project-level config defaults reach every stack that leaves a key unset. The component
# behaviour the rules reproduce is rule code (change.base_rules); the commands that run the rules are the gate.
GATE_PATHS = (
    "policies/",
    "infra/gpu_platform/behaviour/",
    "infra/gpu_platform/aws/golden_image.py",
    "infra/gpu_platform/change/",
    "infra/gpu_platform/commands/check.py",
    "infra/gpu_platform/commands/change.py",
    ".github/",
    ".ci/",
    "scripts/change-gate.sh",
    "scripts/pr-comment.sh",
    "Pulumi.yaml",
)


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out = ""
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif body.startswith("**", i):
            out += ".*"
            i += 2
        elif body[i] == "*":
            out += "[^/]*"
            i += 1
        elif body[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(body[i])
            i += 1
    prefix = "^" if anchored else "^(?:.*/)?"
    # `docs/` or `apps/github` own everything below them; `docs/*` only the files directly in docs.
    below = "(?:/.*)?" if pattern.endswith("/") or "*" not in body.rsplit("/", 1)[-1] else ""
    return re.compile(prefix + out + below + "$")


def read_codeowners(root: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(pattern, owners) in file order from the first CODEOWNERS GitHub would read ([] when there is none)."""
    for place in CODEOWNERS_PLACES:
        path = root / place
        if path.is_file():
            rules = []
            for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
                line = raw.split("#", 1)[0].strip()
                if line:
                    pattern, *owners = line.split()
                    rules.append((pattern, tuple(owners)))
            return rules
    return []


def owners_of(path: str, rules: list[tuple[str, tuple[str, ...]]]) -> tuple[str, ...]:
    """The owners of a repository-relative path: the last matching pattern's (none: nobody is required)."""
    found: tuple[str, ...] = ()
    for pattern, owners in rules:
        if _regex(pattern).match(path):
            found = owners
    return found
