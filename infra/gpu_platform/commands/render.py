"""`gpu-platform render --out DIR`: every Kubernetes object and Helm values of the offline plan, as YAML.

Rendered from the recorded inputs of every `kubernetes:*` resource, so the files are exactly what
`pulumi up` would send. Layout under DIR:

- `manifests/<namespace or _cluster>/<kind>-<name>.yaml`: one object per file
- `patches/<kind>-<name>.yaml`: server-side-apply patches (on-prem node labels, and the pool's taints as the `gpu-platform.io/taints` annotation)
- `helm/<release>/values.yaml` and `helm/<release>/release.yaml` (chart, version, repository, namespace)
- `prometheus/gpu-platform-rules.yaml`: the PrometheusRule groups as a plain rule file (for promtool)
- `.gpu-platform-render.json`: every file written, with its sha256. The next render removes only files
  listed there that it no longer writes and nobody changed since; anything else in DIR is left alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.commands.plan import plan_stack
from gpu_platform.engine import Plan, PlannedResource
from gpu_platform.errors import ConfigError, Problem

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
RULES_FILE = "prometheus/gpu-platform-rules.yaml"
MANIFEST = ".gpu-platform-render.json"  # what the last render wrote: the only files a render ever removes
OUTPUT_DIRS = ("manifests", "patches", "helm", "prometheus")


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


@dataclass(frozen=True)
class Written:
    """What one render did under its output folder."""

    written: tuple[str, ...]
    removed: tuple[str, ...]  # files an earlier render wrote that this one no longer writes
    kept: tuple[str, ...]  # such files that were changed since: someone else's now, left alone


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(out: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file the last render wrote under `out` ({} when there was none)."""
    path = out / MANIFEST
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        files = doc["files"]
        if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise ConfigError([Problem(str(path), "files", "not a render manifest", "delete the file: the next render starts afresh")]) from None
    # only paths a render can write: a hand-edited manifest must not be able to delete anything else
    return {k: v for k, v in files.items() if _ours(k)}


def _ours(rel: str) -> bool:
    parts = Path(rel).parts
    return len(parts) >= 2 and parts[0] in OUTPUT_DIRS and ".." not in parts and not Path(rel).is_absolute()


def write_files(out: Path, files: dict[str, Any], stack: str = "") -> Written:
    """Write the rendered documents under `out`; remove only what the last render wrote and this one does not.

    A file the user put in the same folders is never touched, and neither is a file of an earlier render
    that was changed since (its hash no longer matches the manifest). The manifest `out/.gpu-platform-render.json`
    lists every file written with its sha256.
    """
    before = read_manifest(out)
    removed, kept = [], []
    for rel in sorted(set(before) - set(files)):
        path = out / rel
        if not path.is_file():
            continue
        if _digest(path.read_bytes()) != before[rel]:
            kept.append(rel)
            continue
        path.unlink()
        removed.append(rel)
        _prune(path.parent, out)
    digests = {}
    for rel, doc in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = yaml.safe_dump(doc, sort_keys=False, width=200).encode()
        path.write_bytes(data)
        digests[rel] = _digest(data)
    manifest = {"writtenBy": "gpu-platform render", "stack": stack, "files": digests}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return Written(tuple(files), tuple(removed), tuple(kept))


def _prune(directory: Path, out: Path) -> None:
    """Remove `directory` and its parents below `out` while they are empty (the folders of a removed object)."""
    while directory != out and out in directory.parents and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point of the subcommand."""
    read_manifest(args.out)  # a damaged manifest is bad input before minutes of planning, not after
    plan = plan_stack(path, stack)
    files = render_plan(plan)
    done = write_files(args.out, files, stack)
    objects = sum(1 for rel in files if rel.startswith(("manifests/", "patches/")))
    releases = sum(1 for rel in files if rel.endswith("/values.yaml"))
    if args.format == "json":
        doc = {"stack": stack, "out": str(args.out), "manifests": objects, "helmValues": releases}
        doc |= {"written": list(done.written), "removed": list(done.removed), "kept": list(done.kept)}
        print(json.dumps(doc, indent=2))
        return 0
    print(f"Stack {stack}: wrote {objects} manifests and {releases} Helm values files to {args.out}")
    if done.removed:
        print(f"Removed {len(done.removed)} file(s) an earlier render wrote and this one no longer does: {', '.join(done.removed)}")
    if done.kept:
        print(f"Kept {len(done.kept)} file(s) an earlier render wrote but someone changed since: {', '.join(done.kept)}")
    return 0
