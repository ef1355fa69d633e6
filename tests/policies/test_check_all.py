"""`gpu-platform check --all`: every stack of stacks/ in one process, each judged exactly as `check --config` judges it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.cli import main
from tests.conftest import REPOSITORY_STACKS, ROOT, stack_path, without_lines

Doc = dict[str, Any]


def spot_exposure_mandatory(cfg: Doc) -> None:
    cfg["gpu-platform:policy"] = {"enforcement": {"spot-exposure": "mandatory"}}


def typo(cfg: Doc) -> None:
    cfg["gpu-platform:nodePool"] = cfg.pop("gpu-platform:nodePools")


# stack name -> mutation of dev's config: one clean, one with a mandatory violation, one bad input.
VARIANTS: dict[str, Callable[[Doc], None] | None] = {"alpha": None, "beta": spot_exposure_mandatory, "gamma": typo}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository root with three dev-based stacks; repository-level rules read the real ansible/ tree."""
    base = tmp_path_factory.mktemp("root")
    (base / "stacks").mkdir()
    (base / "ansible").symlink_to(ROOT / "ansible")
    for name, mutate in VARIANTS.items():
        doc = yaml.safe_load(stack_path("dev").read_text())
        if mutate:
            mutate(doc["config"])
        (base / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return base


def check(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    monkeypatch.setenv("GPU_PLATFORM_ROOT", str(root))
    code = main(["check", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_matches_one_check_per_stack(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Same documents as `check --config` run stack by stack; bad input is reported and the others still run."""
    code, out, err = check(monkeypatch, capsys, root, "--all", "--format", "json")
    doc = json.loads(out)
    assert code == 2
    assert [s["stack"] for s in doc["stacks"]] == ["alpha", "beta", "gamma"]
    assert doc["summary"] == {"stacks": 3, "failed": ["beta"], "badInput": ["gamma"]}
    for name in ("alpha", "beta"):
        one_code, one_out, _ = check(monkeypatch, capsys, root, "--config", str(root / "stacks" / f"Pulumi.{name}.yaml"), "--format", "json")
        assert next(s for s in doc["stacks"] if s["stack"] == name) == json.loads(one_out)
        assert one_code == {"alpha": 0, "beta": 1}[name]
    gamma = root / "stacks" / "Pulumi.gamma.yaml"
    line = f"{gamma}: gpu-platform:nodePool: unknown key 'nodePool' (did you mean 'nodePools'?)"
    gamma_doc = doc["stacks"][2]
    assert without_lines(gamma_doc["violations"][0]["message"]).startswith(line) and gamma_doc["violations"][0]["policy"] == "bad-input"
    assert gamma_doc["violations"][0]["line"] == next(i for i, t in enumerate(gamma.read_text().splitlines(), 1) if "gpu-platform:nodePool:" in t)
    assert without_lines(err).splitlines()[0].startswith(line)


def test_text_reports_every_stack_exit_one_on_violations(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "stacks" / "Pulumi.gamma.yaml").rename(root / "gamma.yaml")
    try:
        code, out, err = check(monkeypatch, capsys, root, "--all")
    finally:
        (root / "gamma.yaml").rename(root / "stacks" / "Pulumi.gamma.yaml")
    assert code == 1 and err == ""
    assert "Stack alpha: " in out and "Stack beta: " in out
    assert "  mandatory  spot-exposure: " in out.split("Stack beta: ")[1]
    assert out.splitlines()[-1] == "gpu-platform check --all: 2 stack(s); mandatory violations in: beta; bad input in: none"


def test_github_annotates_bad_input_too(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(monkeypatch, capsys, root, "--all", "--format", "github")
    gamma = str(root / "stacks" / "Pulumi.gamma.yaml").replace(":", "%3A").replace(",", "%2C")
    assert code == 2
    line = next(i for i, t in enumerate((root / "stacks" / "Pulumi.gamma.yaml").read_text().splitlines(), 1) if "gpu-platform:nodePool:" in t)
    assert f"::error file={gamma},line={line},title=bad input::" in out
    assert "title=spot-exposure::" in out


def test_repository_stacks_pass_in_one_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """What CI and `make check-all` run: the repository's own stacks, no mandatory violation."""
    code, out, _ = check(monkeypatch, capsys, ROOT, "--all", "--format", "json")
    doc = json.loads(out)
    assert sorted(s["stack"] for s in doc["stacks"]) == sorted(REPOSITORY_STACKS)
    assert doc["summary"] == {"stacks": len(REPOSITORY_STACKS), "failed": [], "badInput": []} and code == 0


def test_no_stack_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check(monkeypatch, capsys, tmp_path, "--all")
    assert code == 2 and out == "gpu-platform check: bad input, not checked (1 problem(s) on stderr)\n"
    assert err == f"{tmp_path / 'stacks'}: <root>: no stack file (Pulumi.<name>.yaml); run inside the repository or set GPU_PLATFORM_ROOT\n"


def test_all_excludes_stack_and_config() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--all", "--stack", "dev"])
    assert exc.value.code == 2


def test_ci_and_make_run_check_all_once() -> None:
    """The workflow's gate and `make check-all` call `check --all` once instead of a process per stack."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yml").read_text())
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    gate = [r for r in runs if "gpu-platform check" in r]
    assert gate == [".venv/bin/gpu-platform check --all --format github"]
    recipe = [line.strip() for line in (ROOT / "Makefile").read_text().split("\ncheck-all:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]]
    assert recipe == ["$(BIN)/gpu-platform check --all"]
