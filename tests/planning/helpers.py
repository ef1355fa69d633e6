"""Shared helpers of the planner tests: the shared trace folder, demand files, and the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.cli import main
from tests.conftest import ROOT, without_lines

TRACE_FILES = ("openb_pod_list_default.csv", "openb_pod_list_gpushare40.csv")


def shared_traces() -> Path | None:
    """`shared/traces/alibaba-gpu-2023` next to the worktree (or GPU_PLATFORM_SHARED_TRACES), if present."""
    env = os.environ.get("GPU_PLATFORM_SHARED_TRACES")
    candidates = [Path(env)] if env else []
    candidates += [ROOT.parent / "shared" / "traces" / "alibaba-gpu-2023", ROOT.parent.parent / "shared" / "traces" / "alibaba-gpu-2023"]
    return next((c for c in candidates if c.is_dir()), None)


def require_trace(name: str) -> Path:
    """One file of the Alibaba trace, or skip saying what is missing."""
    folder = shared_traces()
    if folder is None or not (folder / name).is_file():
        pytest.skip(f"shared/traces/alibaba-gpu-2023/{name} not found (set GPU_PLATFORM_SHARED_TRACES to the trace folder)")
    return folder / name


def write_demand(tmp: Path, doc: dict[str, Any], name: str = "demand.yaml") -> Path:
    """A demand YAML file in tmp."""
    path = tmp / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one `gpu-platform` invocation in-process."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, without_lines(out.err)


def plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """`capacity plan --format json` as a document (asserting exit 0)."""
    code, out, err = run_cli(capsys, "capacity", "plan", *argv, "--format", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def row(doc: dict[str, Any], section: str, cls: str, model: str = "any") -> dict[str, Any]:
    """One class row of the `demand` or `plan` list."""
    found: dict[str, Any] = next(r for r in doc[section]["classes"] if r["class"] == cls and r["gpuModel"] == model)
    return found
