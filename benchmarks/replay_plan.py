"""The plan's own resources replayed in Pulumi's mock engine, with no program around them.

Between the floor (benchmarks/mock_floor.py: N small resources) and `gpu-platform plan` (the program)
sits this: the resources a plan recorded (the same type tokens, inputs, parents, and an explicit
Kubernetes provider for the Kubernetes objects) registered one after another from a flat loop, with
the same provider modules imported and the engine installed as the floor installs it. Its time
against the floor's is roughly what the resources' size costs; the plan's time against it is what the
program adds (its imports, reading the stack, components, the SDK's stack walk through them, recording).
Roughly, because the loop calls `pulumi.CustomResource` with no class constructor of its own: the SDK
then finds no third `__init__` on the stack and turns no frame into a source position
(pulumi/runtime/resource.py `_get_stack_trace`), and no typed class runs, where the floor's typed Tags
pay both.
Run as a fresh process:
`python benchmarks/replay_plan.py PLAN.json [MODULE ...]` (PLAN.json from `gpu-platform plan --format
json`; the modules as plan_bench.py's `plan_modules` lists them).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", category=DeprecationWarning)

import pulumi  # noqa: E402
import pulumi_kubernetes as k8s  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mock_floor import IdsOnly, import_like_the_plan, start_mock_engine  # noqa: E402


def replay(resources: list[dict[str, Any]]) -> None:
    """Register every planned resource, parents first (a plan lists them in tree order)."""
    start_mock_engine(IdsOnly(), "replay")

    @pulumi.runtime.test
    def _run() -> None:
        made: dict[str, pulumi.Resource] = {}
        provider = k8s.Provider("replay-k8s", kubeconfig="{}")
        for r in resources:
            kube = r["type"].startswith("kubernetes:")
            opts = pulumi.ResourceOptions(parent=made.get(r["parent"] or ""), provider=provider if kube else None)
            if r["type"].startswith("gpu-platform:"):
                made[r["name"]] = pulumi.ComponentResource(r["type"], r["name"], None, opts)
            else:
                made[r["name"]] = pulumi.CustomResource(r["type"], r["name"], r["inputs"], opts)

    _run()


if __name__ == "__main__":
    plan = json.loads(Path(sys.argv[1]).read_text())
    import_like_the_plan(sys.argv[2:])
    replay(plan["resources"])
