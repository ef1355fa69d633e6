"""The plan against the mock-engine floor in executed machine instructions: the same ratio as plan_bench.py, without the noise.

CPU seconds on a shared virtual machine drift by tens of percent from one minute to the next (a fixed
pure-Python loop varies by 60 % here), so plan_bench.py's ratio is a median of back-to-back pairs with a
wide range. Valgrind's cachegrind counts every instruction a process executes (`I refs`; interpreter,
C extensions and collector included), and that count does not depend on what else the machine runs:
one run of each gives the ratio. It measures work, not time: the collector's walks over memory cost
more cycles per instruction than the rest, so read it next to plan_bench.py's CPU ratio, not instead.
Both processes start from bytecode caches and run with PYTHONHASHSEED=0 (set and dict order, and so the
work, repeat exactly). Needs `valgrind` (Debian: `apt-get install valgrind`); about 25x slower than a
plain run, so the generated stack takes some minutes.
Usage: .venv/bin/python benchmarks/plan_instructions.py [--only prod|generated] [--record]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import yaml
from generate_stack import generate
from plan_bench import CLI, ROOT, plan_probe, warm_bytecode
from results import record

VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--branch-sim=no", "--cachegrind-out-file=/dev/null"]
I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(cmd: list[str]) -> int:
    """Instructions one fresh process executes (cachegrind's `I refs`), its output discarded."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run([*VALGRIND, *cmd], check=False, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = I_REFS.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(cmd[:3])} under valgrind failed (exit {proc.returncode}): {proc.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def against_floor(args: list[str]) -> tuple[int, int, int]:
    """(resources, plan instructions, floor instructions) for one stack.

    One uncounted plan (the probe) names the provider modules the floor loads and the resource count it
    registers; the counted plan and floor then run side by side (the counts do not depend on it).
    """
    modules, count = plan_probe(args)
    floor = [sys.executable, str(ROOT / "benchmarks/mock_floor.py"), str(count), *modules]
    with ThreadPoolExecutor(2) as pool:
        plan, base = pool.map(instructions, [[*CLI, "plan", "--format", "json", *args], floor])
    return count, plan, base


NAMES = {
    "prod": "`plan --stack prod`",
    "multi": "`plan --stack multi` (MultiKueue manager and two workers)",
    "generated": "`plan` of a generated 100 pools / 200 tenants stack",
}


def main() -> None:
    """Count, print, and optionally record, for prod, the multi-cluster stack and the generated 100 pools / 200 tenants stack."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=["prod", "multi", "generated"])
    parser.add_argument("--record", action="store_true", help="replace these benchmarks' entries in benchmarks/results.yaml")
    opts = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    warm_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        generated = Path(tmp) / "Pulumi.gen-100x200.yaml"
        generated.write_text(yaml.safe_dump(generate(100, 200)))
        cases = {"prod": ["--stack", "prod"], "multi": ["--stack", "multi"], "generated": ["--config", str(generated)]}
        for label, args in cases.items():
            if opts.only not in (None, label):
                continue
            count, plan, floor = against_floor(args)
            # The 1.5x target is on time (plan_bench.py); this is the same ratio in work, without the noise.
            figure = f"{count:,} resources; plan {plan / 1e9:.2f} G instructions vs floor {floor / 1e9:.2f} G: {plan / floor:.3f}x"
            print(f"{label}: {figure}")
            if opts.record:
                name = NAMES[label]
                record(
                    f"plan-{label}-instructions",
                    f"{name} vs the mock-engine floor, instructions executed (valgrind cachegrind)",
                    figure,
                    "deterministic: the same count on any load; PYTHONHASHSEED=0, bytecode caches for both",
                )


if __name__ == "__main__":
    main()
