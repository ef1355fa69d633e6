"""Benchmark `gpu-platform plan`: wall time and peak memory for prod and generated stacks, and how cost grows.

Prints figures; never fails on timing. Each run is a fresh process (imports included), as a user runs it.
Also prints the plan's time next to Pulumi's mock-engine floor for the same number of resources
(benchmarks/mock_floor.py: the same provider modules imported, plain resources registered) and their
ratio, for prod and for the generated 100 pools / 200 tenants stack (target: both within 1.5x).
Both start from bytecode caches, as every run after `make setup` does (it compiles them; this script
compiles whatever is missing first); their runs alternate and the ratio is the median of back-to-back
pairs, so that a slower minute of a shared machine falls on both.
Usage: .venv/bin/python benchmarks/plan_bench.py [--repeat N] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from resource import struct_rusage
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import yaml
from generate_stack import generate
from results import record

ROOT = Path(__file__).resolve().parents[1]
# The console script `make plan` and users run (`.venv/bin/gpu-platform`), not `python -m`: that adds
# runpy's two frames to the stack the SDK walks for every resource (pulumi/runtime/resource.py
# `_get_stack_trace`), and neither resolves to a file URI.
CLI = [str(Path(sys.executable).with_name("gpu-platform"))]


# Run in a child process: plans a stack and prints the provider modules that process executed (a lazy
# stub the SDK created but never loaded is a `pulumi._utils._LazyModule` and is left out) and how many
# resources it planned.
PROBE = """
import contextlib, io, json, sys, types
from gpu_platform.cli import main
with contextlib.redirect_stdout(io.StringIO()) as plan:
    main(["plan", "--format", "json", *sys.argv[1:]])
loaded = (n for n, m in sys.modules.items() if n.split(".")[0] in ("pulumi_aws", "pulumi_kubernetes") and type(m) is types.ModuleType)
print(json.dumps({"modules": sorted(loaded), "resources": len(json.loads(plan.getvalue())["resources"])}))
"""


def warm_bytecode() -> None:
    """Compile what the plan and the floor import, as `make setup` does; already compiled files are skipped.

    Without caches each process compiles every module it imports on every run (Python cannot write
    them under PYTHONDONTWRITEBYTECODE): seconds that measure the compiler, not the plan.
    """
    paths = [sysconfig.get_paths()["purelib"], str(ROOT / "infra"), str(ROOT / "policies"), str(ROOT / "benchmarks")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *paths], check=True, stdout=subprocess.DEVNULL)


def plan_probe(args: list[str]) -> tuple[list[str], int]:
    """(the provider modules a `gpu-platform plan` of this stack loads, the resources it plans), from one plan."""
    out = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    probe = json.loads(out.strip().splitlines()[-1])
    return probe["modules"], probe["resources"]


def plan_modules(args: list[str]) -> list[str]:
    """The provider modules a `gpu-platform plan` of this stack loads, for the floor to load the same."""
    return plan_probe(args)[0]


def timed(cmd: list[str], **popen: Any) -> tuple[float, int, struct_rusage]:
    """(wall seconds, exit status, resource usage) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, **popen)
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, os.waitstatus_to_exitcode(status), usage


def measure(args: list[str], keep: Path | None = None) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS MiB, resources planned, CPU seconds) of one fresh `gpu-platform plan` process.

    `keep`: a file to leave the plan's JSON in (the replay registers its resources).
    """
    with keep.open("w+b") if keep else tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        wall, status, usage = timed([*CLI, "plan", "--format", "json", *args], stdout=out, stderr=err)
        if status != 0:
            err.seek(0)
            raise SystemExit(f"plan failed: {err.read().decode()[:500]}")
        out.seek(0)
        resources = json.load(out)["resources"]
    return wall, usage.ru_maxrss / 1024, len(resources), usage.ru_utime + usage.ru_stime


def measure_script(script: str, *args: str) -> tuple[float, float]:
    """(wall, CPU seconds) of a fresh process running one of the benchmark scripts beside this one."""
    wall, status, usage = timed([sys.executable, str(Path(__file__).with_name(script)), *args])
    if status != 0:
        raise SystemExit(f"{script} failed")
    return wall, usage.ru_utime + usage.ru_stime


def best(runs: list[tuple[float, float, int, float]]) -> tuple[float, float, int, float]:
    """Least wall and least CPU time of the runs (the least disturbed by other load), with peak memory and size."""
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[0][2], min(r[3] for r in runs)


@dataclass(frozen=True)
class Versus:
    """A plan against the floor and the replay: best runs of each, and the CPU ratios of adjacent runs."""

    plan: tuple[float, float, int, float]  # least wall, peak MiB, resources, least CPU
    floor: tuple[float, float]  # least wall, least CPU
    pair_ratios: list[float]  # plan / floor, run back to back
    replay_ratios: list[float]  # replay / floor, run back to back
    modules: int

    @property
    def ratio(self) -> float:
        """The median of the plan/floor CPU ratios: each pair ran back to back, under the same conditions."""
        return statistics.median(self.pair_ratios)

    @property
    def replay_ratio(self) -> float:
        """The median replay/floor CPU ratio: what the resources' own size and shape cost."""
        return statistics.median(self.replay_ratios)


