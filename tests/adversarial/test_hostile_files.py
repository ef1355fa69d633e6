"""Hostile files: inputs and output folders built to make a command hurt its user.

Each case is what an attacker (or an unlucky copy) hands a command, and what must happen: exit 2, one line
naming the file, no traceback, nothing written or removed outside the output folder, and the refusal within
10 s and 1 GiB (each case runs the real CLI in a child process, whose peak memory is read back).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
SECONDS, BYTES = 10.0, 2**30

BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join(["*" + chr(97 + i)] * 9) + "]\n" for i in range(8)
)
DEEP_YAML = "[" * 100_000 + "]" * 100_000
PROMETHEUS_1E20 = json.dumps(
    {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": {"tenant": "ml-sandbox", "resource": "nvidia_com_gpu_shared"}, "values": [[1700000000, "1"], [1e20, "1"]]}],
        },
    }
)
DEEP_JSON = '{"data": ' + "[" * 100_000 + "]" * 100_000 + "}"


def indented(text: str, spaces: int) -> str:
    """`text` with every line indented (to nest a document under a key)."""
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


def stack_with(tail: str) -> str:
    """The dev stack file with `tail` appended under `config:` (a key the loader reads)."""
    return STACK.read_text() + tail


@dataclass(frozen=True)
class Hostile:
    """One hostile input: how to lay it out under a folder, the CLI arguments, and what the one line must say."""

    name: str
    setup: Callable[[Path], list[str]]
    says: str


def _file(name: str, content: str | bytes) -> Callable[[Path], Path]:
    """Lay out `name` with `content` (text as UTF-8, bytes as they are) under the case's folder."""

    def make(d: Path) -> Path:
        path = d / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return path

    return make


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


TRACE_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def _ten_million_rows(d: Path) -> list[str]:
    """A pod list the size of ten million trace rows (670 MB, sparse: nothing is written past the header)."""
    path = _file("pods-10m.csv", TRACE_HEADER)(d)
    with path.open("r+b") as f:
        f.truncate(10_000_000 * 67)
    return ["capacity", "plan", "--demand", str(path)]


def _stack(text: str) -> Callable[[Path], list[str]]:
    return lambda d: ["plan", "--config", str(_file("Pulumi.evil.yaml", text)(d))]


