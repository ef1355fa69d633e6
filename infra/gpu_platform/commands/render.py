"""`gpu-platform render --out DIR`: every Kubernetes object and Helm values of the offline plan, as YAML.

Rendered from the recorded inputs of every `kubernetes:*` resource, so the files are exactly what
`pulumi up` would send. Layout under DIR:

- `manifests/<namespace or _cluster>/<kind>-<name>.yaml`: one object per file
- `patches/<kind>-<name>.yaml`: server-side-apply patches (on-prem node labels, and the pool's taints as the `gpu-platform.io/taints` annotation)
- `helm/<release>/values.yaml` and `helm/<release>/release.yaml` (chart, version, repository, namespace)
- `prometheus/gpu-platform-rules.yaml`: the PrometheusRule groups as a plain rule file (for promtool)
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.commands.plan import plan_stack
from gpu_platform.engine import Plan, PlannedResource

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
RULES_FILE = "prometheus/gpu-platform-rules.yaml"


def _sorted(value: Any) -> Any:
    """Mappings with sorted keys at every depth (the engine's key order is not stable); lists keep order."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def manifest_of(resource: PlannedResource) -> dict[str, Any]:
    """The object a recorded resource applies: apiVersion, kind, metadata first, the rest sorted."""
    inputs = _sorted(resource.inputs)
    head = {k: inputs[k] for k in ("apiVersion", "kind", "metadata") if k in inputs}
    return head | {k: v for k, v in inputs.items() if k not in head}


def is_object(resource: PlannedResource) -> bool:
    """True for a recorded Kubernetes object (not the provider, not a Helm release)."""
    return resource.type.startswith("kubernetes:") and resource.type != HELM_RELEASE and "apiVersion" in resource.inputs


def render_plan(plan: Plan) -> dict[str, Any]:
    """Relative path -> document, for every object, patch, Helm release and the rule file."""
    files: dict[str, Any] = {}
    for r in plan.resources:
        if r.type == HELM_RELEASE:
            i = r.inputs
            release = i["name"]
            files[f"helm/{release}/values.yaml"] = _sorted(i.get("values", {}))
            repo = (i.get("repositoryOpts") or {}).get("repo")
            files[f"helm/{release}/release.yaml"] = {
                "name": release,
                "namespace": i.get("namespace"),
                "chart": i["chart"],
                "version": i["version"],
                "repository": repo,
            }
        elif is_object(r):
            m = manifest_of(r)
            kind, meta = m["kind"].lower(), m["metadata"]
            if r.type.endswith("Patch"):
                path = f"patches/{kind}-{meta['name']}.yaml"
            else:
                path = f"manifests/{meta.get('namespace', '_cluster')}/{kind}-{meta['name']}.yaml"
            if path in files:
                raise ValueError(f"two objects render to {path}")
            files[path] = m
            if m["kind"] == "PrometheusRule":
                files[RULES_FILE] = {"groups": m["spec"]["groups"]}
    return dict(sorted(files.items()))


def write_files(out: Path, files: dict[str, Any]) -> None:
    """Write the rendered documents under `out`, replacing what a previous render left there."""
    for sub in ("manifests", "patches", "helm", "prometheus"):
        shutil.rmtree(out / sub, ignore_errors=True)
    for rel, doc in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False, width=200))


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point of the subcommand."""
    plan = plan_stack(path, stack)
    files = render_plan(plan)
    write_files(args.out, files)
    objects = sum(1 for rel in files if rel.startswith(("manifests/", "patches/")))
    releases = sum(1 for rel in files if rel.endswith("/values.yaml"))
    print(f"Stack {stack}: wrote {objects} manifests and {releases} Helm values files to {args.out}")
    return 0
