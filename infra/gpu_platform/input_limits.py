"""Bounds on what a file may make the program build, checked before any object is built.

A hostile or careless YAML or JSON file can cost far more than its size: an alias bomb (nine anchors of
nine aliases each) is a few hundred bytes that expand to hundreds of millions of nodes in every walk of
the data; 100,000 nested brackets overflow the C stack of PyYAML's composer (`_yaml.pyx` `_compose_node`
recurses once per level) and kill the process. So every reader of user input first measures the text:

- size, from the file's length before it is read;
- YAML: the event stream of libyaml's parser (`yaml.parse`, which keeps its own heap stack and builds
  nothing), stopping at the first event past the nesting limit or the expanded-node budget, where an
  alias counts as the whole node it names, as every consumer of the data will walk it;
- JSON: nesting depth from a scan of brackets outside strings (CPython's json scanner recurses per level).

Each refusal is one line naming the file, the line and what is allowed.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpu_platform.errors import ConfigError, Problem, safe_loader


@dataclass(frozen=True)
class Limits:
    """What one kind of input may hold."""

    max_bytes: int
    max_depth: int = 64
    max_nodes: int = 2_000_000
    """Nodes of the document with every alias expanded (a scalar, a mapping or a sequence each count one)."""


STACK_FILE = Limits(max_bytes=16 * 2**20, max_nodes=2_000_000)
WORKLOAD = Limits(max_bytes=4 * 2**20, max_nodes=200_000)
DEMAND = Limits(max_bytes=256 * 2**20, max_nodes=20_000_000)
MANIFEST = Limits(max_bytes=64 * 2**20, max_depth=8)


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def not_a_file(path: Path) -> str | None:
    """Why `path` cannot be read as an input file, or None for a regular file (symlinks followed).

    Missing, or a FIFO, device or socket: reading one could block or never end.
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return "file not found"
    if stat.S_ISREG(mode):
        return None
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a file"
    )
    return f"is {kind}, not a regular file"


def read_regular(path: Path, limits: Limits, allowed: str, encoding: str = "utf-8") -> str:
    """A regular file's text, capped (read_capped); a missing file, FIFO, device or socket is refused before it is opened."""
    why = not_a_file(path)
    if why is not None:
        raise ConfigError([Problem(str(path), "", why, allowed)])
    return read_capped(path, limits, allowed, encoding)


def check_size(path: Path, limits: Limits, allowed: str) -> None:
    """Refuse a file larger than the limit before reading it (a special file, e.g. /dev/zero, has no size: read it capped)."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the reader reports a missing or unreadable file in its own words
    if size > limits.max_bytes:
        raise ConfigError([Problem(str(path), "", f"{size} bytes, more than the {_mib(limits.max_bytes)} this input may hold", allowed)])


def read_capped(path: Path, limits: Limits, allowed: str, encoding: str = "utf-8") -> str:
    """The file's text, refused past `max_bytes` even where its size is not known in advance (pipes, devices)."""
    check_size(path, limits, allowed)
    file = str(path)
    try:
        with path.open("rb") as f:
            data = f.read(limits.max_bytes + 1)
    except OSError as exc:
        raise ConfigError([Problem(file, "", f"cannot be read: {exc.strerror}", allowed)]) from None
    if len(data) > limits.max_bytes:
        raise ConfigError([Problem(file, "", f"more than the {_mib(limits.max_bytes)} this input may hold", allowed)])
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(file, "", f"not UTF-8 text (byte {exc.start})", allowed)]) from None


def check_yaml(text: str, file: str, limits: Limits, allowed: str) -> None:
    """Refuse YAML nested deeper than `max_depth` or expanding to more than `max_nodes`; syntax errors are left to the reader."""
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise ConfigError([Problem(file, "", f"more than the {_mib(limits.max_bytes)} this input may hold", allowed)])
    anchors: dict[str, int] = {}
    sizes: list[int] = [0]  # expanded nodes so far, per open collection (the outermost is the stream)
    names: list[str | None] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=safe_loader()):
            line = event.start_mark.line + 1 if event.start_mark is not None else 0
            if isinstance(event, yaml.CollectionStartEvent):
                if len(names) >= limits.max_depth:
                    why = f"nested deeper than {limits.max_depth} levels"
                    raise ConfigError([Problem(file, f"line {line}", why, f"{allowed}, at most {limits.max_depth} levels deep")])
                names.append(event.anchor)
                sizes.append(0)
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                grown = 1 + sizes.pop()
                anchor = names.pop()
            elif isinstance(event, yaml.ScalarEvent):
                grown, anchor = 1, event.anchor
            elif isinstance(event, yaml.AliasEvent):
                grown, anchor = anchors.get(str(event.anchor), 1), None
            else:
                continue
            if anchor is not None:
                anchors[anchor] = grown
            sizes[-1] += grown
            if not isinstance(event, yaml.CollectionEndEvent):
                total += grown
            if total > limits.max_nodes or sizes[-1] > limits.max_nodes:
                why = f"expands to more than {limits.max_nodes:,} nodes (aliases count as the node they name)"
                raise ConfigError([Problem(file, f"line {line}", why, f"{allowed}, without alias chains that multiply")])
    except yaml.YAMLError:
        return  # the reader reports the syntax error with its own line and words


def check_json(text: str, file: str, limits: Limits, allowed: str) -> None:
    """Refuse JSON nested deeper than `max_depth` (brackets outside strings), before `json.loads` recurses into it."""
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise ConfigError([Problem(file, "", f"more than the {_mib(limits.max_bytes)} this input may hold", allowed)])
    if text.count("[") + text.count("{") <= limits.max_depth:
        return
    depth, line = 0, 1
    for m in _JSON_TOKENS.finditer(text):
        token = m.group()
        if token == "\n":
            line += 1
        elif token in "[{":
            depth += 1
            if depth > limits.max_depth:
                why = f"nested deeper than {limits.max_depth} levels"
                raise ConfigError([Problem(file, f"line {line}", why, f"{allowed}, at most {limits.max_depth} levels deep")])
        elif token in "]}":
            depth -= 1


# A JSON string (skipped whole, so brackets inside it do not count), a bracket or a newline.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}\n]')
