"""One harness for "a bad stack value is one clear line": mutate a repository stack, plan it, read stderr."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.cli import main
from tests.conftest import stack_path


def plan_errors(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str]:
    """`gpu-platform plan --config PATH`: exit code and stderr."""
    code = main(["plan", "--config", str(path)])
    return code, capsys.readouterr().err


def assert_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, base: str, mutate: Callable[[Any], Any], key: str, fragment: str
) -> None:
    """The mutated stack exits 2 with one line `<file>: <key>: <what>; <allowed>` and no traceback."""
    doc = yaml.safe_load(stack_path(base).read_text())
    mutate(doc)
    path = tmp_path / f"Pulumi.{case}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = plan_errors(capsys, path)
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert_at_key(lines[0], path, key)
    assert fragment in lines[0]
    assert "; " in lines[0], "every error says what is allowed"


def unlocated(line: str, path: Path | str) -> tuple[int | None, str]:
    """(the line number after `<file>:`, or None; the rest after `<file>[:N]: `) of one error line about `path`."""
    prefix = str(path)
    assert line.startswith(prefix), f"{line!r} does not start with {prefix!r}"
    m = re.match(r"^(?::(\d+))?: ", line[len(prefix) :])
    assert m, f"{line!r}: no ': ' after the file"
    return (int(m.group(1)) if m.group(1) else None), line[len(prefix) + m.end() :]


def assert_at_key(line: str, path: Path, key: str) -> None:
    """`<file>:<N>: <key>: ...` where line N of the file is where the key (or the nearest key above it that exists) is written."""
    number, rest = unlocated(line, path)
    assert rest.startswith(f"{key}: "), line
    if number is None:
        return
    text = path.read_text().splitlines()[number - 1]
    names = [n for n in re.split(r"[.\[\]]+", key.split(":", 1)[-1]) if n and not n.isdigit()]
    assert any(n in text for n in names) or text.lstrip().startswith("- "), f"line {number} ({text!r}) names none of {names}"
