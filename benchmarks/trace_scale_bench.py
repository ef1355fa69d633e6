"""Benchmark `gpu-platform capacity plan` on generated pod lists of growing size: time, peak memory, growth exponent.

Prints figures; never fails on timing. Each size is a fresh process (imports included), as a user runs it. The pod
lists are generated here, seeded, in the Alibaba trace's format and mix: QoS LS / Guaranteed / Burstable / BE, whole
and shared GPUs, 1 to 8 GPUs per task, a fifth of the tasks constrained to trace GPU models, creations spread over
90 days, run times exponential (a day for inference, four hours otherwise). The growth exponent between two sizes is
log(t2 / t1) / log(n2 / n1): 1 is linear, 2 quadratic.
Usage: .venv/bin/python benchmarks/trace_scale_bench.py [--rows 10000,100000,1000000] [--timeout S] [--repeat N] [--record]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record

ROOT = Path(__file__).resolve().parents[1]
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
SPAN = 90 * 86400
TARGET_S, TARGET_MIB = 30.0, 2048.0  # a million rows (issue 32)


def generate(rows: int, path: Path, seed: int = 7) -> None:
    """A pod list of `rows` tasks."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        out.write(HEADER + "\n")
        for i in range(rows):
            qos = rng.choice(("LS", "LS", "Burstable", "BE", "Guaranteed"))
            if qos == "LS":
                gpus, milli = 1, rng.choice((1000, 500, 250, 300, 460, 1000))
            else:
                gpus, milli = rng.choice((1, 1, 2, 4, 8)), 1000
            start = rng.randrange(SPAN)
            run = int(rng.expovariate(1 / (24 * 3600 if qos == "LS" else 4 * 3600))) + 60
            spec = rng.choice(("", "", "", "T4", "A10", "V100M16|V100M32"))
            cpu, mem = rng.choice((4000, 8000, 16000)), rng.choice((8192, 16384, 32768))
            out.write(f"p{i},{cpu},{mem},{gpus},{milli},{spec},{qos},Running,{start},{start + run},{start}\n")


def run_one(path: Path, timeout: float) -> tuple[float, float] | None:
    """(wall seconds, peak RSS MiB) of one fresh `capacity plan --format json` process; None past the timeout."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_platform.cli", "capacity", "plan", "--demand", str(path), "--format", "json"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            proc.kill()
            os.wait4(proc.pid, 0)
            return None
        time.sleep(0.2)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{path.name} failed: {(proc.stderr.read() if proc.stderr else b'').decode()[:500]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    """Print the figures (and, with --record, keep them in benchmarks/results.yaml)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", default="10000,100000,1000000")
    parser.add_argument("--timeout", type=float, default=900.0, help="give a size up after this many seconds")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size: the median time and the highest peak are reported")
    parser.add_argument("--record", action="store_true", help="keep the figures in benchmarks/results.yaml (docs/benchmarks.md)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.rows.split(",")]
    results: list[tuple[int, float]] = []
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"pods-{n}.csv"
            generate(n, path)
            runs = [run_one(path, args.timeout) for _ in range(max(1, args.repeat))]
            done = [r for r in runs if r is not None]
            if not done:
                print(f"{n:>9,} rows: over {args.timeout:.0f} s, given up")
                continue
            wall, mib = statistics.median(w for w, _ in done), max(m for _, m in done)
            growth = ""
            if results:
                n0, t0 = results[-1]
                growth = f", growth exponent {math.log(wall / t0) / math.log(n / n0):.2f} from {n0:,}"
            spread = f" (median of {len(done)}: {min(w for w, _ in done):.1f}-{max(w for w, _ in done):.1f} s)" if len(done) > 1 else ""
            print(f"{n:>9,} rows: {wall:7.1f} s{spread}, {mib:6.0f} MiB peak{growth}")
            lines.append(f"{_short(n)} rows {wall:.1f} s{spread} / {mib:,.0f} MiB")
            results.append((n, wall))
            if n == 1_000_000:
                target = wall < TARGET_S and mib < TARGET_MIB
                lines[-1] += f" (target {TARGET_S:.0f} s / {TARGET_MIB / 1024:.0f} GiB: {'met' if target else 'not met'})"
    if args.record and lines:
        exponents = [math.log(t1 / t0) / math.log(n1 / n0) for (n0, t0), (n1, t1) in itertools.pairwise(results)]
        figure = "; ".join(lines) + "; growth exponent " + " then ".join(f"{e:.2f}" for e in exponents) if exponents else "; ".join(lines)
        load1, _, _ = os.getloadavg()
        conditions = f"{os.cpu_count()} cores, load average {load1:.1f}, the compiled replay's disk cache warm (its first compile adds about 6 s)"
        record("capacity-plan-scale", "`capacity plan` of generated pod lists (the trace's format and mix), fresh processes", figure, conditions)


def _short(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"


if __name__ == "__main__":
    main()
