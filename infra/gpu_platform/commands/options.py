"""The conventions every `gpu-platform` command shares: one `--format` vocabulary and camelCase JSON.

`--format` takes the same word for the same thing everywhere: `text` for people, `json` for machines,
`markdown` for a pull-request comment, `github` for workflow annotations. Each command offers the ones
it can print (FORMATS). The word `table` (what `plan` and `capacity` used to call their text output)
is still accepted, with one deprecation line on stderr, so scripts written for it keep working.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from typing import Any

# command -> the formats it prints, its default first. `capacity plan` shares `capacity`'s option.
FORMATS: dict[str, tuple[str, ...]] = {
    "plan": ("text", "json"),
    "render": ("text", "json"),
    "check": ("text", "json", "markdown", "github"),
    "diff": ("text", "json", "markdown"),
    "capacity": ("text", "json", "markdown"),
    "explain": ("text", "json"),
    "versions": ("text", "json", "markdown"),
}
# old spelling -> the word that replaced it
DEPRECATED_FORMATS: dict[str, str] = {"table": "text"}


def format_type(command: str) -> Any:
    """The argparse `type` of a command's `--format`: maps a deprecated word to its new one, saying so on stderr."""

    def parse(value: str) -> str:
        new = DEPRECATED_FORMATS.get(value)
        if new is None or new not in FORMATS[command]:
            return value
        print(f"gpu-platform {command}: --format {value} is deprecated; use --format {new} (the same output)", file=sys.stderr)
        return new

    return parse


def add_format(p: argparse.ArgumentParser, command: str, suppress: bool = False) -> None:
    """`--format` with the command's choices; `suppress` (a nested subcommand) keeps a value given before it."""
    choices = FORMATS[command]
    default = argparse.SUPPRESS if suppress else choices[0]
    p.add_argument(
        "--format",
        type=format_type(command),
        choices=choices,
        default=default,
        help=f"output: {', '.join(choices)} (default {choices[0]})",
    )


_BOUNDARY = re.compile(r"_([a-z0-9])")


def camel(name: str) -> str:
    """`monthly_cost` -> `monthlyCost` (a name that is already camelCase is unchanged)."""
    return _BOUNDARY.sub(lambda m: m.group(1).upper(), name)


def camel_keys(value: Any) -> Any:
    """`value` with every mapping key camelCased at every depth: for our own records (dataclasses' asdict).

    Never apply it to a document whose keys someone else owns (Kubernetes objects, Helm values).
    """
    if isinstance(value, Mapping):
        return {camel(str(k)): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [camel_keys(v) for v in value]
    return value
