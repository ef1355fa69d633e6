"""Wall time of `gpu-platform check --base` on prod against `gpu-platform check --stack prod` (target: under 2x).

A temporary git repository holds this checkout's `infra/` and `stacks/` as the base commit; prod then
bumps the EKS AMI in its stack file (a change that recycles every reserved node, so the change rules have
work to do). Each command runs as a fresh process, best and median of N runs, in the same invocation,
interleaved (one run of each in turn), so a neighbour's load falls on all of them alike:

- `check --stack prod`, the reference;
- `check --base` cold (base plan cache off), the base's code being the running code: the base is planned
  in the same process after the working tree (what a stack-only pull request gets; the target);
- `check --base` cold with the base planned in its own process (GPU_PLATFORM_BASE_PROCESS=1: what a pull
  request that also changes the program gets);
- `check --base` with the base plan cached (a re-run of the same pull request).

Wall time and CPU time (user + system, the process and its children) are both printed: on a shared,
overloaded machine wall time is mostly other people's load, while CPU time is what the command costs and
what its wall time becomes once the cores are busy. `python benchmarks/check_base_bench.py [ROUNDS]`.
Prints figures only; it never fails on timing.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPU_PLATFORM = ROOT / ".venv" / "bin" / "gpu-platform"
RUNS = 3
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
AMI = "1.35.7-20260812"
BUMP = f"""  gpu-platform:versions:
    eks: {{ami_release_version: "{AMI}"}}
    support: {{eks_ami: {{"{AMI}": {{ends: "2027-03-27", source: "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"}}}}}}
"""


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process and its children, exit code) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # bad input or a crash: a figure of nothing
        raise SystemExit(f"{' '.join(argv[1:])}: exit {proc.returncode}: {proc.stderr.strip()}")
    return seconds, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), proc.returncode


def interleaved(variants: dict[str, tuple[list[str], dict[str, str]]], cwd: Path, runs: int) -> dict[str, tuple[list[float], list[float]]]:
    """`runs` rounds, each running every variant once: (wall seconds, CPU seconds) per variant."""
    times: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label in variants}
    codes: dict[str, set[int]] = {label: set() for label in variants}
    for _ in range(runs):
        for label, (argv, env) in variants.items():
            seconds, cpu, code = timed(argv, cwd, env)
            times[label][0].append(seconds)
            times[label][1].append(cpu)
            codes[label].add(code)
    for label, (walls, cpus) in times.items():
        print(
            f"{label:<66} wall best {min(walls):6.2f} s  median {statistics.median(walls):6.2f} s"
            f"   CPU median {statistics.median(cpus):6.2f} s   exit {codes[label]}"
        )
    return times


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS  # rounds (default 3)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        shutil.copytree(ROOT / "infra", repo / "infra", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shutil.copytree(ROOT / "stacks", repo / "stacks")
        shutil.copy(ROOT / "Pulumi.yaml", repo / "Pulumi.yaml")  # `--stack NAME` finds the repository by it
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
            subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)
        prod = repo / "stacks" / "Pulumi.prod.yaml"
        prod.write_text(prod.read_text().replace("  gpu-platform:tags:", BUMP + "  gpu-platform:tags:"))
        env = {**os.environ}
        env.pop("GPU_PLATFORM_BASE_PROCESS", None)
        cold = {**env, "GPU_PLATFORM_BASE_CACHE": "0"}
        base = [str(GPU_PLATFORM), "check", "--stack", "prod", "--base", "main", "--format", "json"]
        subprocess.run(base, cwd=repo, env=env, capture_output=True, check=False)  # fills the base plan cache
        print(f"prod, AMI bump against the base commit; best and median of {runs} interleaved runs, wall time incl. start-up, {os.cpu_count()} CPUs")
        times = interleaved(
            {
                "check --stack prod": ([str(GPU_PLATFORM), "check", "--stack", "prod", "--format", "json"], env),
                "check --stack prod --base main (cold, base planned in-process)": (base, cold),
                "check --stack prod --base main (cold, base in its own process)": (base, {**cold, "GPU_PLATFORM_BASE_PROCESS": "1"}),
                "check --stack prod --base main (cached base)": (base, env),
            },
            repo,
            runs,
        )
    for i, what in ((0, "wall"), (1, "CPU")):
        state, here, own, warm = (statistics.median(ts[i]) for ts in times.values())
        verdict = "met" if here / state < 2 else "NOT met"
        print(
            f"ratio check --base / check ({what}, medians): cold in-process {here / state:.2f}, cold own process {own / state:.2f},"
            f" cached base {warm / state:.2f}   (target under 2, cold in-process: {verdict})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
