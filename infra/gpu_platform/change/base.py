"""The base revision's plan: its own program and lockfile, run offline in a subprocess next to the working tree's.

The base may have other code than the working tree (a refactor, a lockfile bump), so its plan comes from
its own tree: `git archive REF infra <stack file>` into a temporary directory, then a Python process of
the same virtualenv with that tree's `infra/` first on PYTHONPATH. It starts before the working tree's
plan and runs beside it, so `check --base` costs about one plan of wall time on two cores, not two.
Plans are cached by the base's `infra/` tree hash and stack file blob hash: a base seen before costs nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.errors import ConfigError, Problem

# What the change rules need from a lockfile (the stack's effective one): attribute path per fact.
LOCK_FACTS: dict[str, tuple[str, ...]] = {
    "driverBranch": ("nvidia_driver", "branch"),
    "driverVersion": ("nvidia_driver", "version"),
    "cudaVersion": ("cuda", "version"),
    "amiDriverBranch": ("eks", "ami_driver_branch"),
    "amiRelease": ("eks", "ami_release_version"),
    "kubernetes": ("kubernetes", "version"),
}

# Runs with the BASE tree's gpu_platform: only its long-standing entry points (load_stack, run_program).
_SCRIPT = """
import json, sys
from pathlib import Path
from gpu_platform.errors import ConfigError
from gpu_platform.spec.loader import load_stack
from gpu_platform.engine import run_program
facts = json.loads(sys.argv[3])
try:
    config, spec = load_stack(Path(sys.argv[1]), sys.argv[2])
except ConfigError as err:
    print("\\n".join(str(p) for p in err.problems), file=sys.stderr)
    sys.exit(2)
plan = run_program(config, sys.argv[2])
def fact(names):
    v = getattr(spec, "lock", None)
    for n in names:
        v = getattr(v, n, None)
    return None if v is None else str(v)
doc = {"resources": [{**r.to_json(), "source": getattr(r, "source", None)} for r in plan.resources], "lock": {k: fact(v) for k, v in facts.items()}}
sys.stdout.write(json.dumps(doc))
"""


def lock_facts(lock: object) -> dict[str, str | None]:
    """The LOCK_FACTS of a lockfile object (None where it has no such attribute)."""
    out: dict[str, str | None] = {}
    for key, names in LOCK_FACTS.items():
        value: Any = lock
        for n in names:
            value = getattr(value, n, None)
        out[key] = None if value is None else str(value)
    return out


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=check)


def repository_root(stack_file: Path) -> Path:
    """The git work tree holding the stack file; ConfigError when it is in none."""
    result = _git(stack_file.resolve().parent, "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0:
        raise ConfigError([Problem(str(stack_file), "--base", "the stack file is not in a git repository", "allowed: a stack file of a git clone")])
    return Path(result.stdout.decode().strip())


def resolve_revision(root: Path, ref: str, file: str) -> str:
    """The commit a revision names; ConfigError for an unknown one."""
    result = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if result.returncode != 0 or not ref or ref.startswith("-"):
        raise ConfigError(
            [Problem(file, "--base", f"unknown git revision {ref!r}", "allowed: a branch, tag or commit of this clone (CI: fetch-depth 0)")]
        )
    return result.stdout.decode().strip()


def maintenance_trailers(root: Path, commit: str) -> tuple[str, ...]:
    """Every `GPU-Maintenance:` trailer of the commits between the base and HEAD (the change's own commits)."""
    fmt = "--format=%(trailers:key=GPU-Maintenance,valueonly,separator=%x0A)"
    result = _git(root, "log", fmt, f"{commit}..HEAD", check=False)
    if result.returncode != 0:
        return ()
    return tuple(line.strip() for line in result.stdout.decode().splitlines() if line.strip())


@dataclass
class BaseRevision:
    """The base's plan (`plan --format json` resources), its lock facts and its stack file's text."""

    ref: str
    commit: str
    resources: list[dict[str, Any]] = field(default_factory=list)
    lock: dict[str, str | None] = field(default_factory=dict)
    text: str = ""  # the stack file at the base ("" when the stack is new)

    @property
    def config(self) -> dict[str, Any]:
        """The base stack file's `config:` mapping."""
        doc = yaml.safe_load(self.text) if self.text else None
        return (doc or {}).get("config") or {} if isinstance(doc, dict) else {}


class BasePlanJob:
    """A running (or cached) plan of the stack at the base revision."""

    def __init__(self, root: Path, ref: str, stack_file: Path, stack: str):
        self.file = str(stack_file)
        self.commit = resolve_revision(root, ref, self.file)
        self.base = BaseRevision(ref, self.commit)
        rel = stack_file.resolve().relative_to(root).as_posix()
        self.label = f"{rel}@{ref}"
        shown = _git(root, "show", f"{self.commit}:{rel}", check=False)
        self.proc: subprocess.Popen[bytes] | None = None
        self.tmp: tempfile.TemporaryDirectory[str] | None = None
        self.cache: Path | None = None
        if shown.returncode != 0:
            return  # a new stack: everything is a create
        self.base.text = shown.stdout.decode()
        self.cache = _cache_file(root, self.commit, rel, stack)
        if self.cache is not None and self.cache.is_file():
            doc = json.loads(self.cache.read_text())
            self.base.resources, self.base.lock = doc["resources"], doc["lock"]
            return
        self.tmp = tempfile.TemporaryDirectory(prefix="gpu-platform-base-")
        archive = _git(root, "archive", "--format=tar", self.commit, "infra", rel).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(self.tmp.name, filter="data")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [f"{self.tmp.name}/infra", os.environ.get("PYTHONPATH")]))}
        env["GPU_PLATFORM_ROOT"] = self.tmp.name
        args = [sys.executable, "-c", _SCRIPT, f"{self.tmp.name}/{rel}", stack, json.dumps(LOCK_FACTS)]
        self.proc = subprocess.Popen(args, env=env, cwd=self.tmp.name, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def cancel(self) -> None:
        """Stop the base plan (the working tree turned out to be bad input) and remove its tree."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        if self.tmp is not None:
            self.tmp.cleanup()

    def result(self) -> BaseRevision:
        """Wait for the base plan; ConfigError (naming the base) when the base stack does not plan."""
        if self.proc is None:
            return self.base
        out, err = self.proc.communicate()
        tmp = self.tmp.name if self.tmp else ""
        if self.tmp is not None:
            self.tmp.cleanup()
        if self.proc.returncode != 0:
            lines = [ln.replace(tmp + "/", "") for ln in err.decode().splitlines() if ln.strip()]
            why = lines[-1] if lines else f"exit code {self.proc.returncode}"
            raise ConfigError([Problem(self.label, "--base", f"the base revision's stack does not plan: {why}", "allowed: a base whose stack plans")])
        doc = json.loads(out)
        self.base.resources, self.base.lock = doc["resources"], doc["lock"]
        if self.cache is not None:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            self.cache.write_text(json.dumps(doc))
        return self.base


def _cache_file(root: Path, commit: str, rel: str, stack: str) -> Path | None:
    """Where the plan of (base infra tree, base stack file, stack name) is kept; None when caching is off."""
    if os.environ.get("GPU_PLATFORM_BASE_CACHE", "1") == "0":
        return None
    ids = _git(root, "rev-parse", f"{commit}:infra", f"{commit}:{rel}", check=False)
    if ids.returncode != 0:
        return None
    key = hashlib.sha256(f"{ids.stdout.decode()}|{stack}|{sys.version}|{sys.prefix}".encode()).hexdigest()[:32]
    return root / ".cache" / "gpu-platform" / "base-plans" / f"{key}.json"
