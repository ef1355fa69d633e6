"""Wall time of `gpu-platform check`: every stack in one process (`--all`) against one process per stack,
and `check --stack prod` against checkov over the same rendered manifests (target: check no slower).

Every command runs as a fresh process (imports included), best of N runs each, in the same invocation,
and the ratios are printed. Prints figures only; it never fails on timing. Needs .venv-checkov for checkov.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import record

from gpu_platform_policies import checkov

ROOT = Path(__file__).resolve().parents[1]
GPU_PLATFORM = ROOT / ".venv" / "bin" / "gpu-platform"
RUNS = 3
RECORD = "--record" in sys.argv[1:]  # replace this benchmark's entries in benchmarks/results.yaml
# As on a user's machine, both tools keep their bytecode caches (a CI image may set PYTHONDONTWRITEBYTECODE,
# which makes every run of either recompile its imports: seconds that are neither tool's own work).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc.returncode


def bench(label: str, argv: list[str]) -> float:
    times, codes = zip(*(timed(argv) for _ in range(RUNS)), strict=True)
    print(f"{label:<48} best {min(times):6.2f} s   median {statistics.median(times):6.2f} s   exit {set(codes)}")
    return min(times)


def per_stack_total() -> tuple[float, int]:
    """One `check --stack NAME` process after another over stacks/, as CI used to run it."""
    stacks = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    total, worst = 0.0, 0
    for stack in stacks:
        seconds, code = timed([str(GPU_PLATFORM), "check", "--stack", stack, "--format", "json"])
        total, worst = total + seconds, max(worst, code)
    return total, worst


def main() -> int:
    if [a for a in sys.argv[1:] if a != "--record"] != ["checkov"]:  # `check_bench.py checkov`: only check against checkov
        per_stack_against_all()
    return against_checkov()


def per_stack_against_all() -> None:
    """`check --all` against one `check --stack` process per stack."""
    runs = [per_stack_total() for _ in range(RUNS)]
    separate = min(t for t, _ in runs)
    stacks = len(list((ROOT / "stacks").glob("Pulumi.*.yaml")))
    print(f"{f'{stacks} x check --stack NAME (one process each)':<48} best {separate:6.2f} s   exit {{{max(c for _, c in runs)}}}")
    together = bench("check --all (one process)", [str(GPU_PLATFORM), "check", "--all", "--format", "json"])
    print(f"ratio --all / one process per stack: {together / separate:.2f}")
    if RECORD:
        figure = f"{together:.1f} s vs {separate:.1f} s ({together / separate:.2f})"
        record("check-all", f"`check --all` ({stacks} stacks, one process) vs `check --stack` once per stack", figure)
    print()


def against_checkov() -> int:
    """`check --stack prod` against checkov over prod's rendered manifests, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "prod"
        subprocess.run([str(GPU_PLATFORM), "render", "--stack", "prod", "--out", str(out)], cwd=ROOT, check=True, capture_output=True)
        manifests = sum(1 for _ in out.rglob("*.yaml"))
        print(f"prod: {manifests} rendered YAML files; best and median of {RUNS} runs each, wall time incl. start-up")
        if not checkov.CHECKOV.exists():
            bench("gpu-platform check --stack prod", [str(GPU_PLATFORM), "check", "--stack", "prod", "--format", "json"])
            print(f"checkov: {checkov.CHECKOV} missing (make .venv-checkov); no ratio")
            return 0
        # interleaved, one run of each in turn, so a neighbour's load falls on both alike
        pair = {"gpu-platform check --stack prod": [str(GPU_PLATFORM), "check", "--stack", "prod", "--format", "json"]}
        pair["checkov --framework kubernetes (same manifests)"] = checkov.command(out)
        times: dict[str, list[float]] = {label: [] for label in pair}
        cpu: dict[str, list[float]] = {label: [] for label in pair}
        for argv in pair.values():  # one untimed run each: the bytecode caches a user's second run finds
            timed(argv)
        for _ in range(RUNS):
            for label, argv in pair.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                times[label].append(timed(argv)[0])
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[label].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        for label, ts in times.items():
            median_cpu = statistics.median(cpu[label])
            print(f"{label:<48} wall best {min(ts):6.2f} s  median {statistics.median(ts):6.2f} s   CPU median {median_cpu:6.2f} s")
        ours, theirs = (statistics.median(ts) for ts in times.values())
        ours_cpu, theirs_cpu = (statistics.median(c) for c in cpu.values())
    verdict = "met" if ours <= theirs else "NOT met"
    print(f"ratio check/checkov (medians): wall {ours / theirs:.2f}, CPU {ours_cpu / theirs_cpu:.2f}   (target: no slower than checkov: {verdict})")
    if RECORD:
        benchmark = "`check --stack prod` vs checkov's Kubernetes framework on the same rendered manifests"
        record("check-prod-vs-checkov", benchmark, f"{ours:.1f} s vs {theirs:.1f} s ({ours / theirs:.2f}; CPU {ours_cpu / theirs_cpu:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
