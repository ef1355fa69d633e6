"""`gpu-platform explain --workload FILE`: what the platform does with one workload, stage by stage.

Reads the stack's objects from the same builders `plan` records (gpu_platform.explain.view), without
running the engine, and walks the workload through admission, Kueue, the scheduler, the autoscaler
and Volcano (gpu_platform.explain.stages). Exit 0 whatever the verdict; 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.behaviour.admission import RESOURCES
from gpu_platform.catalog import load_catalog
from gpu_platform.errors import ConfigError, Problem, printable
from gpu_platform.explain.stages import Explanation, explain
from gpu_platform.explain.view import StackView
from gpu_platform.input_limits import WORKLOAD, check_yaml, not_a_file, read_capped
from gpu_platform.spec.loader import load_stack

# Kinds the admission model knows that are not workloads a tenant submits for GPUs.
NOT_WORKLOADS = ("Workload", "PodGroup", "VolcanoJob", "Service", "Ingress", "NetworkPolicy")
# apiserver pkg/storage/names/generate.go: maxGeneratedNameLength (63 - 5) and randomLength.
GENERATED_PREFIX, GENERATED_RANDOM = 58, 5
KINDS = [*sorted(k for k in RESOURCES if k not in (*NOT_WORKLOADS, "CronJob")), "Job (batch.volcano.sh)"]


def read_workload(path: Path) -> dict[str, Any]:
    """The one manifest in FILE; ConfigError (one line) when missing, not YAML, not one object, or of an unknown kind."""
    file = str(path)
    why = not_a_file(path)
    if why is not None:
        raise ConfigError([Problem(file, "", "no such file" if why == "file not found" else why, "allowed: a YAML file with one workload manifest")])
    text = read_capped(path, WORKLOAD, "allowed: one YAML manifest")
    check_yaml(text, file, WORKLOAD, "allowed: one YAML manifest")
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f"line {where.line + 1}" if where is not None else "<root>"
        raise ConfigError([Problem(file, at, f"not valid YAML ({getattr(exc, 'problem', exc)})", "allowed: one YAML manifest")]) from None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ConfigError([Problem(file, "", f"{len(docs)} documents", "allowed: exactly one manifest (a mapping)")])
    doc: dict[str, Any] = docs[0]
    kind = doc.get("kind")
    if not isinstance(kind, str) or kind not in RESOURCES or kind in NOT_WORKLOADS:
        raise ConfigError([Problem(file, "kind", f"unknown workload kind {kind!r}", f"allowed: {', '.join(KINDS)}")])
    meta = doc.get("metadata")
    if isinstance(meta, dict) and not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
        # `kubectl create` of a manifest with generateName: the API server names the object (apiserver
        # pkg/storage/names/generate.go SimpleNameGenerator: the prefix cut to 58 characters, then 5 random
        # ones); explained here with five x's in their place.
        doc = {**doc, "metadata": {**meta, "name": meta["generateName"][:GENERATED_PREFIX] + "x" * GENERATED_RANDOM}}
    elif not isinstance(meta, dict) or not meta.get("name"):
        allowed = "allowed: the workload's name or generateName (and metadata.namespace)"
        raise ConfigError([Problem(file, "metadata.name", "missing", allowed)])
    return doc


def explain_file(stack_path: Path, stack: str, workload: Path) -> Explanation:
    """Explain one workload file against one stack."""
    obj = read_workload(workload)
    _, spec = load_stack(stack_path, stack)
    return explain(StackView(spec, load_catalog()), obj)


def render_text(e: Explanation) -> str:
    """Numbered stages with their result, detail and source, then the verdict."""
    head = f"{e.kind} {e.namespace}/{e.name}: {e.verdict}"
    where = ", ".join(f"{k} {v}" for k, v in (("ClusterQueue", e.cluster_queue), ("flavor", e.flavor), ("pool", e.pool)) if v)
    lines = [head + (f" ({where})" if where else ""), ""]
    for i, s in enumerate(e.steps, 1):
        lines.append(f"{i:>2}. {s.stage:<17} {s.result:<8} {s.detail}")
        lines.append(f"    {'':<17} {'':<8} source: {s.source}")
    # Names and values come from the manifest: escaped, so each stage stays one line (errors.printable).
    return "\n".join(printable(line) for line in lines)


# The verdict as the exit code, so a script or CI step can act on it without parsing (docs/cli.md).
EXIT_CODES = {"runs": 0, "waits": 1, "never": 3}


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point of the subcommand: exit 0 runs, 1 waits, 3 never (2 is bad input, raised)."""
    e = explain_file(path, stack, args.workload)
    print(json.dumps(e.to_json(), indent=2) if args.format == "json" else render_text(e))
    return EXIT_CODES[e.verdict]
