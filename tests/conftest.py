"""Shared fixtures: stack specs and offline plans (computed once per session), and shared/ data."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest

from gpu_platform.engine import Plan, run_program
from gpu_platform.spec.loader import load_stack_file, read_stack_config
from gpu_platform.spec.models import PlatformSpec

warnings.filterwarnings("ignore", category=DeprecationWarning)

ROOT = Path(__file__).resolve().parents[1]
STACKS = ("dev", "staging", "prod", "onprem")
# Every stack file of the repository: STACKS, which the per-stack tests walk, and the MultiKueue federation, whose
# clusters tests/k8s/test_multikueue.py walks through the same checks.
REPOSITORY_STACKS = (*STACKS, "multi")
_PLANS: dict[str, Plan] = {}


def stack_path(name: str) -> Path:
    """Path of a stack file in this repository."""
    return ROOT / "stacks" / f"Pulumi.{name}.yaml"


def plan_for(name: str) -> Plan:
    """The offline plan of a repository stack (cached: the mock engine is process-global)."""
    if name not in _PLANS:
        _PLANS[name] = run_program(read_stack_config(stack_path(name)), name)
    return _PLANS[name]


def spec_for(name: str) -> PlatformSpec:
    """The validated spec of a repository stack."""
    return load_stack_file(stack_path(name))


def shared_crds() -> Path | None:
    """The shared reference data folder (CRDs, chart values), if this machine has it."""
    env = os.environ.get("GPU_PLATFORM_SHARED_CRDS")
    candidates = [Path(env)] if env else []
    candidates += [ROOT.parent / "shared" / "crds", ROOT.parent.parent / "shared" / "crds"]
    return next((c for c in candidates if c.is_dir()), None)


def require_shared_crds() -> Path:
    """The shared CRD folder, or skip the test saying exactly what is missing."""
    found = shared_crds()
    if found is None:
        pytest.skip("shared/crds not found (set GPU_PLATFORM_SHARED_CRDS to the folder of upstream CRDs and chart values)")
    return found


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    """Each repository stack in turn."""
    return str(request.param)


@pytest.fixture
def plan(stack: str) -> Plan:
    """The offline plan of the current stack."""
    return plan_for(stack)


@pytest.fixture
def spec(stack: str) -> PlatformSpec:
    """The validated spec of the current stack."""
    return spec_for(stack)


LINE_AFTER_FILE = re.compile(r"(?m)^(\S+?):\d+: ")


def without_lines(text: str) -> str:
    """Error output with each line's `:<line>` after the file left out (`f.yaml:12: key: ...` -> `f.yaml: key: ...`).

    For tests about what a message says; tests/foundation/bad_stack.assert_at_key checks the line itself.
    """
    return LINE_AFTER_FILE.sub(r"\1: ", text)
