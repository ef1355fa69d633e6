"""What the README and docs/ must say, in one place: generated tables, shown outputs, links, recipes.

The tests read the pages through these functions, and `scripts/refresh-docs.sh` (`python -m
tests.foundation.docs --write`) writes the generated parts with the same ones, so the two cannot disagree.
Anchors follow GitHub's heading slugs (github/cmark-gfm's `extensions/autolink` does not make them; GitHub's
renderer does: lower-case, drop everything but letters, digits, spaces, hyphens and underscores, spaces to
hyphens, `-1`, `-2` for repeats), the only renderer the links are written for.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BIN = ROOT / ".venv" / "bin"

# (page, marker, generator module and arguments): the tables written between <!-- marker:start/end -->.
GENERATED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("docs/configuration.md", "config-reference", ("gpu_platform.spec.reference",)),
    ("docs/policies.md", "policy-reference", ("gpu_platform_policies.reference",)),
    ("docs/policies.md", "change-reference", ("gpu_platform_policies.reference", "--change")),
    ("docs/benchmarks.md", "benchmark-results", ("benchmarks.results",)),
)
# <!-- output: COMMAND --> followed by a console block whose first line is `$ COMMAND`.
OUTPUT = re.compile(r"<!-- output: (?P<command>[^>]+?) -->\n```console\n\$ (?P=command)\n(?P<body>.*?)```\n", re.S)
RECIPE = re.compile(r"<!-- recipe: (?P<head>[^>]+?) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```\n", re.S)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")
NEEDS = "# needs:"


def pages() -> list[Path]:
    """The README and every page under docs/."""
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def block(text: str, marker: str) -> str:
    """The text between `<!-- marker:start -->` and `<!-- marker:end -->` (stripped)."""
    start = f"<!-- {marker}:start -->\n"
    if start not in text:
        raise KeyError(marker)
    return text.split(start, 1)[1].split(f"<!-- {marker}:end -->", 1)[0].strip()


def replace_block(text: str, marker: str, content: str) -> str:
    """`text` with the block between the markers replaced by `content`."""
    pattern = re.compile(rf"(<!-- {marker}:start -->\n).*?(<!-- {marker}:end -->)", re.S)
    return pattern.sub(lambda m: m.group(1) + content.strip() + "\n" + m.group(2), text)


def generate(module: tuple[str, ...]) -> str:
    """What a generator module prints (run as the refresh script runs it)."""
    done = subprocess.run([sys.executable, "-m", *module], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def command_env() -> dict[str, str]:
    """The environment the documented commands run in: the repository's .venv first on PATH."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def run_shown(command: str) -> str:
    """The stdout of a command a page shows the output of, run from the repository root."""
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=command_env(), capture_output=True, text=True, check=False)
    return done.stdout


def outputs(text: str) -> list[tuple[str, str]]:
    """(command, shown output) of every `<!-- output: COMMAND -->` block of a page."""
    return [(m["command"], m["body"]) for m in OUTPUT.finditer(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading text."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page defines: its headings' slugs, with GitHub's -1, -2 for repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        match = re.match(r"#{1,6} (.+)", line)
        if in_code or not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[str]:
    """Every relative link and image target of a page (outside code blocks and spans)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    targets = [m["target"] or m["image"] for m in LINK.finditer(prose)]
    return [t for t in targets if not re.match(r"[a-z]+:", t)]


@dataclass
class Recipe:
    """One README recipe: the stack edits it shows as YAML, then its shell lines, after the recipes it builds on."""

    name: str
    after: str | None = None
    edits: list[tuple[str, str, str]] = field(default_factory=list)  # (file, top-level key, YAML to paste under it)
    shell: list[str] = field(default_factory=list)

    def runnable(self) -> str:
        """The shell lines up to the first one that needs what a test machine lacks (credentials, hosts)."""
        lines: list[str] = []
        for line in self.shell:
            if NEEDS in line:
                break
            lines.append(line)
        return "\n".join(lines)


def recipes(text: str) -> dict[str, Recipe]:
    """The recipes of the README, by name, in order: `<!-- recipe: NAME [after OTHER] [yaml FILE KEY] -->`."""
    found: dict[str, Recipe] = {}
    for match in RECIPE.finditer(text):
        words = match["head"].split()
        name = words[0]
        recipe = found.setdefault(name, Recipe(name))
        if "after" in words:
            recipe.after = words[words.index("after") + 1]
        if "yaml" in words:
            at = words.index("yaml")
            recipe.edits.append((words[at + 1], words[at + 2], match["body"]))
        else:
            recipe.shell.extend(match["body"].splitlines())
    return found


def paste(stack: str, key: str, snippet: str) -> str:
    """A stack file's text with a YAML list snippet pasted at the end of the list under `config: key:`,
    indented as the stack files indent list items, as a user pastes it."""
    lines = stack.splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(rf"  {re.escape(key)}:\s*", line))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith("    ")):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    pasted = ["    " + line if line.strip() else line for line in snippet.rstrip("\n").splitlines()]
    return "\n".join([*lines[:end], *pasted, *lines[end:]]) + "\n"


def write() -> None:
    """Regenerate every generated table and shown output of the README and docs/."""
    for page, marker, module in GENERATED:
        path = ROOT / page
        path.write_text(replace_block(path.read_text(), marker, generate(module)))
    for path in pages():
        text = path.read_text()

        def fresh(match: re.Match[str]) -> str:
            command = match["command"]
            return f"<!-- output: {command} -->\n```console\n$ {command}\n{run_shown(command)}```\n"

        path.write_text(OUTPUT.sub(fresh, text))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.foundation.docs --write")
    write()
