"""Stack files are read as the Pulumi CLI reads them: yaml.v3's resolver, Pulumi.yaml defaults, no ESC environment.

Pulumi (sdk/go/common/encoding/marshal.go, workspace/loaders.go) loads stack files with gopkg.in/yaml.v3 and hands
the program JSON (resource/config/object.go); PyYAML's YAML 1.1 resolver reads several scalars differently. Each
row: what the program receives under `pulumi up`, measured by a Go reproduction of that load path on the yaml.v3
release Pulumi pins (gpu_platform.spec.pulumi_yaml says where each rule comes from).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.cli import main
from gpu_platform.spec.loader import load_stack_file, read_stack_config
from gpu_platform.spec.pulumi_yaml import PulumiLoader
from tests.conftest import ROOT, stack_path, without_lines

# scalar as written -> what the program receives nested in an object (json.loads of Pulumi's JSON), and PyYAML's reading
ROWS: list[tuple[str, Any, Any]] = [
    ("y", "y", "y"),
    ("n", "n", "n"),
    ("yes", "yes", True),
    ("no", "no", False),
    ("on", "on", True),
    ("off", "off", False),
    ("True", True, True),
    ("0o17", 15, "0o17"),
    ("017", 15, 15),
    ("0x1F", 31, 31),
    ("0b101", 5, 5),
    ("09", 9, "09"),
    ("1e3", 1000, "1e3"),
    ("1.5e3", 1500, "1.5e3"),
    ("1_000", 1000, 1000),
    ("1:30", "1:30", 90),
    ("1.0", 1, 1.0),
    ("1.5", 1.5, 1.5),
    ("~", None, None),
    ("2026-11-16", "2026-11-16 00:00:00 +0000 UTC", "2026-11-16"),
    ("2026-1-2", "2026-01-02 00:00:00 +0000 UTC", "2026-1-2"),
    ("'2026-11-16'", "2026-11-16", "2026-11-16"),
]


@pytest.mark.parametrize(("scalar", "pulumi", "pyyaml"), ROWS, ids=[r[0] for r in ROWS])
def test_a_scalar_reads_as_pulumi_reads_it(scalar: str, pulumi: Any, pyyaml: Any) -> None:
    seen = yaml.load(f"a: {scalar}", Loader=PulumiLoader)["a"]
    assert seen == pulumi and type(seen) is type(pulumi)
    plain = yaml.safe_load(f"a: {scalar}")["a"]
    assert str(plain) == str(pyyaml), "the PyYAML column records the difference this module exists for"


def _variant(tmp_path: Path, edit: Any, stack: str = "prod") -> Path:
    """A copy of the repository's project (Pulumi.yaml and one stack file), edited."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    path = tmp_path / "stacks" / f"Pulumi.{stack}.yaml"
    path.write_text(edit(stack_path(stack).read_text()))
    return path


def _one_line(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    assert main(["plan", "--config", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_yes_is_not_a_boolean_for_pulumi(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PyYAML planned `endpointPublicAccess: yes` as true; the program under `pulumi up` gets the string "yes"."""
    path = _variant(tmp_path, lambda t: t.replace("endpointPublicAccess: true", "endpointPublicAccess: yes"))
    line = _one_line(capsys, path)
    assert "gpu-platform:cluster.endpointPublicAccess" in line and "yes" in line


def test_an_unquoted_date_is_refused_with_what_pulumi_would_send(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _variant(tmp_path, lambda t: t.replace('start: "2026-11-16"', "start: 2026-11-16"))
    line = _one_line(capsys, path)
    assert "nodePools[8].reservation.start" in line and "'2026-11-16 00:00:00 +0000 UTC'" in line and 'allowed: the date quoted, "2026-11-16"' in line


def test_infinity_fails_pulumis_load_and_the_gate_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _variant(tmp_path, lambda t: t.replace("gpu-platform:tags:\n", "gpu-platform:tags:\n    budget: .inf\n"))
    assert "makes `pulumi up` fail to load the stack" in _one_line(capsys, path)


def test_an_esc_environment_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _variant(tmp_path, lambda t: t + "environment: [gpu-platform/prod-secrets]\n")
    line = _one_line(capsys, path)
    assert without_lines(line).startswith(f"{path}: environment: ") and "Pulumi Cloud" in line


def test_project_defaults_reach_a_stack_that_leaves_the_key_unset(tmp_path: Path) -> None:
    """pulumi pkg/workspace/config.go mergeConfig: the Pulumi.yaml default applies; a stack value would win."""
    path = _variant(tmp_path, lambda t: t.replace("  gpu-platform:policy:\n    enforcement: {documentation-cidr: advisory}\n", ""), "prod")
    project = tmp_path / "Pulumi.yaml"
    project.write_text(
        project.read_text().replace("  policy:\n    type: object\n    default: {}", "  policy:\n    type: object\n    default: {production: false}")
    )
    assert read_stack_config(path)["gpu-platform:policy"] == {"production": False}
    assert load_stack_file(path).policy.production is False
    path.write_text(path.read_text() + "  gpu-platform:policy: {production: true}\n")
    assert load_stack_file(path).policy.production is True, "the stack's own value wins"
