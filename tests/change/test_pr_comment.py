"""scripts/pr-comment.sh: the gate keeps one comment per pull request, found by its marker, edited in place.

`gh` is replaced by a fake that serves a pull request's comments from a JSON file, pages them as the
REST API does (30 per page), applies `--jq` with the real jq (what gh embeds is gojq, the same language)
and records each call, so the script's own choice of comment is what is tested.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpu_platform.change.report import MARKER
from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "pr-comment.sh"

FAKE_GH = r"""#!/usr/bin/env python3
import json, os, subprocess, sys
state_file = os.environ["FAKE_GH_STATE"]
state = json.load(open(state_file))
args = sys.argv[1:]
state["calls"].append(args)
assert args[0] == "api", args
method, jq, fields, path = "GET", None, {}, None
i = 1
while i < len(args):
    a = args[i]
    if a == "--method":
        method = args[i + 1]; i += 2
    elif a == "--jq":
        jq = args[i + 1]; i += 2
    elif a == "-F":
        k, v = args[i + 1].split("=", 1)
        fields[k] = open(v[1:]).read() if v.startswith("@") else v; i += 2
    elif a == "--paginate":
        i += 1
    else:
        path = a; i += 1
if method == "GET":
    pages = [state["comments"][n:n + 30] for n in range(0, len(state["comments"]), 30)] or [[]]
    for page in pages:  # gh applies --jq to each page
        out = subprocess.run(["jq", "-r", jq], input=json.dumps(page), capture_output=True, text=True, check=True).stdout
        sys.stdout.write(out)
elif method == "PATCH":
    cid = int(path.rsplit("/", 1)[1])
    next(c for c in state["comments"] if c["id"] == cid)["body"] = fields["body"]
else:
    state["comments"].append({"id": 1000 + len(state["comments"]), "body": fields["body"], "user": {"login": "github-actions[bot]"}})
json.dump(state, open(state_file, "w"))
"""


@pytest.fixture
def gh(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (scripts/system-deps.sh installs it)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gh"
    fake.write_text(FAKE_GH)
    fake.chmod(0o755)
    state = tmp_path / "state.json"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_GH_STATE": str(state), "GITHUB_REPOSITORY": "acme/gpu-platform"}
    return state, env


def post(
    state: Path, env: dict[str, str], comments: list[dict[str, object]], body: str, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], dict]:
    state.write_text(json.dumps({"comments": comments, "calls": []}))
    file = tmp_path / "comment.md"
    file.write_text(body)
    done = subprocess.run(["bash", str(SCRIPT), "42", str(file)], check=False, env=env, capture_output=True, text=True, timeout=60)
    return done, json.loads(state.read_text())


def comment(cid: int, body: str) -> dict[str, object]:
    return {"id": cid, "body": body, "user": {"login": "someone"}}


def test_first_run_creates_the_comment_once(gh: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    state, env = gh
    done, after = post(state, env, [comment(1, "LGTM")], f"{MARKER}\n### gate\nfirst", tmp_path)
    assert done.returncode == 0, done.stderr
    assert [c["body"] for c in after["comments"]] == ["LGTM", f"{MARKER}\n### gate\nfirst"]
    done, again = post(state, env, after["comments"], f"{MARKER}\n### gate\nsecond", tmp_path)
    assert done.returncode == 0 and "edited comment 1001" in done.stdout
    assert [c["body"] for c in again["comments"]] == ["LGTM", f"{MARKER}\n### gate\nsecond"], "edited, not a second comment"


def test_the_marker_comment_is_found_past_the_first_page_and_others_are_untouched(gh: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """Before: `gh pr comment --edit-last` edited whatever the bot said last; now only the comment that starts with the marker."""
    state, env = gh
    chatter = [comment(n, f"review {n}") for n in range(1, 45)]
    quoted = comment(50, f"> {MARKER}\n> why does the gate fail?")  # a person quoting the gate: not the gate's comment
    gate = comment(60, f"{MARKER}\nold report")
    later_bot = comment(70, "another bot's comment")
    done, after = post(state, env, [*chatter, quoted, gate, later_bot], f"{MARKER}\nnew report", tmp_path)
    assert done.returncode == 0, done.stderr
    bodies = {c["id"]: c["body"] for c in after["comments"]}
    assert bodies[60] == f"{MARKER}\nnew report"
    assert bodies[50] == quoted["body"] and bodies[70] == later_bot["body"] and len(bodies) == 47
    assert [c[:3] for c in after["calls"]][-1] == ["api", "--method", "PATCH"]


def test_a_body_without_the_marker_is_refused(gh: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    state, env = gh
    done, after = post(state, env, [], "### gate\nno marker", tmp_path)
    assert done.returncode == 2 and "does not start with" in done.stderr
    assert after["comments"] == []


def test_change_gate_writes_the_marker_first() -> None:
    text = (ROOT / "scripts" / "change-gate.sh").read_text()
    assert f"printf '{MARKER}\\n' > \"$out\"" in text
    workflow = (ROOT / ".github" / "workflows" / "pull-request.yml").read_text()
    assert 'scripts/pr-comment.sh "$PR" "$RUNNER_TEMP/change-gate.md"' in workflow and "--edit-last" not in workflow


def test_a_report_over_githubs_limit_is_cut_and_says_so(gh: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """GitHub refuses a comment over 65,536 characters; a huge change (a new stack) still gets its comment."""
    state, env = gh
    done, after = post(state, env, [], f"{MARKER}\n" + "| row |\n" * 12000, tmp_path)
    assert done.returncode == 0, done.stderr
    body = after["comments"][0]["body"]
    assert len(body) <= 65536 and body.startswith(MARKER) and "the job summary has the whole report" in body
