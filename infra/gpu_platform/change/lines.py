"""The line of a stack key path (`gpu-platform:nodePools[0].instanceTypes`) in a stack file, from YAML node marks."""

from __future__ import annotations

import re
from functools import lru_cache

import yaml

_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def segments(path: str) -> list[str | int]:
    """`gpu-platform:nodePools[0].scaling.min` -> ['gpu-platform:nodePools', 0, 'scaling', 'min']."""
    return [int(index) if index else name for name, index in _SEGMENT.findall(path)]


def key_line(text: str, path: str, under: str | None = "config") -> int | None:
    """1-based line of the deepest existing node of `path` under `config:` (its key where it has one).

    `under=None` reads `path` from the document's root (the lockfile).

    A key the change removed points at its nearest surviving parent, so the finding still lands in the file.
    """
    found = _walk(text, path, under)
    return None if found is None else found[0]


def found_line(text: str, path: str, under: str | None = "config") -> int | None:
    """Like key_line, but None unless at least the path's first key is in the file (a path into another document is no line)."""
    found = _walk(text, path, under)
    return found[0] if found is not None and found[1] > 0 else None


def _walk(text: str, path: str, under: str | None) -> tuple[int, int] | None:
    """(line of the deepest existing node of `path`, how many of its segments exist), or None when `under` is missing."""
    root = _composed(text)
    node = root if under is None or root is None else _child(root, under)
    if node is None:
        return None
    line, depth = node.start_mark.line + 1, 0
    for seg in segments(path):
        found = None
        if isinstance(seg, int) and isinstance(node, yaml.SequenceNode) and seg < len(node.value):
            found = (node.value[seg], node.value[seg].start_mark.line + 1)
        elif isinstance(seg, str) and isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if getattr(k, "value", None) == seg:
                    found = (v, k.start_mark.line + 1)
                    break
        if found is None:
            break
        node, line = found
        depth += 1
    return line, depth


@lru_cache(maxsize=4)
def _composed(text: str) -> yaml.Node | None:
    """The node tree of a file (cached: every problem of one bad file asks for a line); None when it is not YAML.

    Composing builds nodes only (an alias is one shared node, never expanded); a nesting deeper than the
    parser's recursion is no line, not a crash.
    """
    try:
        return yaml.compose(text)
    except (yaml.YAMLError, RecursionError):
        return None


def _child(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                return v
    return None
