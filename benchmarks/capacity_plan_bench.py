"""Benchmark `gpu-platform capacity plan` on the full Alibaba trace (8,152 tasks) next to `plan --stack prod`.

Prints figures; never fails on timing. Each run is a fresh process (imports included), as a user runs
it; best of --repeat runs. Also times the planner alone in-process (parse, step functions, quantiles,
job-level replay, first-fit decreasing packing of inference, break-even sizing, the plan and its sensitivity table), which is what the trace's
size drives; its caches are cleared before each repeat so every repeat does the whole work.
Usage: .venv/bin/python benchmarks/capacity_plan_bench.py [--repeat N] [--trace FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpu_platform.catalog import load_catalog
from gpu_platform.planning import economics, packing, replay, series
from gpu_platform.planning.planner import plan
from gpu_platform.planning.trace import trace_demand
from gpu_platform.planning.windows import sensitivity

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "gpu_platform.cli"]
# shared/ next to the checkout (worktrees) or one level up (the main clone)
DEFAULT_TRACE = next(
    (
        p
        for p in (r / "shared" / "traces" / "alibaba-gpu-2023" / "openb_pod_list_default.csv" for r in (ROOT.parent, ROOT.parent.parent))
        if p.is_file()
    ),
    ROOT.parent / "shared" / "traces" / "alibaba-gpu-2023" / "openb_pod_list_default.csv",
)


def measure(args: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one fresh `gpu-platform` process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([*CLI, *args], cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} failed: {err.read().decode()[:500]}")
    return wall, usage.ru_maxrss / 1024


def best(args: list[str], repeat: int) -> tuple[float, float]:
    """Fastest of `repeat` runs and its peak memory."""
    return min(measure(args) for _ in range(repeat))


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace", type=Path, default=Path(os.environ.get("GPU_PLATFORM_TRACE", DEFAULT_TRACE)))
    args = parser.parse_args()
    if not args.trace.is_file():
        print(f"capacity plan benchmark skipped: trace not found at {args.trace} (pass --trace openb_pod_list_default.csv or set GPU_PLATFORM_TRACE)")
        return
    text = args.trace.read_text()
    tasks = sum(1 for line in text.splitlines()[1:] if line)
    start = time.perf_counter()
    for _ in range(args.repeat):
        economics.from_series.cache_clear()
        replay.nodes_for_wait.cache_clear()
        packing.pack.cache_clear()
        series._capacity_for_delay.cache_clear()
        demand = trace_demand(text, str(args.trace))
        plan(demand, load_catalog())
        sensitivity(demand, load_catalog(), False, None)
    inner = (time.perf_counter() - start) / args.repeat
    cp_wall, cp_mem = best(["capacity", "plan", "--demand", str(args.trace), "--format", "json"], args.repeat)
    pl_wall, pl_mem = best(["plan", "--stack", "prod", "--format", "json"], args.repeat)
    print(f"capacity plan, full trace ({tasks:,} tasks): {cp_wall:.2f} s, {cp_mem:.0f} MiB peak (planner alone in-process: {inner:.2f} s)")
    print(f"plan --stack prod:                       {pl_wall:.2f} s, {pl_mem:.0f} MiB peak")
    print(f"ratio: capacity plan takes {cp_wall / pl_wall:.0%} of plan --stack prod")


if __name__ == "__main__":
    main()
