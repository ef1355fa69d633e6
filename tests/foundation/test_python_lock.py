"""Python set-up with uv: one lock with hashes, in step with requirements.in, used by make and by Pulumi.

What each test reproduces:
- Pulumi's Python language host with `toolchain: uv` (pulumi/pulumi `sdk/python/toolchain/uv.go`,
  `newUv` and `InstallDependencies`): it searches up from the project for `uv.lock`, then
  `pyproject.toml`, places the virtualenv from `runtime.options.virtualenv`, and runs `uv sync` with
  `UV_PROJECT_ENVIRONMENT` set to it.
- uv's own checks (`uv lock --check`: the lock satisfies pyproject.toml; `tool.uv.required-version`:
  uv refuses to run at another version), run offline with the uv the lock pins.
- pip's hash-checking mode (`--require-hashes`): every requirement of requirements.txt and
  requirements-checkov.txt needs a `--hash`, or pip refuses the whole file.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK = tomllib.loads((ROOT / "uv.lock").read_text())
UV_PIN = PYPROJECT["tool"]["uv"]["required-version"]
UV = ROOT / ".venv" / "bin" / "uv"


def requirements_in(name: str = "requirements.in") -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in (ROOT / name).read_text().splitlines())
    return [line for line in lines if line]


def locked() -> dict[str, dict]:
    return {canonicalize_name(p["name"]): p for p in LOCK["package"]}


def uv_offline(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The pinned uv, offline, with an empty cache: what it decides from the repository's files alone."""
    if not UV.exists():
        pytest.fail(f"{UV} missing: run `make setup` (uv is in the dev group at {UV_PIN})")
    env = {**os.environ, "UV_OFFLINE": "1", "UV_CACHE_DIR": str(tmp / "uv-cache"), "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1"}
    return subprocess.run([str(UV), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def test_pulumi_uv_toolchain_finds_the_lock_and_the_venv_make_builds() -> None:
    """uv.go: uv.lock found by searching up from the project root; the virtualenv is the one `make setup` syncs."""
    runtime = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["runtime"]
    assert runtime["options"]["toolchain"] == "uv"
    assert (ROOT / "uv.lock").is_file() and (ROOT / "pyproject.toml").is_file()
    venv = ROOT / runtime["options"]["virtualenv"]
    make = subprocess.run(["make", "-n", "-B", "setup"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert re.search(r"/uv sync --locked\b", make), make
    # Makefile exports UV_PROJECT_ENVIRONMENT, as uv.go sets it for `uv sync`: both land in the same venv.
    env = subprocess.run(["make", "-n", "-B", "-p", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    found = re.search(r"^UV_PROJECT_ENVIRONMENT := (\S+)$", env, re.M)
    assert found and ROOT / found.group(1) == venv


def test_make_bootstraps_exactly_the_required_uv() -> None:
    make = subprocess.run(["make", "-n", "-B", "setup"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert UV_PIN.startswith("==")
    assert f"pip install --quiet --disable-pip-version-check uv{UV_PIN}" in make, make


def test_dev_group_is_requirements_in_plus_uv() -> None:
    """`make lock` copies requirements.in into the dev group; an edit without `make lock` fails here."""
    assert PYPROJECT["dependency-groups"]["dev"] == [*requirements_in(), f"uv{UV_PIN}"], "requirements.in changed: run `make lock`"


def test_every_requirement_is_locked_at_a_version_it_allows() -> None:
    packages = locked()
    for line in [*PYPROJECT["project"]["dependencies"], *PYPROJECT["dependency-groups"]["dev"]]:
        req = Requirement(line)
        pkg = packages.get(canonicalize_name(req.name))
        assert pkg is not None, f"{req.name} is not in uv.lock: run `make lock`"
        assert req.specifier.contains(pkg["version"], prereleases=True), (line, pkg["version"])
    assert packages["uv"]["version"] == UV_PIN.removeprefix("==")


def test_every_locked_distribution_has_a_hash() -> None:
    missing = []
    for pkg in LOCK["package"]:
        if "registry" not in pkg.get("source", {}):
            continue  # the project itself (editable)
        dists = [*pkg.get("wheels", []), *([pkg["sdist"]] if "sdist" in pkg else [])]
        if not dists or not all(re.fullmatch(r"sha256:[0-9a-f]{64}", d.get("hash", "")) for d in dists):
            missing.append(pkg["name"])
    assert missing == []


def test_uv_accepts_the_lock_as_up_to_date(tmp_path: Path) -> None:
    """`uv lock --check` (what `uv sync --locked` enforces): pyproject.toml and uv.lock agree."""
    proc = uv_offline("lock", "--check", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_requirements_txt_is_the_lock_exported(tmp_path: Path) -> None:
    proc = uv_offline("export", "--frozen", "--all-groups", "--no-emit-project", "--format", "requirements-txt", "--no-header", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    body = "\n".join(line for line in (ROOT / "requirements.txt").read_text().splitlines() if not line.startswith("#"))
    assert body.strip() == proc.stdout.strip(), "requirements.txt differs from uv.lock: run `make lock`"


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-checkov.txt"])
def test_pip_hash_checking_mode_accepts_the_file(name: str) -> None:
    """pip --require-hashes refuses a file in which any requirement lacks a hash; each pin is exact."""
    text = (ROOT / name).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", "\n".join(line for line in text.splitlines() if line and not line.lstrip().startswith("#")))
    assert len(entries) > 10
    for entry in entries:
        requirement = entry.split("\\")[0].strip()
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[^=;\s]+( ;.*)?", requirement), requirement
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), requirement


def test_checkov_is_locked_from_its_own_input() -> None:
    pins = {canonicalize_name(m.group(1)) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==", (ROOT / "requirements-checkov.txt").read_text(), re.M)}
    assert {canonicalize_name(Requirement(r).name) for r in requirements_in("requirements-checkov.in")} <= pins


def test_uv_refuses_another_version(tmp_path: Path) -> None:
    """tool.uv.required-version is enforced by uv itself: a project copy demanding another uv is refused."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    text = (tmp_path / "pyproject.toml").read_text().replace(f'required-version = "{UV_PIN}"', 'required-version = "==0.0.1"')
    (tmp_path / "pyproject.toml").write_text(text)
    env = {**os.environ, "UV_OFFLINE": "1", "UV_CACHE_DIR": str(tmp_path / "c"), "NO_COLOR": "1"}
    proc = subprocess.run([str(UV), "lock", "--check", "--project", str(tmp_path)], capture_output=True, text=True, check=False, env=env)
    assert proc.returncode != 0 and "0.0.1" in proc.stderr, proc.stderr
