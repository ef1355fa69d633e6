"""Duplicate keys in a YAML stack file, found on the node tree before PyYAML silently keeps the last.

PyYAML's `SafeConstructor.construct_mapping` (pyyaml 6.0, `yaml/constructor.py`) assigns each key in
turn into a dict, so a repeated `gpu-platform:tenants:` replaces the first one without a word. YAML 1.2
(section 3.2.1.1) requires mapping keys to be unique, and Go's gopkg.in/yaml.v3 (`decode.go`, `mapping`),
which the Pulumi CLI reads stack files with, refuses them ("mapping key ... already defined at line N").
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from gpu_platform.errors import Problem, safe_loader


def _child_path(path: str, key: str) -> str:
    # The stack file's `config:` level is implicit in every other message's key path.
    return key if path in ("", "config") else f"{path}.{key}"


def _walk(node: yaml.Node, path: str) -> Iterator[tuple[str, str, int, int]]:
    """(parent path, key, first line, repeated line) of every duplicate key under `node`."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                yield path, key, seen[key], line
            else:
                seen[key] = line
            yield from _walk(value_node, _child_path(path, key))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from _walk(item, f"{path}[{i}]")


def duplicate_keys(text: str, file: str) -> list[Problem]:
    """One problem per repeated mapping key, naming both lines (empty when every key is unique)."""
    return duplicate_keys_in(yaml.compose(text, Loader=safe_loader()), file)


def duplicate_keys_in(root: yaml.Node | None, file: str) -> list[Problem]:
    """`duplicate_keys` of a document already composed (the stack loader composes it once and builds the data from it)."""
    if root is None:
        return []
    out = []
    for parent, key, first, again in _walk(root, ""):
        where = f"{parent}.{key}" if parent and parent != "config" else key
        out.append(
            Problem(
                file,
                where,
                f"duplicate key '{key}' on line {first} and line {again} (YAML would silently keep only line {again})",
                "allowed: each key once per mapping; merge the two entries into one",
            )
        )
    return out
