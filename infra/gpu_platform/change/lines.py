"""The line of a stack key path (`gpu-platform:nodePools[0].instanceTypes`) in a stack file, from YAML node marks."""

from __future__ import annotations

import re

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
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None
    node = root if under is None or root is None else _child(root, under)
    if node is None:
        return None
    line = node.start_mark.line + 1
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
    return line


def _child(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                return v
    return None
