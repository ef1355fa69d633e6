"""One command-line convention for every command: `--format` words, `--version`, `--stack` from anywhere, check's bad input."""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_platform.cli import COMMANDS, _parser, main
from gpu_platform.commands.options import FORMATS
from tests.conftest import REPOSITORY_STACKS, ROOT, stack_path

WORDS = ("text", "json", "markdown", "github")  # the one vocabulary, in this order wherever offered
REQUIRED = {"render": ["--out", "x"], "explain": ["--workload", "w"], "diff": ["--base", "main"]}  # options a command cannot parse without
TEAMS = str(ROOT / "examples/demand/teams.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_command_offers_formats_from_one_vocabulary() -> None:
    """Same word for the same thing: `text` is every command's default, and no command still calls it `table`."""
    assert set(FORMATS) == set(COMMANDS)
    for command, formats in FORMATS.items():
        assert formats[0] == "text", command
        assert list(formats) == [w for w in WORDS if w in formats], command
        argv = [command, "--format", formats[-1], *REQUIRED.get(command, [])]
        assert _parser().parse_args(argv).format == formats[-1]


@pytest.mark.parametrize("command", ["plan", "capacity"])
def test_old_word_table_still_works_with_a_deprecation_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = _parser().parse_args([command, "--format", "table"])
    assert args.format == "text"
    assert capsys.readouterr().err == f"gpu-platform {command}: --format table is deprecated; use --format text (the same output)\n"


def test_capacity_plan_honours_format_before_the_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """`capacity --format json plan` and `capacity plan --format json` print the same JSON document."""
    code, before, _ = run(capsys, "capacity", "--format", "json", "--stack", "prod", "plan", "--demand", TEAMS)
    assert code == 0
    code, after, _ = run(capsys, "capacity", "plan", "--demand", TEAMS, "--stack", "prod", "--format", "json")
    assert code == 0
    assert json.loads(before) == json.loads(after)
    assert json.loads(before)["plan"]["classes"], "the planner's document, not capacity's"
    code, md, _ = run(capsys, "capacity", "--format", "markdown", "plan", "--demand", TEAMS)
    assert code == 0 and md.startswith("### GPU capacity plan")


def test_capacity_markdown_has_the_text_tables(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "capacity", "--stack", "prod", "--format", "markdown")
    assert code == 0
    assert "| `train-h100-reserved` | training | reserved | H100-80GB | 32 | 32 | 32 | 32 | 100% |" in out
    assert "| training | 64 | 32 | 0 | 0% |" in out


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert capsys.readouterr().out == f"gpu-platform {project['version']}\n"


@pytest.fixture
def no_root(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("GPU_PLATFORM_ROOT", raising=False)
    return monkeypatch


def test_stack_name_resolves_from_a_subdirectory(no_root: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    no_root.chdir(ROOT / "ansible")
    code, out, err = run(capsys, "capacity", "--stack", "prod", "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["stack"] == "prod"


def test_stack_takes_a_path(no_root: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    no_root.chdir(tmp_path)  # outside the repository: a path needs no repository around it
    code, out, _ = run(capsys, "capacity", "--stack", str(stack_path("onprem")), "--format", "json")
    assert code == 0 and json.loads(out)["stack"] == "onprem"


def test_unknown_stack_lists_the_stacks_there_are(no_root: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    no_root.chdir(ROOT / "infra")
    code, out, err = run(capsys, "plan", "--stack", "prd")
    assert (code, out) == (2, "")
    names = ", ".join(sorted(REPOSITORY_STACKS))
    assert err == f"../stacks/Pulumi.prd.yaml: --stack: no stack 'prd' (did you mean 'prod'?); allowed: {names}, or a path to a stack file\n"


def test_outside_a_repository_is_one_line(no_root: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    no_root.chdir(tmp_path)
    code, _, err = run(capsys, "capacity", "--stack", "prod")
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"{tmp_path.resolve()}: --stack: no gpu-platform repository here or above (a directory with Pulumi.yaml and stacks/)")


def _typo_stack(tmp_path: Path) -> tuple[Path, int]:
    """dev with `nodePools` misspelt: the stack file and the line of the bad key."""
    text = stack_path("dev").read_text().replace("gpu-platform:nodePools:", "gpu-platform:nodePool:")
    path = tmp_path / "Pulumi.typo.yaml"
    path.write_text(text)
    return path, next(i for i, t in enumerate(text.splitlines(), 1) if t.strip().startswith("gpu-platform:nodePool:"))


def test_check_json_on_bad_input_is_a_document_with_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, line = _typo_stack(tmp_path)
    code, out, err = run(capsys, "check", "--config", str(path), "--format", "json")
    assert code == 2
    doc = json.loads(out)
    assert doc["stack"] == "typo" and doc["summary"]["badInput"] == len(doc["violations"]) >= 1
    first = doc["violations"][0]
    assert first["policy"] == "bad-input" and first["level"] == "mandatory"
    assert (first["file"], first["keyPath"], first["line"]) == (str(path), "gpu-platform:nodePool", line)
    assert first["message"] == err.splitlines()[0], "the same line as on stderr"


def test_check_github_on_bad_input_annotates_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, line = _typo_stack(tmp_path)
    code, out, _ = run(capsys, "check", "--config", str(path), "--format", "github")
    assert code == 2
    file = str(path).replace(":", "%3A").replace(",", "%2C")
    assert out.splitlines()[0].startswith(f"::error file={file},line={line},title=bad input::{path}: gpu-platform:nodePool: unknown key")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_check_text_and_markdown_on_bad_input_say_not_checked(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _typo_stack(tmp_path)
    code, out, _ = run(capsys, "check", "--config", str(path), "--format", fmt)
    assert code == 2
    assert "bad input, not checked" in out or "Bad input, not checked" in out


def test_check_json_on_an_unknown_stack_is_a_document_too(no_root: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    no_root.chdir(ROOT)
    code, out, _ = run(capsys, "check", "--stack", "nope", "--format", "json")
    assert code == 2
    [finding] = json.loads(out)["violations"]
    assert finding["keyPath"] == "--stack" and "line" not in finding and "allowed: dev, multi, onprem, prod, staging" in finding["message"]


def test_check_base_json_on_bad_input_is_a_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`check --base` too: a stack file outside any git clone is a finding on stdout, exit 2."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(stack_path("dev").read_text())
    code, out, _ = run(capsys, "check", "--config", str(path), "--base", "no-such-ref", "--format", "json")
    assert code == 2
    assert json.loads(out)["violations"][0]["keyPath"] == "--base"


def test_capacity_plan_needs_no_repository_without_a_stack(no_root: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A planner run on a demand file alone works anywhere: only a named stack needs the repository."""
    no_root.chdir(tmp_path)
    code, out, err = run(capsys, "capacity", "plan", "--demand", TEAMS, "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["plan"]["classes"]


def _subparsers(parser: argparse.ArgumentParser, prefix: str = "gpu-platform") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", sub
                yield from _subparsers(sub, f"{prefix} {name}")


PLACEHOLDER = re.compile(r"^([A-Z][A-Z_-]*(\|[A-Z][A-Z_]*)*|[A-Z]+=[A-Z]+,\.\.\.)$")


def test_every_placeholder_names_what_it_takes_in_one_style() -> None:
    """`--out DIR`, `--workload FILE`, `--base GIT_REF`: never argparse's default echo of the option (`--write-stack WRITE_STACK`)."""
    seen = {}
    for command, sub in _subparsers(_parser()):
        for action in sub._actions:
            if not action.option_strings or action.nargs == 0 or action.choices is not None or action.help == argparse.SUPPRESS:
                continue
            option = action.option_strings[-1]
            metavar = action.metavar
            assert isinstance(metavar, str), f"{command} {option}: no placeholder (argparse would print {action.dest.upper()})"
            assert PLACEHOLDER.match(metavar), f"{command} {option} {metavar}: allowed: an upper-case noun (FILE, DIR, N, GIT_REF)"
            seen[f"{command} {option}"] = metavar
    assert seen["gpu-platform render --out"] == "DIR" and seen["gpu-platform capacity plan --write-stack"] == "FILE"
    assert {seen[f"gpu-platform {c} --config"] for c in COMMANDS} == {"FILE"}
