"""Shared helpers of the Kubernetes-layer tests: rendered documents per stack, CRD schemas."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.behaviour.admission import vap_validation_denial
from gpu_platform.commands.render import is_manifest, render_plan
from tests.conftest import plan_for

# Re-exported: other test modules import the evaluator from here; it lives in the product package.
__all__ = ["crd_schemas", "helm_values", "is_builtin", "objects", "one", "rendered", "strict_schema", "vap_validation_denial"]


@cache
def rendered(stack: str) -> dict[str, Any]:
    """Relative path -> document of `gpu-platform render` for a repository stack."""
    return render_plan(plan_for(stack))


def objects(stack: str, kind: str | None = None) -> list[dict[str, Any]]:
    """Rendered Kubernetes objects (manifests and patches), optionally of one kind."""
    docs = [d for p, d in rendered(stack).items() if is_manifest(p)]
    return [d for d in docs if kind is None or d["kind"] == kind]


def one(stack: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    """The rendered object of this kind and name (and namespace)."""
    found = [o for o in objects(stack, kind) if o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace]
    assert len(found) == 1, f"{kind} {namespace}/{name}: {len(found)} found"
    return found[0]


def helm_values(stack: str, release: str) -> dict[str, Any]:
    """Rendered Helm values of one release."""
    return rendered(stack)[f"helm/{release}/values.yaml"]


def is_builtin(api_version: str) -> bool:
    """True for core Kubernetes API groups (validated by kubernetes-validate), not CRD groups."""
    group = api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""
    return group == "" or (group.endswith("k8s.io") and not group.endswith("x-k8s.io"))


def strict_schema(schema: Any) -> Any:
    """An openAPIV3Schema as JSON Schema that rejects fields the CRD does not declare.

    The API server prunes unknown fields of structural schemas silently; a test should see them.
    """
    s = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.pop("x-kubernetes-int-or-string", False):
                node.pop("type", None)
                node.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
            pattern = node.get("pattern")
            if isinstance(pattern, str) and "(?i)" in pattern[1:]:
                # Go's RE2 takes inline flags anywhere; Python only at the start.
                node["pattern"] = "(?i)" + pattern.replace("(?i)", "")
            if "properties" in node and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    return s


@cache
def crd_schemas(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> strict openAPIV3Schema of every CRD version under shared/crds."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in root.rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                out[(f"{group}/{version['name']}", kind)] = strict_schema(version["schema"]["openAPIV3Schema"])
    return out
