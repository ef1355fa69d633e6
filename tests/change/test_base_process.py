"""Where `check --base` plans the base: in this process when its code is the running code, else in its own.

The fast path must not change the answer: the base planned here and the base planned by its own
program in a subprocess give the same resources and lock facts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.change.base import BasePlanJob, same_code
from gpu_platform.errors import ConfigError
from tests.change.gitrepo import git, make_repo

PROD = "stacks/Pulumi.prod.yaml"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("base-process"))


def test_same_code_base_is_planned_here_and_agrees_with_its_own_process(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_PLATFORM_BASE_CACHE", "0")
    here = BasePlanJob(repo, "base", repo / PROD, "prod")
    assert here.proc is None and here.local is not None, "the landed code is the running code: no second interpreter"
    ours = here.result()
    monkeypatch.setenv("GPU_PLATFORM_BASE_PROCESS", "1")
    own = BasePlanJob(repo, "base", repo / PROD, "prod")
    assert own.proc is not None
    theirs = own.result()
    assert ours.resources == theirs.resources and ours.lock == theirs.lock
    assert any(r["type"] == "aws:eks/nodeGroup:NodeGroup" for r in ours.resources)


def test_base_with_other_code_gets_its_own_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A base whose program differs (here: one comment) is planned by its own program, not by ours."""
    monkeypatch.setenv("GPU_PLATFORM_BASE_CACHE", "0")
    repo = make_repo(tmp_path)
    pools = repo / "infra/gpu_platform/pools.py"
    assert same_code(repo, git(repo, "rev-parse", "base").strip())
    pools.write_text(pools.read_text() + "# the base's own program\n")
    git(repo, "commit", "-qam", "base program differs")
    assert not same_code(repo, git(repo, "rev-parse", "HEAD").strip())
    job = BasePlanJob(repo, "HEAD", repo / PROD, "prod")
    try:
        assert job.proc is not None and job.local is None
    finally:
        job.cancel()


def test_a_base_that_does_not_plan_names_the_base_on_the_fast_path_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_PLATFORM_BASE_CACHE", "0")
    repo = make_repo(tmp_path)
    prod = repo / PROD
    prod.write_text(prod.read_text().replace("gpu-platform:nodePools:", "gpu-platform:nodePool:"))
    git(repo, "commit", "-qam", "broken base")
    job = BasePlanJob(repo, "HEAD", prod, "prod")
    assert job.local is not None
    with pytest.raises(ConfigError) as err:
        job.result()
    problems = [str(p) for p in err.value.problems]
    prefix = f"{PROD}@HEAD: --base: the base revision's stack does not plan: {PROD}: "
    assert all(p.startswith(prefix) for p in problems), problems
    assert any(p.startswith(prefix + "gpu-platform:nodePool: unknown key") for p in problems), problems
