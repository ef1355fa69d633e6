"""What `check` prints on stdout when its input is bad: the problems as findings, in the format asked for.

A CI job that reads `check --format json` or `--format github` must see why a stack was not checked,
not an empty stdout: each problem becomes a finding (rule `bad-input`, level mandatory, since nothing was
checked) with its file, key path and line, and the run exits 2 in every format. The one-line problems
also go to stderr, as for every command.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpu_platform.change.lines import found_line, key_line
from gpu_platform.errors import Problem, printable

BAD_INPUT = "bad-input"
_LINE = re.compile(r"line (\d+)")


def problem_line(problem: Problem, exact: bool = False) -> int | None:
    """1-based line of the stack file the problem is about (None when it names no key of the file).

    A problem that carries its own `line` (the validator may set it) wins; else the line of its key path
    (`gpu-platform:nodePools[0].x` under `config:`, a top-level key from the root), or the `line N` a YAML
    error names.
    """
    own = getattr(problem, "line", None)
    if isinstance(own, int) and own > 0:
        return own
    path = problem.path
    at = _LINE.fullmatch(path)
    if at:
        return int(at.group(1))
    if not path or path.startswith("-") or path == "<root>":
        return None
    try:
        text = Path(problem.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    under = "config" if ":" in path.split(".")[0] else None
    return (found_line if exact else key_line)(text, path, under=under)


def located(problem: Problem) -> str:
    """One problem as text with its line: `file:line: key path: what is wrong; what is allowed` (`file:line: ...` for a YAML error).

    The line is given only where the file holds the path's first key (or the problem names its line): a
    path into another document, or a key the file lacks entirely, keeps `file: key path: ...`.
    """
    line = problem_line(problem, exact=True)
    if line is None:
        return str(problem)
    if _LINE.fullmatch(problem.path) or not problem.path:
        return printable(f"{problem.file}:{line}: {problem.message}" + (f"; {problem.allowed}" if problem.allowed else ""))
    return str(Problem(f"{problem.file}:{line}", problem.path, problem.message, problem.allowed))


def findings(problems: Sequence[Problem]) -> list[dict[str, Any]]:
    """The problems as `check --format json` violations: policy, level, resource, message, file, line, keyPath (as a rule finding)."""
    out = []
    for p in problems:
        doc: dict[str, Any] = {"policy": BAD_INPUT, "level": "mandatory", "resource": "", "message": located(p), "file": p.file}
        if p.path and not p.path.startswith("line "):
            doc["keyPath"] = p.path
        line = problem_line(p)
        if line:
            doc["line"] = line
        out.append(doc)
    return out


def json_doc(stack: str, file: str, problems: Sequence[Problem]) -> dict[str, Any]:
    """The `check --format json` document of a stack that could not be checked (same keys as a checked one)."""
    return {
        "stack": stack,
        "file": file,
        "violations": findings(problems),
        "summary": {"mandatory": len(problems), "advisory": 0, "badInput": len(problems), "rulesRun": 0},
    }


def escape(text: str, prop: bool = False) -> str:
    """GitHub workflow-command escaping (data, or a property value): actions/toolkit `command.ts` escapeData/escapeProperty."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_annotations(problems: Sequence[Problem]) -> list[str]:
    """One `::error file=F,line=N,title=bad input::<problem>` per problem (line left out where there is none)."""
    lines = []
    for p in problems:
        line = problem_line(p)
        at = f",line={line}" if line else ""
        lines.append(f"::error file={escape(p.file, prop=True)}{at},title=bad input::{escape(str(p))}")
    return lines


def render(fmt: str, stack: str, file: str, problems: Sequence[Problem]) -> str:
    """The whole stdout of `check --format FMT` for bad input."""
    if fmt == "json":
        return json.dumps(json_doc(stack, file, problems), indent=2)
    if fmt == "github":
        return "\n".join([*github_annotations(problems), f"gpu-platform check: bad input, not checked: {len(problems)} problem(s)"])
    name = f"`{stack}`" if stack else "(no stack)"
    if fmt == "markdown":
        rows = [f"| `{p.file}` | {problem_line(p) or ''} | `{p.path or '<root>'}` | {_cell(p.message)}; {_cell(p.allowed)} |" for p in problems]
        top = [f"### gpu-platform check: {name}", "", f"Bad input, not checked: {len(problems)} problem(s).", ""]
        return "\n".join([*top, "| file | line | key | problem |", "|---|---|---|---|", *rows])
    head = f"Stack {stack}" if stack else "gpu-platform check"
    return f"{head}: bad input, not checked ({len(problems)} problem(s) on stderr)"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def print_bad_input(fmt: str, stack: str, file: str, problems: Sequence[Problem]) -> None:
    """Print `render(...)` on stdout (the CLI prints the problems on stderr itself)."""
    print(render(fmt, stack, file, problems))
