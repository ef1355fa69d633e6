"""Wall time of `gpu-platform check --base` on prod against `gpu-platform check --stack prod` (target: under 2x).

A temporary git repository holds this checkout's `infra/` and `stacks/` as the base commit; prod then
bumps the EKS AMI in its stack file (a change that recycles every reserved node, so the change rules have
work to do). Each command runs as a fresh process, best and median of N runs, in the same invocation:
`check --base` cold (the base plan cache off: base planned in a subprocess beside the working tree) and
warm (the base plan cached by the base's tree hash, as on a re-run of the same pull request).
Prints figures only; it never fails on timing.
"""

from __future__ import annotations

import os
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


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc.returncode


def bench(label: str, argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    times, codes = zip(*(timed(argv, cwd, env) for _ in range(RUNS)), strict=True)
    print(f"{label:<60} best {min(times):6.2f} s   median {statistics.median(times):6.2f} s   exit {set(codes)}")
    return min(times)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        shutil.copytree(ROOT / "infra", repo / "infra", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shutil.copytree(ROOT / "stacks", repo / "stacks")
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
            subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)
        prod = repo / "stacks" / "Pulumi.prod.yaml"
        prod.write_text(prod.read_text().replace("  gpu-platform:tags:", BUMP + "  gpu-platform:tags:"))
        env = {**os.environ}
        cold = {**env, "GPU_PLATFORM_BASE_CACHE": "0"}
        print(f"prod, AMI bump against the base commit; best and median of {RUNS} runs each, wall time incl. start-up, {os.cpu_count()} CPUs")
        state = bench("gpu-platform check --stack prod", [str(GPU_PLATFORM), "check", "--stack", "prod", "--format", "json"], repo, env)
        base = [str(GPU_PLATFORM), "check", "--stack", "prod", "--base", "main", "--format", "json"]
        first = bench("gpu-platform check --stack prod --base main (cold)", base, repo, cold)
        subprocess.run(base, cwd=repo, env=env, capture_output=True, check=False)  # fills the base plan cache
        warm = bench("gpu-platform check --stack prod --base main (cached base)", base, repo, env)
    verdict = "met" if first / state < 2 else "NOT met"
    print(f"ratio check --base / check: cold {first / state:.2f}, cached base {warm / state:.2f}   (target under 2, cold: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
