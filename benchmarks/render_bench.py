"""Benchmark `gpu-platform render`: wall time and peak memory for prod and a generated 100-pool/200-tenant stack.

Each run is a fresh process (imports included), as a user runs it; prints figures, never fails on timing.
Targets (foundation): prod < 5 s, generated 100 pools / 200 tenants < 30 s on a 2-core machine.
Usage: .venv/bin/python benchmarks/render_bench.py [--repeat N] [--record]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import yaml
from generate_stack import generate
from results import record

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "gpu_platform.cli"]
TARGETS = {"prod": 5.0, "generated 100 pools / 200 tenants": 30.0}


def measure(args: list[str], out: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, files written) of one fresh `gpu-platform render` process."""
    start = time.perf_counter()
    proc = subprocess.Popen([*CLI, "render", "--out", str(out), *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        assert proc.stderr is not None
        raise SystemExit(f"render failed: {proc.stderr.read().decode()[:500]}")
    files = sum(1 for p in out.rglob("*.yaml"))
    return wall, usage.ru_maxrss / 1024, files


def main() -> None:
    """Run the benchmark and print a small table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="replace this benchmark's entries in benchmarks/results.yaml")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "Pulumi.gen-100x200.yaml"
        big.write_text(yaml.safe_dump(generate(100, 200)))
        cases = [("prod", ["--stack", "prod"]), ("generated 100 pools / 200 tenants", ["--config", str(big)])]
        print(f"{'CASE':<36} {'FILES':>6} {'WALL s':>8} {'PEAK MiB':>9} {'TARGET s':>9}")
        for name, args in cases:
            runs = [measure(args, Path(tmp) / "out") for _ in range(opts.repeat)]
            wall, peak, files = min(runs, key=lambda r: r[0])
            verdict = "ok" if wall < TARGETS[name] else "OVER"
            print(f"{name:<36} {files:>6} {wall:>8.2f} {peak:>9.0f} {TARGETS[name]:>9.0f} {verdict}")
            if opts.record:
                key, label = ("render-prod", "`render --stack prod`") if name == "prod" else ("render-generated", f"`render` of the {name} stack")
                met = "met" if verdict == "ok" else "not met"
                record(key, label, f"{wall:.1f} s, {peak:.0f} MiB peak, {files:,} files (target {TARGETS[name]:.0f} s: {met})")


if __name__ == "__main__":
    main()