def against_floor(args: list[str], repeat: int) -> Versus:
    """Plan, replay and floor (as many resources, the provider modules the plan loads), `repeat` times each.

    Runs alternate (plan, replay, floor, plan, ...): the speed of a shared or virtual machine drifts by
    tens of percent from one minute to the next, so each plan is compared with the floor run beside it
    and the median of those ratios is reported, rather than the best of each taken minutes apart.
    The replay (benchmarks/replay_plan.py) registers the plan's own resources with no program around
    them, which splits the ratio into what the resources cost and what the program adds.
    """
    loaded = plan_modules(args)
    with tempfile.TemporaryDirectory() as tmp:
        recorded = Path(tmp) / "plan.json"
        plans, replays, floors = [measure(args, keep=recorded)], [], []
        for i in range(repeat):
            if i:
                plans.append(measure(args))
            replays.append(measure_script("replay_plan.py", str(recorded), *loaded))
            floors.append(measure_script("mock_floor.py", str(plans[0][2]), *loaded))
    return Versus(
        best(plans),
        (min(f[0] for f in floors), min(f[1] for f in floors)),
        [p[3] / f[1] for p, f in zip(plans, floors, strict=True)],
        [r[1] / f[1] for r, f in zip(replays, floors, strict=True)],
        len(loaded),
    )


def ratio_text(v: Versus) -> str:
    """The plan/floor median with its range, the target's verdict, and the replay's ratio."""
    return (
        f"{v.ratio:.2f}x CPU, the median of {len(v.pair_ratios)} back-to-back pairs ({min(v.pair_ratios):.2f}-{max(v.pair_ratios):.2f}); "
        f"target 1.5x: {'met' if v.ratio <= 1.5 else 'not met'}; the same resources replayed without the program "
        f"(benchmarks/replay_plan.py): {v.replay_ratio:.2f}x"
    )


def summary(label: str, v: Versus) -> str:
    """One line: both processes' best times and the median ratio with its range."""
    wall, _, count, cpu = v.plan
    return (
        f"{label}: plan {wall:.2f} s wall / {cpu:.2f} s CPU for {count} resources; mock-engine floor for {count} resources "
        f"({v.modules} provider modules, as the plan): {v.floor[0]:.2f} s wall / {v.floor[1]:.2f} s CPU; {ratio_text(v)}"
    )


def record_ratio(i: int, label: str, v: Versus) -> None:
    """Replace this ratio's figure in benchmarks/results.yaml."""
    _, peak, count, cpu = v.plan
    key, benchmark = (
        ("plan-prod", "`plan --stack prod` vs Pulumi's mock-engine floor (the provider modules the plan loaded, as many plain resources)")
        if i == 0
        else ("plan-generated", f"`plan` of a {label} stack vs the mock-engine floor")
    )
    figure = f"{count:,} resources, {peak:.0f} MiB peak; best {cpu:.2f} s CPU vs {v.floor[1]:.2f} s CPU; {ratio_text(v)}"
    load = os.getloadavg()[0]
    conditions = f"{os.cpu_count()} cores, load average {load:.1f}, bytecode caches for both, the console script, CPU compared"
    record(key, benchmark, figure, conditions)


def main() -> None:
    """Run the benchmark and print a small table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="replace this benchmark's entries in benchmarks/results.yaml")
    parser.add_argument("--stack", help="only this repository stack against the floor (e.g. multi: the MultiKueue federation)")
    opts = parser.parse_args()
    warm_bytecode()
    if opts.stack:
        v = against_floor(["--stack", opts.stack], opts.repeat)
        print(summary(f"plan --stack {opts.stack}", v))
        if opts.record:
            _, peak, count, cpu = v.plan
            figure = f"{count:,} resources, {peak:.0f} MiB peak; best {cpu:.2f} s CPU vs {v.floor[1]:.2f} s CPU; {ratio_text(v)}"
            conditions = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, bytecode caches for both, the console script, CPU compared"
            record(
                f"plan-{opts.stack}", f"`plan --stack {opts.stack}` vs the mock-engine floor (CPU, median of back-to-back pairs)", figure, conditions
            )
        return
    with tempfile.TemporaryDirectory() as tmp:
        cases: list[tuple[str, list[str]]] = [("prod", ["--stack", "prod"])]
        for pools, tenants in ((25, 50), (50, 100), (100, 200)):
            path = Path(tmp) / f"Pulumi.gen-{pools}x{tenants}.yaml"
            path.write_text(yaml.safe_dump(generate(pools, tenants)))
            cases.append((f"generated {pools} pools / {tenants} tenants", ["--config", str(path)]))
        print(f"{'CASE':<36} {'RESOURCES':>9} {'WALL s':>8} {'PEAK MiB':>9} {'ms/RESOURCE':>12}")
        results = []
        versus: list[tuple[int, Versus]] = []
        for i, (label, args) in enumerate(cases):
            if i in (0, len(cases) - 1):
                v = against_floor(args, opts.repeat)
                versus.append((i, v))
                wall, rss, count, _ = v.plan
            else:
                wall, rss, count, _ = best([measure(args) for _ in range(opts.repeat)])
            results.append((label, wall, count))
            print(f"{label:<36} {count:>9} {wall:>8.2f} {rss:>9.0f} {1000 * wall / count:>12.2f}")
    print()
    # CPU seconds next to wall seconds: on a machine shared with other jobs, wall time mostly measures
    # the queue for the cores, and CPU time is the steadier comparison of the two processes' own work.
    for i, v in versus:
        print(summary(results[i][0], v))
        if opts.record:
            record_ratio(i, results[i][0], v)
    (_, w_small, n_small), (_, w_large, n_large) = results[1], results[-1]
    print()
    print(f"Growth from {n_small} to {n_large} resources ({n_large / n_small:.1f}x work): wall time x{w_large / w_small:.2f}")
    print("Targets on a 2-core machine: prod < 5 s, 100 pools / 200 tenants < 30 s, growth close to linear.")


if __name__ == "__main__":
    main()