CASES = [
    Hostile("stack-alias-bomb", _stack(stack_with("  gpu-platform:tags:\n" + indented(BOMB, 4))), "expands to more than"),
    Hostile("stack-alias-bomb-top-level", _stack(BOMB), "expands to more than"),
    Hostile("stack-100k-nested-brackets", _stack("config:\n  gpu-platform:tags: " + DEEP_YAML + "\n"), "nested deeper than 64 levels"),
    Hostile("stack-100k-nested-blocks", _stack("config:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(200))), "nested deeper than 64"),
    Hostile("stack-20-mib", _stack("# " + "x" * (20 * 2**20) + "\n"), "more than the 16 MiB"),
    Hostile(
        "workload-alias-bomb",
        lambda d: ["explain", "--config", str(STACK), "--workload", str(_file("w.yaml", "kind: Pod\n" + BOMB)(d))],
        "expands to more than",
    ),
    Hostile(
        "workload-deep",
        lambda d: ["explain", "--config", str(STACK), "--workload", str(_file("w.yaml", DEEP_YAML)(d))],
        "nested deeper than 64 levels",
    ),
    Hostile(
        "demand-alias-bomb",
        lambda d: ["capacity", "plan", "--demand", str(_file("d.yaml", "demand:\n" + indented(BOMB, 2))(d))],
        "expands to more than",
    ),
    Hostile(
        "demand-deep-json",
        lambda d: ["capacity", "plan", "--demand", str(_file("d.json", DEEP_JSON)(d))],
        "nested deeper than 64 levels",
    ),
    Hostile(
        "demand-timestamp-1e20",
        lambda d: ["capacity", "plan", "--config", str(STACK), "--demand", str(_file("d.json", PROMETHEUS_1E20)(d))],
        "is not a date a Prometheus sample can carry",
    ),
    # A key carrying a newline and an escape sequence: echoed escaped, so it cannot split the line, forge a
    # `::error` workflow command in a CI log or drive the terminal (errors.printable).
    Hostile(
        "stack-key-with-newline-and-escape", _stack(stack_with('  "gpu-platform:ta\\e[2Jgs\\n::error file=x::forged": 1\n')), "\\x1b[2Jgs\\n::error"
    ),
    Hostile("stack-key-with-bidi-override", _stack(stack_with('  "gpu-platform:t\\u202eags": {}\n')), "t\\u202eags"),
    Hostile(
        "stack-python-object-tag",
        _stack('config:\n  gpu-platform:tags: !!python/object/apply:os.system ["id"]\n'),
        "could not determine a constructor",
    ),
    Hostile("stack-tab-indentation", _stack("config:\n\tgpu-platform:tags: {}\n"), "found character that cannot start any token"),
    Hostile("stack-not-utf8", lambda d: ["plan", "--config", str(_file("Pulumi.evil.yaml", b"\xff\xfe\x00config")(d))], "not UTF-8 text"),
    Hostile("stack-is-a-fifo", lambda d: ["plan", "--config", str(_fifo(d / "Pulumi.evil.yaml"))], "is a FIFO, not a regular file"),
    Hostile("stack-links-to-dev-zero", lambda d: ["plan", "--config", str(_link(d / "Pulumi.evil.yaml", Path("/dev/zero")))], "is a device"),
    Hostile("stack-top-level-list", _stack("- config\n- x\n"), "top level is a list, not a mapping"),
    Hostile(
        "workload-is-a-fifo",
        lambda d: ["explain", "--config", str(STACK), "--workload", str(_fifo(d / "w.yaml"))],
        "is a FIFO, not a regular file",
    ),
    Hostile(
        "workload-two-documents",
        lambda d: ["explain", "--config", str(STACK), "--workload", str(_file("w.yaml", "---\nkind: Pod\n---\nkind: Pod\n")(d))],
        "2 documents",
    ),
    Hostile(
        "trace-time-1e23",
        lambda d: [
            "capacity",
            "plan",
            "--demand",
            str(_file("t.csv", TRACE_HEADER + "p1,1000,1000,1,1000,,LS,Running,100,99999999999999999999999,100\n")(d)),
        ],
        "is out of range; allowed: seconds from the trace's start",
    ),
    Hostile(
        "trace-negative-gpus",
        lambda d: ["capacity", "plan", "--demand", str(_file("t.csv", TRACE_HEADER + "p1,1000,1000,-3,1000,,LS,Running,100,200,100\n")(d))],
        "out of range",
    ),
    Hostile(
        "trace-deleted-before-created",
        lambda d: ["capacity", "plan", "--demand", str(_file("t.csv", TRACE_HEADER + "p1,1000,1000,1,1000,,LS,Running,300,200,100\n")(d))],
        "is before creation_time",
    ),
    # Sizes that once made the planner loop for ever (Erlang C walks servers one by one; sizing walks GPUs).
    Hostile(
        "demand-peak-1e30",
        lambda d: ["capacity", "plan", "--demand", str(_file("d.yaml", "demand:\n- {team: t, class: training, p50: 1, p95: 2, peak: 1.0e+30}\n")(d))],
        "demand[0].peak: 1e+30 is out of range; allowed: <= 1000000",
    ),
    Hostile(
        "demand-offered-load-1e11",
        lambda d: [
            "capacity",
            "plan",
            "--demand",
            str(
                _file(
                    "d.yaml",
                    "demand:\n- {team: t, class: inference, p50: 1, p95: 2, requests: {arrivalRate: 1.0e+7, serviceTime: 86400, targetWait: 1}}\n",
                )(d)
            ),
        ],
        "erlangs (concurrent requests); allowed: at most 1,000,000",
    ),
    Hostile("demand-is-a-device", lambda d: ["capacity", "plan", "--demand", "/dev/zero"], "is a device, not a regular file"),
    Hostile("demand-ten-million-rows", _ten_million_rows, "more than the 256 MiB this input may hold"),
    Hostile("render-into-root", lambda d: ["render", "--config", str(STACK), "--out", "/"], "is the root of the file system"),
    Hostile("render-into-home", lambda d: ["render", "--config", str(STACK), "--out", str(Path.home())], "is the home folder"),
    Hostile("render-into-the-repository", lambda d: ["render", "--config", str(STACK), "--out", str(ROOT)], "is a repository or project root"),
    Hostile(
        "render-onto-a-file",
        lambda d: ["render", "--config", str(STACK), "--out", str(_file("out", "precious\n")(d))],
        "exists and is not a folder",
    ),
]


def run_cli(args: list[str], cwd: Path) -> tuple[int, str, float, int]:
    """(exit code, stderr, seconds, peak resident bytes) of `gpu-platform ARGS` in a child process of its own."""
    peak_file = cwd / ".peak"
    code = (
        "import os, resource, sys\n"
        "from gpu_platform.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "open(os.environ['PEAK_FILE'], 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
        "sys.exit(rc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GPU_PLATFORM_DEBUG"} | {"PEAK_FILE": str(peak_file)}
    start = time.monotonic()
    try:
        cmd = [sys.executable, "-c", code, *args]
        done = subprocess.run(cmd, check=False, cwd=cwd, capture_output=True, text=True, env=env, timeout=SECONDS * 6)
    except subprocess.TimeoutExpired:
        pytest.fail(f"gpu-platform {' '.join(args)[:80]} still running after {SECONDS * 6} s")
    elapsed = time.monotonic() - start
    peak = int(peak_file.read_text()) * 1024 if peak_file.exists() else 0
    return done.returncode, done.stderr, elapsed, peak


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_input_is_one_line_and_exit_2(case: Hostile, tmp_path: Path) -> None:
    args = case.setup(tmp_path)
    code, err, elapsed, peak = run_cli(args, tmp_path)
    assert code == 2, f"exit {code}: {err[-500:]}"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    assert case.says in lines[0], lines[0]
    assert elapsed < SECONDS, f"refused after {elapsed:.1f} s"
    assert peak < BYTES, f"peak {peak / 2**20:.0f} MiB"
    assert not (tmp_path / "out" / "manifests").exists()
