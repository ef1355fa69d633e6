"""On-prem node patches own only the platform's label and annotation keys, never the node's taint list.

Server-side apply over the API server's own OpenAPI (kubernetes-validate's bundle for the lockfile's
Kubernetes minor), as gpu_platform.behaviour.ssa reproduces it from kube-openapi smd.go and
structured-merge-diff typed/merge.go: NodeSpec.taints is `x-kubernetes-list-type: atomic`, ObjectMeta
labels and annotations are plain (granular) maps.
"""

from __future__ import annotations

import copy
from typing import Any

from gpu_platform.behaviour import ssa
from gpu_platform.versions import load_lockfile
from tests.conftest import plan_for

FOREIGN_TAINT = {"key": "dedicated", "value": "vision", "effect": "NoSchedule"}
PLATFORM_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _schema() -> tuple[dict[str, Any], Any]:
    defs = ssa.openapi_definitions(load_lockfile().kubernetes.version)
    return dict(defs), ssa.definition(defs, "Node")


def _live(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "rack": "r12"}, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": [copy.deepcopy(FOREIGN_TAINT)], "podCIDR": "10.244.3.0/24"},
    }


def test_the_apiservers_schema_makes_taints_atomic_and_labels_granular() -> None:
    defs, node = _schema()
    taints = node["properties"]["spec"]
    assert ssa.relationship(ssa.child_schema(taints, "taints", defs), defs) == "atomic"
    meta = ssa.child_schema(node, "metadata", defs)
    assert ssa.relationship(ssa.child_schema(meta, "labels", defs), defs) == "separable"
    # A patch that names spec.taints owns the whole list and, forced, replaces it: the bug this fixes.
    old_style = {"metadata": {"name": "n"}, "spec": {"taints": [PLATFORM_TAINT]}}
    assert ("spec", "taints") in ssa.owned_fields(old_style, node, defs)
    assert ssa.apply(_live("n"), old_style, node, defs)["spec"]["taints"] == [PLATFORM_TAINT]


def test_every_onprem_patch_owns_only_platform_keys_and_keeps_what_others_set() -> None:
    defs, node = _schema()
    patches = plan_for("onprem").of_type("kubernetes:core/v1:NodePatch")
    assert patches
    for r in patches:
        applied = {"metadata": r.inputs["metadata"], **({"spec": r.inputs["spec"]} if "spec" in r.inputs else {})}
        owned = ssa.owned_fields(applied, node, defs)
        assert not [p for p in owned if p[0] == "spec"], f"{r.name} owns {sorted(p for p in owned if p[0] == 'spec')}"
        labels = set(r.inputs["metadata"]["labels"])
        assert {p[2] for p in owned if p[:2] == ("metadata", "labels")} == labels
        after = ssa.apply(_live(r.inputs["metadata"]["name"]), applied, node, defs)
        assert after["spec"]["taints"] == [FOREIGN_TAINT], f"{r.name}: another owner's taint must survive the patch"
        assert after["metadata"]["labels"]["rack"] == "r12" and after["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"] == "0"
        assert after["metadata"]["labels"]["gpu-platform.io/pool"] == r.inputs["metadata"]["labels"]["gpu-platform.io/pool"]
