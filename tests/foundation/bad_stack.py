"""One harness for "a bad stack value is one clear line": mutate a repository stack, plan it, read stderr."""

from __future__ import annotations

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
    assert lines[0].startswith(f"{path}: {key}: "), lines[0]
    assert fragment in lines[0]
    assert "; " in lines[0], "every error says what is allowed"
