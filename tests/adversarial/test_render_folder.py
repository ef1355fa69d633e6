"""`render` into a folder someone prepared: links inside it, a concurrent render, a manifest that lies.

The output folder may hold what an attacker (or a previous tool) left: a `manifests` folder that is a link to
~/.ssh, a rendered file's name linked to authorized_keys, a manifest listing files elsewhere. A render must
never write, read or delete through a link (each refusal one line, exit 2, nothing written at all), and
two renders into one folder must not interleave.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path

import pytest

from gpu_platform.cli import main
from gpu_platform.commands.render import LOCK, MANIFEST, render_plan, write_files
from gpu_platform.errors import ConfigError
from tests.conftest import ROOT, plan_for

STACK = ROOT / "stacks" / "Pulumi.dev.yaml"


@pytest.fixture(scope="module")
def files() -> dict[str, object]:
    return render_plan(plan_for("dev"))


def _outside(tmp_path: Path) -> tuple[Path, str]:
    """A folder outside the output folder with one precious file, and its sha256."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    key = elsewhere / "authorized_keys"
    key.write_text("ssh-ed25519 AAAA... admin\n")
    return elsewhere, hashlib.sha256(key.read_bytes()).hexdigest()


def _untouched(elsewhere: Path, digest: str) -> None:
    assert sorted(p.name for p in elsewhere.iterdir()) == ["authorized_keys"], "nothing written outside the output folder"
    assert hashlib.sha256((elsewhere / "authorized_keys").read_bytes()).hexdigest() == digest


def _refused(out: Path, files: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as err:
        write_files(out, files, "dev")
    (problem,) = err.value.problems
    assert says in str(problem), str(problem)


def test_a_linked_folder_inside_the_output_is_never_followed(tmp_path: Path, files: dict[str, object]) -> None:
    elsewhere, digest = _outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifests").symlink_to(elsewhere)
    _refused(out, files, "is a symbolic link")
    _untouched(elsewhere, digest)
    assert not (out / "helm").exists(), "nothing half-rendered: the check comes before the first write"


def test_a_rendered_file_name_linked_elsewhere_is_not_written_through(tmp_path: Path, files: dict[str, object]) -> None:
    elsewhere, digest = _outside(tmp_path)
    out = tmp_path / "out"
    target = next(rel for rel in files if rel.startswith("manifests/"))
    (out / target).parent.mkdir(parents=True)
    (out / target).symlink_to(elsewhere / "authorized_keys")
    _refused(out, files, "is a symbolic link or not a regular file")
    _untouched(elsewhere, digest)


def test_a_stale_file_replaced_by_a_link_is_not_deleted_through(tmp_path: Path, files: dict[str, object]) -> None:
    """The manifest lists a file the next render no longer writes; someone swapped it for a link to a precious file."""
    elsewhere, digest = _outside(tmp_path)
    out = tmp_path / "out"
    write_files(out, files, "dev")
    gone = next(rel for rel in files if rel.startswith("manifests/"))
    (out / gone).unlink()
    (out / gone).symlink_to(elsewhere / "authorized_keys")
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"][gone] = digest  # the link's target has the recorded digest: only the link check stops it
    (out / MANIFEST).write_text(json.dumps(manifest))
    _refused(out, {k: v for k, v in files.items() if k != gone}, "is a symbolic link or not a regular file")
    _untouched(elsewhere, digest)


def test_a_linked_manifest_is_refused(tmp_path: Path, files: dict[str, object]) -> None:
    elsewhere, digest = _outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).symlink_to(elsewhere / "authorized_keys")
    _refused(out, files, "is a symbolic link or not a regular file")
    _untouched(elsewhere, digest)


def test_a_second_render_into_the_same_folder_refuses_while_the_first_writes(tmp_path: Path, files: dict[str, object]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a render holds while it writes
        _refused(out, files, "another render is writing this folder now")
    finally:
        os.close(fd)
    assert write_files(out, files, "dev").written, "once the first is done, the next render writes"


def test_the_cli_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere, digest = _outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "helm").symlink_to(elsewhere)
    assert main(["render", "--config", str(STACK), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    allowed = "allowed: real folders and files inside the output folder (render never follows a link)"
    assert err == [f"{out}: helm: is a symbolic link or not a folder; {allowed}"]
    _untouched(elsewhere, digest)
