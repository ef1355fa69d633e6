"""`gpu-platform plan`: every resource the program would create, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpu_platform.aws.access import deploy_steps
from gpu_platform.engine import Plan, run_program
from gpu_platform.spec.loader import load_stack


def plan_stack(path: Path, stack: str) -> Plan:
    """Validate the stack file (clean errors first), then run the program on the offline engine."""
    config, spec = load_stack(path, stack)
    return run_program(config, stack, spec)


def render_table(plan: Plan) -> str:
    """A human-readable listing: one row per resource, indented under its parent component."""
    rows = [("  " * depth + r.name, r.type) for depth, r in plan.tree()]
    width = max((len(n) for n, _ in rows), default=4)
    lines = [f"Stack {plan.stack}: {len(plan.resources)} resources", "", f"{'NAME':<{width}}  TYPE"]
    lines += [f"{n:<{width}}  {t}" for n, t in rows]
    summary = plan.to_json()["summary"]
    lines += ["", "By type:"] + [f"  {count:>4}  {t}" for t, count in sorted(summary.items())]
    return "\n".join(lines)


def plan_json_text(plan: Plan) -> str:
    """`plan --format json`: the document with one resource per line.

    Each resource is one compact line (grep finds a resource's whole record; a diff of two plans shows
    which resources changed). `json.dumps` with `indent` runs the pure-Python encoder (CPython
    `json/encoder.py` `JSONEncoder.iterencode` takes the C encoder only without `indent`): 0.25 s for a
    4,600-resource plan against 0.06 s this way.
    """
    doc = plan.to_json()
    resources = ",\n".join("    " + json.dumps(r) for r in doc["resources"])
    summary = json.dumps(doc["summary"], indent=2).replace("\n", "\n  ")
    return "{\n" + f'  "stack": {json.dumps(doc["stack"])},\n  "resources": [\n{resources}\n  ],\n  "summary": {summary}\n' + "}"


def render_deploy_path(steps: list[str]) -> str:
    """The stack's deploy path as numbered steps (empty when the cluster already exists)."""
    if not steps:
        return ""
    return "\n".join(["", "", "Deploy path (how `pulumi up` reaches the API it creates):", *(f"  {i}. {s}" for i, s in enumerate(steps, 1))])


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point of the subcommand."""
    config, spec = load_stack(path, stack)
    plan = run_program(config, stack, spec)
    if args.format == "json":
        print(plan_json_text(plan))
    else:
        print(render_table(plan) + render_deploy_path(deploy_steps(spec)))
    return 0
