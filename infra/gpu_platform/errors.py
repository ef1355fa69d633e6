"""User-facing configuration errors: one line per problem, never a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file: where, what, and what would be allowed."""

    file: str
    path: str
    message: str
    allowed: str = ""

    def __str__(self) -> str:
        line = f"{self.file}: {self.path or '<root>'}: {self.message}"
        return printable(f"{line}; {self.allowed}" if self.allowed else line)


def printable(text: str) -> str:
    """`text` with every non-printable character escaped, so one problem stays one line on a terminal or CI log.

    A key or value a file carries is echoed back in messages; a newline in it would split the line (and could
    start a forged `::error` workflow command), an escape sequence would drive the terminal, a bidirectional
    override would reorder what the reader sees. Python's str.isprintable (Unicode categories other than
    letters, marks, numbers, punctuation, symbols and the space) decides.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class ConfigError(Exception):
    """Raised at the edge when an input file is invalid; carries every problem found."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def edit_distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cost = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, prev2[j - 2] + 1)
            cur.append(cost)
        prev2, prev = prev, cur
    return prev[-1]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ' (did you mean X?)' for the closest choice, or '' when nothing is close."""
    # difflib finds candidates; the fewest typing mistakes picks among them (difflib alone ranks
    # 'us-west-1' above 'us-east-1' for 'us-esat-1', a single swapped pair of letters).
    close = difflib.get_close_matches(word, list(choices), n=5, cutoff=0.6)
    if not close:
        return ""
    best = min(close, key=lambda c: edit_distance(word, c))
    return f" (did you mean '{best}'?)"


def one_of(choices: Iterable[str], limit: int = 12) -> str:
    """Format an 'allowed' hint listing choices, shortened when long."""
    items = sorted(choices)
    shown = ", ".join(items[:limit])
    more = f", ... ({len(items)} in all)" if len(items) > limit else ""
    return f"allowed: {shown}{more}"


def safe_loader() -> type:
    """PyYAML's safe loader in its libyaml (C) build where installed, else the pure-Python one.

    Both resolve the same YAML 1.1 safe tags (pyyaml `yaml/cyaml.py` CSafeLoader = CParser +
    SafeConstructor + Resolver); the C parser reads a 4,000-resource stack file about 7x faster.
    """
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)
