"""Benchmark `gpu-platform explain` against `gpu-platform plan` on the prod stack, each a fresh process.

explain builds the objects it reads from the program's pure builders instead of running the mock
engine, so it should answer in a fraction of plan's time. Prints figures; never fails on timing.
Usage: .venv/bin/python benchmarks/explain_bench.py [--repeat N] [--record]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from results import record

from gpu_platform.spec.loader import load_stack_file

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "gpu_platform.cli"]


def _prod_workloads() -> list[Path]:
    """The example workloads of prod's tenants (the others are other stacks' examples)."""
    namespaces = {t.ns for t in load_stack_file(ROOT / "stacks" / "Pulumi.prod.yaml").tenants}
    examples = sorted((ROOT / "examples" / "workloads").glob("*.yaml"))
    return [w for w in examples if yaml.safe_load(w.read_text())["metadata"]["namespace"] in namespaces]


WORKLOADS = _prod_workloads()


# As on a user's machine, Python keeps its bytecode caches (a CI image may set PYTHONDONTWRITEBYTECODE,
# which makes every run recompile pulumi_aws: seconds that are neither plan's nor explain's).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def seconds(args: list[str]) -> float:
    """Wall seconds of one fresh CLI process (imports included, as a user runs it)."""
    start = time.perf_counter()
    subprocess.run([*CLI, *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - start


def best(args: list[str], repeat: int) -> float:
    """The fastest of `repeat` runs: the one least disturbed by other load."""
    return min(seconds(args) for _ in range(repeat))


def main() -> None:
    """Time plan once per repeat and explain for every example workload; print a table and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="replace this benchmark's entries in benchmarks/results.yaml")
    args = parser.parse_args()
    seconds(["explain", "--stack", "prod", "--workload", str(WORKLOADS[0].relative_to(ROOT))])  # warm the bytecode caches
    plan = best(["plan", "--stack", "prod", "--format", "json"], args.repeat)
    print(f"{'command':<58} {'seconds':>8} {'of plan':>8}")
    print(f"{'plan --stack prod':<58} {plan:>8.2f} {'100%':>8}")
    times = []
    for w in WORKLOADS:
        t = best(["explain", "--stack", "prod", "--workload", str(w.relative_to(ROOT)), "--format", "json"], args.repeat)
        times.append(t)
        print(f"{'explain --stack prod --workload ' + w.name:<58} {t:>8.2f} {t / plan:>8.0%}")
    if args.record:
        low, high = min(times), max(times)
        figure = f"{low:.1f}–{high:.1f} s vs {plan:.1f} s ({low / plan:.0%}–{high / plan:.0%})"
        record("explain-examples", "`explain --stack prod` of each example workload vs `plan --stack prod`, same run", figure)


if __name__ == "__main__":
    main()
