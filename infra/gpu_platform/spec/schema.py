"""JSON Schema of a stack file (`stacks/Pulumi.<name>.yaml`), generated from the spec models.

Editors (yaml-language-server, via the `# yaml-language-server: $schema=...` line at the top of every
stack file) use it to complete and validate keys while typing. It is generated, never edited by hand:
`python -m gpu_platform.spec.schema --write` rewrites the shipped copy, and a test fails when the
shipped copy and the models disagree.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

from gpu_platform.spec import field_docs
from gpu_platform.spec.loader import PROJECT, PROJECT_KEYS, STACK_FILE_KEYS
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.versions import Lockfile

# Where the repository ships the schema, relative to its root; stack files point at it by a relative path.
SCHEMA_PATH = Path("schema") / "stack.schema.json"
# Draft-07 with `definitions`: yaml-language-server (the VS Code, Neovim, Zed and Helix YAML support)
# documents "JSON Schema 7 and below"; pydantic's 2020-12 output only needs `$defs` renamed for it.
DRAFT = "http://json-schema.org/draft-07/schema#"
REF = "#/definitions/"
VERSIONS_PREFIX = "Versions"
SECRETS_KEYS = STACK_FILE_KEYS - {"config", "environment"}
# The three keys a stack must set (Pulumi.yaml declares them without a default).
REQUIRED_KEYS = ("environment", "cluster", "nodePools")
# Another provider's config (`aws:region`, `kubernetes:context`, ...): any value; `gpu-platform:` keys are all listed.
OTHER_NAMESPACE = rf"^(?!{PROJECT}:)[A-Za-z0-9_.-]+:.+$"


def _walk(node: Any, fn: Any) -> Any:
    """Apply `fn` to every mapping in a JSON document, depth first, and return the rebuilt document."""
    if isinstance(node, dict):
        return fn({k: _walk(v, fn) for k, v in node.items()})
    if isinstance(node, list):
        return [_walk(v, fn) for v in node]
    return node


def _drop_titles(node: dict[str, Any]) -> dict[str, Any]:
    """Pydantic titles ('Gputempcelsius') add noise to editor pop-ups; descriptions carry the meaning."""
    return {k: v for k, v in node.items() if not (k == "title" and isinstance(v, str))}


def _refs(node: Any) -> set[str]:
    """Names of the `definitions` a schema fragment refers to."""
    found: set[str] = set()

    def visit(n: dict[str, Any]) -> dict[str, Any]:
        ref = n.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF):
            found.add(ref.removeprefix(REF))
        return n

    _walk(node, visit)
    return found


def _closure(names: set[str], defs: dict[str, Any]) -> set[str]:
    """`names` and every definition they reach."""
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += _refs(defs[name])
    return seen


def _versions_override(lock_defs: dict[str, Any], lock_root: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`gpu-platform:versions` is deep-merged over the lockfile: the lockfile's shape with nothing required."""

    def partial(node: dict[str, Any]) -> dict[str, Any]:
        node = {k: v for k, v in node.items() if k != "required"}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF):
            node["$ref"] = f"{REF}{VERSIONS_PREFIX}{ref.removeprefix(REF)}"
        return node

    defs = {f"{VERSIONS_PREFIX}{name}": _walk(copy.deepcopy(d), partial) for name, d in lock_defs.items()}
    root = _walk(copy.deepcopy(lock_root), partial)
    root["description"] = "Per-stack override of the version lockfile (normally empty): a partial copy of versions.yaml's structure."
    return root, defs


def stack_file_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of a whole Pulumi stack file of this project."""
    spec = PlatformSpec.model_json_schema(by_alias=True, mode="validation", ref_template=REF + "{model}")
    lock = Lockfile.model_json_schema(by_alias=True, mode="validation", ref_template=REF + "{model}")
    spec_defs: dict[str, Any] = spec.pop("$defs")
    for model in field_docs.models(PlatformSpec):
        field_docs.describe(spec if model is PlatformSpec else spec_defs[model.__name__], model)
    props: dict[str, Any] = spec["properties"]

    config: dict[str, Any] = {}
    used: set[str] = set()
    for key in PROJECT_KEYS:
        if key == "versions":
            continue
        config[f"{PROJECT}:{key}"] = props[key]
        used |= _refs(props[key])
    lock_defs = lock.pop("$defs")
    versions_root, versions_defs = _versions_override(lock_defs, lock)
    config[f"{PROJECT}:versions"] = versions_root
    region = dict(props["region"]["anyOf"][0])
    region["description"] = "AWS region of an EKS stack (required for provider `eks`)."
    config["aws:region"] = region

    defs = {name: spec_defs[name] for name in sorted(_closure(used, spec_defs))}
    defs.update(sorted(versions_defs.items()))
    config, defs = _walk(config, _drop_titles), _walk(defs, _drop_titles)
    schema = {
        "$schema": DRAFT,
        "title": f"{PROJECT} stack file (Pulumi.<stack>.yaml)",
        "description": f"Generated from the {PROJECT} spec models by `python -m gpu_platform.spec.schema --write`; do not edit.",
        "type": "object",
        "additionalProperties": False,
        "required": ["config"],
        "properties": {
            "config": {
                "type": "object",
                "description": f"Stack configuration: `{PROJECT}:<key>` entries (below) and other providers' `ns:key` entries.",
                "properties": config,
                "patternProperties": {OTHER_NAMESPACE: {}},
                "additionalProperties": False,
                "required": [f"{PROJECT}:{k}" for k in REQUIRED_KEYS],
            },
            **{k: {"type": "string", "description": "Written by Pulumi's secrets provider."} for k in sorted(SECRETS_KEYS)},
            "environment": {"description": "Pulumi ESC environments imported into this stack."},
        },
        "definitions": defs,
    }
    return schema


def render() -> str:
    """The schema as the repository stores it (keys in the models' order, so a diff reads like the models' diff)."""
    return json.dumps(stack_file_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the schema, or rewrite the repository's copy with --write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, nargs="?", const=SCHEMA_PATH, help=f"write to this file (default {SCHEMA_PATH})")
    args = parser.parse_args(argv)
    if args.write is None:
        sys.stdout.write(render())
    else:
        args.write.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
