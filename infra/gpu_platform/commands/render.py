"""`gpu-platform render --out DIR`: every Kubernetes object and Helm values of the offline plan, as YAML.

Rendered from the recorded inputs of every `kubernetes:*` resource, so the files are exactly what
`pulumi up` would send. Layout under DIR:

- `manifests/<namespace or _cluster>/<kind>-<name>.yaml`: one object per file
- `patches/<kind>-<name>.yaml`: server-side-apply patches (on-prem node labels, and the pool's taints as the `gpu-platform.io/taints` annotation)
- `helm/<release>/values.yaml` and `helm/<release>/release.yaml` (chart, version, repository, namespace)
- `prometheus/gpu-platform-rules.yaml`: the PrometheusRule groups as a plain rule file (for promtool)
- `.gpu-platform-render.json`: every file written, with its sha256. The next render removes only files
  listed there that it no longer writes and nobody changed since; anything else in DIR is left alone.

A render never follows a symbolic link inside DIR (each path is opened relative to its folder with
O_NOFOLLOW), takes a lock on DIR (a second render at once refuses), and refuses `/`, the home folder and a
repository root as DIR: each is one line and exit 2, before anything is written.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from gpu_platform.commands.plan import plan_stack
from gpu_platform.engine import Plan, PlannedResource
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.input_limits import MANIFEST as MANIFEST_LIMITS
from gpu_platform.input_limits import check_json

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
RULES_FILE = "prometheus/gpu-platform-rules.yaml"
MANIFEST = ".gpu-platform-render.json"  # what the last render wrote: the only files a render ever removes
OUTPUT_DIRS = ("manifests", "patches", "helm", "prometheus")


def _sorted(value: Any) -> Any:
    """Mappings with sorted keys at every depth (the engine's key order is not stable); lists keep order."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def manifest_of(resource: PlannedResource) -> dict[str, Any]:
    """The object a recorded resource applies: apiVersion, kind, metadata first, the rest sorted."""
    inputs = _sorted(resource.inputs)
    head = {k: inputs[k] for k in ("apiVersion", "kind", "metadata") if k in inputs}
    return head | {k: v for k, v in inputs.items() if k not in head}


def is_object(resource: PlannedResource) -> bool:
    """True for a recorded Kubernetes object (not the provider, not a Helm release)."""
    return resource.type.startswith("kubernetes:") and resource.type != HELM_RELEASE and "apiVersion" in resource.inputs


def is_manifest(rel: str) -> bool:
    """A rendered Kubernetes object or patch: `manifests/...`, `patches/...`, or the same under `workers/<worker>/`."""
    return re.match(r"^(workers/[^/]+/)?(manifests|patches)/", rel) is not None


def render_plan(plan: Plan) -> dict[str, Any]:
    """Relative path -> document, for every object, patch, Helm release and the rule file."""
    files: dict[str, Any] = {}
    # A MultiKueue stack's workers each get a folder of their own: `workers/<worker>/manifests/...`.
    clusters = plan.clusters()
    for r in plan.resources:
        worker = clusters.get(r.name)
        at = f"workers/{worker.removesuffix('-worker')}/" if worker else ""
        if r.type == HELM_RELEASE:
            i = r.inputs
            release = i["name"]
            files[f"{at}helm/{release}/values.yaml"] = _sorted(i.get("values", {}))
            repo = (i.get("repositoryOpts") or {}).get("repo")
            files[f"{at}helm/{release}/release.yaml"] = {
                "name": release,
                "namespace": i.get("namespace"),
                "chart": i["chart"],
                "version": i["version"],
                "repository": repo,
            }
        elif is_object(r):
            m = manifest_of(r)
            kind, meta = m["kind"].lower(), m["metadata"]
            if r.type.endswith("Patch"):
                path = f"{at}patches/{kind}-{meta['name']}.yaml"
            else:
                path = f"{at}manifests/{meta.get('namespace', '_cluster')}/{kind}-{meta['name']}.yaml"
            if path in files:
                raise ValueError(f"two objects render to {path}")
            files[path] = m
            if m["kind"] == "PrometheusRule":
                files[at + RULES_FILE] = {"groups": m["spec"]["groups"]}
    return dict(sorted(files.items()))


@dataclass(frozen=True)
class Written:
    """What one render did under its output folder."""

    written: tuple[str, ...]
    removed: tuple[str, ...]  # files an earlier render wrote that this one no longer writes
    kept: tuple[str, ...]  # such files that were changed since: someone else's now, left alone


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


ALLOWED_OUT = "allowed: a folder of its own for rendered files (e.g. out/<stack>), not /, the home folder or a repository root"


def check_out(out: Path) -> None:
    """Refuse an output folder whose files a render must not own: /, the home folder, a repository or project root, a file."""
    file = str(out)
    if out.exists() and not out.is_dir():
        raise ConfigError([Problem(file, "", "exists and is not a folder", ALLOWED_OUT)])
    resolved = out.resolve()
    if resolved == Path(resolved.anchor):
        raise ConfigError([Problem(file, "", "is the root of the file system", ALLOWED_OUT)])
    if resolved == Path.home().resolve():
        raise ConfigError([Problem(file, "", "is the home folder", ALLOWED_OUT)])
    for marker in (".git", "Pulumi.yaml", "pyproject.toml"):
        if (resolved / marker).exists():
            raise ConfigError([Problem(file, "", f"is a repository or project root (it holds {marker})", ALLOWED_OUT)])


_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class _Folder:
    """The output folder, opened once; every path below it is reached through folder descriptors that never follow a link.

    A symlink planted anywhere inside (a folder `manifests` pointing elsewhere, a file linked to
    ~/.ssh/authorized_keys) cannot make a render write, read or delete outside: each component is opened with
    O_NOFOLLOW relative to its parent's descriptor (openat(2)), files are written under a temporary name
    and renamed over the old one (rename(2) replaces a link itself, never its target), and only regular
    files are removed.
    """

    def __init__(self, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))

    def close(self) -> None:
        os.close(self.fd)

    def _refuse(self, rel: str, what: str) -> NoReturn:
        raise ConfigError(
            [Problem(str(self.out), rel, what, "allowed: real folders and files inside the output folder (render never follows a link)")]
        )

    def _parent(self, rel: str, create: bool) -> int | None:
        """A descriptor of `rel`'s folder (the caller closes it unless it is the root), or None when missing and not created."""
        fd = self.fd
        parts = rel.split("/")[:-1]
        for i, part in enumerate(parts):
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    nxt = -1
                else:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError:  # ELOOP: a symlink; ENOTDIR: a file where a folder belongs
                self._close(fd)
                self._refuse("/".join(parts[: i + 1]), "is a symbolic link or not a folder")
            self._close(fd)
            if nxt == -1:
                return None
            fd = nxt
        return fd

    def _close(self, fd: int) -> None:
        if fd != self.fd:
            os.close(fd)

    def kind(self, rel: str) -> str:
        """`missing`, `file` or `other` (a link, a folder, a device) for `rel`, following no link."""
        fd = self._parent(rel, create=False)
        if fd is None:
            return "missing"
        try:
            st = os.stat(rel.rsplit("/", 1)[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return "missing"
        finally:
            self._close(fd)
        return "file" if stat.S_ISREG(st.st_mode) else "other"

    def read(self, rel: str, limit: int) -> bytes | None:
        """The bytes of a regular file (None when missing); a link or anything else is refused.

        One open with O_NOFOLLOW (a link fails it with ELOOP) and an fstat of what was opened: no window between
        looking and reading. O_NONBLOCK keeps a FIFO planted there from blocking the open.
        """
        fd = self._parent(rel, create=False)
        if fd is None:
            return None
        try:
            f = os.open(rel.rsplit("/", 1)[-1], os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError:
            self._refuse(rel, "is a symbolic link or not a regular file")
        finally:
            self._close(fd)
        with os.fdopen(f, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                self._refuse(rel, "is a symbolic link or not a regular file")
            data = handle.read(limit + 1)
        if len(data) > limit:
            self._refuse(rel, f"is larger than {limit} bytes")
        return data

    def write(self, rel: str, data: bytes) -> None:
        """Write `data` to `rel` as a new file renamed into place."""
        fd = self._parent(rel, create=True)
        assert fd is not None
        name = rel.rsplit("/", 1)[-1]
        tmp = f".{name}.{os.getpid()}.tmp"
        try:
            f = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644, dir_fd=fd)
            with os.fdopen(f, "wb") as handle:
                handle.write(data)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            self._close(fd)

    def remove(self, rel: str) -> None:
        """Remove the regular file `rel` and then its folders below the output folder that are left empty."""
        fd = self._parent(rel, create=False)
        if fd is None:
            return
        try:
            os.unlink(rel.rsplit("/", 1)[-1], dir_fd=fd)
        finally:
            self._close(fd)
        parts = rel.split("/")[:-1]
        while parts:
            fd = self._parent("/".join(parts), create=False)
            if fd is None:
                return
            try:
                os.rmdir(parts[-1], dir_fd=fd)
            except OSError:
                return  # not empty (or gone): it stays
            finally:
                self._close(fd)
            parts.pop()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's render lock (flock on `.gpu-platform-render.lock`); a second render refuses with one line."""
        try:
            fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644, dir_fd=self.fd)
        except OSError:
            self._refuse(LOCK, "is a symbolic link or cannot be opened")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ConfigError(
                    [
                        Problem(
                            str(self.out),
                            "",
                            "another render is writing this folder now",
                            "allowed: one render per folder at a time; run it again after",
                        )
                    ]
                ) from None
            yield
        finally:
            os.close(fd)


LOCK = ".gpu-platform-render.lock"
MANIFEST_LIMIT = 64 * 2**20


def _parse_manifest(where: str, data: bytes | None) -> dict[str, str]:
    if data is None:
        return {}
    try:
        text = data.decode("utf-8")
        check_json(text, where, MANIFEST_LIMITS, "allowed: the file a render writes")
        doc = json.loads(text)
        files = doc["files"]
        if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise ConfigError([Problem(where, "files", "not a render manifest", "delete the file: the next render starts afresh")]) from None
    # only paths a render can write: a hand-edited manifest must not be able to delete anything else
    return {k: v for k, v in files.items() if _ours(k)}


def read_manifest(out: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file the last render wrote under `out` ({} when there was none)."""
    if not out.is_dir():
        return {}
    folder = _Folder(out)
    try:
        return _parse_manifest(str(out / MANIFEST), folder.read(MANIFEST, MANIFEST_LIMIT))
    finally:
        folder.close()


def _ours(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) >= 2 and parts[0] in OUTPUT_DIRS and all(p not in ("", ".", "..") for p in parts) and not rel.startswith("/")


def write_files(out: Path, files: dict[str, Any], stack: str = "") -> Written:
    """Write the rendered documents under `out`; remove only what the last render wrote and this one does not.

    A file the user put in the same folders is never touched, and neither is a file of an earlier render
    that was changed since (its hash no longer matches the manifest). The manifest `out/.gpu-platform-render.json`
    lists every file written with its sha256. Nothing is written or removed until every path the render
    touches has been checked for links (`_Folder`), and one render at a time holds the folder.
    """
    check_out(out)
    folder = _Folder(out)
    try:
        with folder.locked():
            before = _parse_manifest(str(out / MANIFEST), folder.read(MANIFEST, MANIFEST_LIMIT))
            data = {rel: yaml.safe_dump(doc, sort_keys=False, width=200).encode() for rel, doc in files.items()}
            stale = sorted(set(before) - set(data))
            for rel in [*data, *stale]:  # refuse before the first write: nothing half-rendered
                if folder.kind(rel) == "other":
                    folder._refuse(rel, "is a symbolic link or not a regular file")
            removed, kept = [], []
            for rel in stale:
                current = folder.read(rel, MANIFEST_LIMIT * 16)
                if current is None:
                    continue
                if _digest(current) != before[rel]:
                    kept.append(rel)
                    continue
                folder.remove(rel)
                removed.append(rel)
            for rel, blob in data.items():
                folder.write(rel, blob)
            manifest = {"writtenBy": "gpu-platform render", "stack": stack, "files": {rel: _digest(b) for rel, b in data.items()}}
            folder.write(MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    finally:
        folder.close()
    return Written(tuple(files), tuple(removed), tuple(kept))


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point of the subcommand."""
    check_out(args.out)  # a bad folder or a damaged manifest is bad input before minutes of planning, not after
    read_manifest(args.out)
    plan = plan_stack(path, stack)
    files = render_plan(plan)
    done = write_files(args.out, files, stack)
    objects = sum(1 for rel in files if is_manifest(rel))
    releases = sum(1 for rel in files if rel.endswith("/values.yaml"))
    if args.format == "json":
        doc = {"stack": stack, "out": str(args.out), "manifests": objects, "helmValues": releases}
        doc |= {"written": list(done.written), "removed": list(done.removed), "kept": list(done.kept)}
        print(json.dumps(doc, indent=2))
        return 0
    print(f"Stack {stack}: wrote {objects} manifests and {releases} Helm values files to {args.out}")
    if done.removed:
        print(f"Removed {len(done.removed)} file(s) an earlier render wrote and this one no longer does: {', '.join(done.removed)}")
    if done.kept:
        print(f"Kept {len(done.kept)} file(s) an earlier render wrote but someone changed since: {', '.join(done.kept)}")
    return 0
