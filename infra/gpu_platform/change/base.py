"""The base revision's plan: its own program and lockfile, run offline in a subprocess next to the working tree's.

The base may have other code than the working tree (a refactor, a lockfile bump), so its plan comes from
its own tree: `git archive REF infra <stack file>` into a temporary directory, then a Python process of
the same virtualenv with that tree's `infra/` first on PYTHONPATH. It starts before the working tree's
plan and runs beside it.

Most changes touch only stack files: when the base's `infra/gpu_platform` is byte for byte the package
running now (git blob hashes), the base is planned in this process after the working tree instead. A
second interpreter would import and compile the SDKs again (seconds of CPU, which on a busy two-core CI
runner is wall time), while a second plan in a warm process costs one to two seconds.
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
from typing import Any, NoReturn

import yaml

import gpu_platform
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.input_limits import STACK_FILE, check_yaml
from gpu_platform.spec.loader import project_config, project_file
from gpu_platform.spec.pulumi_yaml import PulumiLoader

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
    project_text: str = ""  # the project's Pulumi.yaml at the base ("" when it had none)

    @property
    def config(self) -> dict[str, Any]:
        """The config `pulumi up` at the base read: the stack file's `config:` over the base Pulumi.yaml's defaults."""
        if not self.text:
            return {}
        check_yaml(self.text, f"{self.ref}:stack file", STACK_FILE, "allowed: a Pulumi stack file")
        doc = yaml.load(self.text, Loader=PulumiLoader)  # as `pulumi up` at the base read it
        own = (doc or {}).get("config") or {} if isinstance(doc, dict) else {}
        defaults = project_config(self.project_text, f"{self.ref}:Pulumi.yaml") if self.project_text else {}
        return {**defaults, **own}


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
        self.local: tuple[Path, str] | None = None  # (base stack file, stack): planned here, in result()
        self.tmp: tempfile.TemporaryDirectory[str] | None = None
        self.cache: Path | None = None
        if shown.returncode != 0:
            return  # a new stack: everything is a create
        self.base.text = shown.stdout.decode()
        # The project file the stack belongs to, as it was at the base: its config defaults are part of the base.
        head_project = project_file(stack_file)
        project_rel = head_project.resolve().relative_to(root).as_posix() if head_project is not None else "Pulumi.yaml"
        project = _git(root, "show", f"{self.commit}:{project_rel}", check=False)
        if project.returncode == 0:
            self.base.project_text = project.stdout.decode()
        self.cache = _cache_file(root, self.commit, rel, stack)
        if self.cache is not None and self.cache.is_file():
            doc = json.loads(self.cache.read_text())
            self.base.resources, self.base.lock = doc["resources"], doc["lock"]
            return
        self.tmp = tempfile.TemporaryDirectory(prefix="gpu-platform-base-")
        # GPU_PLATFORM_BASE_PROCESS=1 plans the base in its own process even when the code is the same
        if os.environ.get("GPU_PLATFORM_BASE_PROCESS") != "1" and same_code(root, self.commit):
            self.local = (Path(self.tmp.name) / rel, stack)
            self.local[0].parent.mkdir(parents=True, exist_ok=True)
            self.local[0].write_bytes(shown.stdout)
            if project.returncode == 0:
                (Path(self.tmp.name) / project_rel).write_bytes(project.stdout)
            return
        paths = ["infra", rel, *([project_rel] if project.returncode == 0 else [])]
        archive = _git(root, "archive", "--format=tar", self.commit, *paths).stdout
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
        if self.local is not None:
            doc = self._plan_here(*self.local)
        elif self.proc is None:
            return self.base
        else:
            out, err = self.proc.communicate()
            tmp = self.tmp.name if self.tmp else ""
            if self.tmp is not None:
                self.tmp.cleanup()
            if self.proc.returncode != 0:
                lines = [ln.replace(tmp + "/", "") for ln in err.decode().splitlines() if ln.strip()]
                self._fail(lines or [f"exit code {self.proc.returncode}"])
            doc = json.loads(out)
        self.base.resources, self.base.lock = doc["resources"], doc["lock"]
        if self.cache is not None:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            self.cache.write_text(json.dumps(doc))
        return self.base

    def _fail(self, whys: list[str]) -> NoReturn:
        """Every problem of the base stack, each named as the base's (the loader reports them all in one run)."""
        allowed = "allowed: a base whose stack plans"
        raise ConfigError([Problem(self.label, "--base", f"the base revision's stack does not plan: {why}", allowed) for why in whys])

    def _plan_here(self, stack_file: Path, stack: str) -> dict[str, Any]:
        """What `_SCRIPT` prints, planned in this process (the base runs the same code as the working tree)."""
        from gpu_platform.engine import run_program  # noqa: PLC0415 (heavy, and already imported by the caller)
        from gpu_platform.spec.loader import load_stack  # noqa: PLC0415

        tmp = self.tmp.name if self.tmp else ""
        try:
            config, spec = load_stack(stack_file, stack)
            plan = run_program(config, stack, spec)
        except ConfigError as err:
            self._fail([str(p).replace(tmp + "/", "") for p in err.problems])
        finally:
            if self.tmp is not None:
                self.tmp.cleanup()
        return {"resources": [{**r.to_json(), "source": r.source} for r in plan.resources], "lock": lock_facts(spec.lock)}


def same_code(root: Path, commit: str) -> bool:
    """True when `commit`'s `infra/gpu_platform` holds exactly the files of the package running now (git blob ids)."""
    listing = _git(root, "ls-tree", "-r", commit, "infra/gpu_platform", check=False)
    if listing.returncode != 0:
        return False
    base: dict[str, str] = {}
    for row in listing.stdout.decode().splitlines():
        meta, _, path = row.partition("\t")
        base[path.removeprefix("infra/gpu_platform/")] = meta.split()[2]
    package = Path(gpu_platform.__file__).parent
    here = {
        f.relative_to(package).as_posix(): _blob_id(f.read_bytes())
        for f in package.rglob("*")
        if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc"
    }
    return here == base


def _blob_id(data: bytes) -> str:
    """The id git gives a file's content (`git hash-object`): sha1 of `blob <size>`, a NUL byte, then the data."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _cache_file(root: Path, commit: str, rel: str, stack: str) -> Path | None:
    """Where the plan of (base infra tree, base stack file, stack name) is kept; None when caching is off."""
    if os.environ.get("GPU_PLATFORM_BASE_CACHE", "1") == "0":
        return None
    ids = _git(root, "rev-parse", f"{commit}:infra", f"{commit}:{rel}", check=False)
    if ids.returncode != 0:
        return None
    key = hashlib.sha256(f"{ids.stdout.decode()}|{stack}|{sys.version}|{sys.prefix}".encode()).hexdigest()[:32]
    return root / ".cache" / "gpu-platform" / "base-plans" / f"{key}.json"


def changed_paths(root: Path, commit: str, prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """Repository paths under `prefixes` that differ between `commit` and the working tree (new untracked files included)."""
    specs = [p.rstrip("/") for p in prefixes]
    diff = subprocess.run(["git", "diff", "--name-only", commit, "--", *specs], cwd=root, capture_output=True, text=True, check=False)
    new = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "--", *specs], cwd=root, capture_output=True, text=True, check=False)
    return tuple(sorted({line for line in (diff.stdout + new.stdout).splitlines() if line}))
