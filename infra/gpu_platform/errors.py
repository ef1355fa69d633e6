"""User-facing configuration errors: one line per problem, never a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file: where, what, and what would be allowed."""

    file: str
    path: str
    message: str
    allowed: str = ""

    def __str__(self) -> str:
        line = f"{self.file}: {self.path or '<root>'}: {self.message}"
        return f"{line}; {self.allowed}" if self.allowed else line


class ConfigError(Exception):
    """Raised at the edge when an input file is invalid; carries every problem found."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ' (did you mean X?)' for the closest choice, or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def one_of(choices: Iterable[str], limit: int = 12) -> str:
    """Format an 'allowed' hint listing choices, shortened when long."""
    items = sorted(choices)
    shown = ", ".join(items[:limit])
    more = f", ... ({len(items)} in all)" if len(items) > limit else ""
    return f"allowed: {shown}{more}"
