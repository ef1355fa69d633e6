"""ClusterQueue preemption holds only what Kueue v0.19.2 enforces under the stack's preemption mode.

Reproduces kubernetes-sigs/kueue v0.19.2 pkg/scheduler/preemption/preemption.go: `Preemptor.getTargets`
runs `fairPreemptions` whenever the manager configuration has a `fairSharing` section
(pkg/scheduler/preemption/fairsharing/strategy.go `Enabled`: `pfs != nil`), and `fairPreemptions` ->
`findCandidates` reads `withinClusterQueue` and `reclaimWithinCohort` only; `borrowWithinCohort` (and its
`maxPriorityThreshold`) is read only by `classicalPreemptions` (classical/hierarchical_preemption.go
`IsBorrowingWithinCohortForbidden`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.k8s.tenants import PRIORITY_VALUES
from tests.conftest import spec_for, stack_path, without_lines
from tests.foundation.bad_stack import plan_errors as _run
from tests.foundation.test_bad_stacks import edit
from tests.k8s.helpers import helm_values, objects

CLASSICAL = {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"}
FAIR = {"withinClusterQueue", "reclaimWithinCohort"}


def fields_kueue_reads(manager_config: dict[str, Any]) -> set[str]:
    """The ClusterQueue preemption fields the preemptor consults under this manager configuration."""
    return FAIR if manager_config.get("fairSharing") is not None else CLASSICAL


def test_every_preemption_field_rendered_is_enforced(stack: str) -> None:
    if not spec_for(stack).queueing.kueue.enabled:
        return
    config = yaml.safe_load(helm_values(stack, "kueue")["managerConfig"]["controllerManagerConfigYaml"])
    read = fields_kueue_reads(config)
    for cq in objects(stack, "ClusterQueue"):
        assert set(cq["spec"]["preemption"]) <= read, (cq["metadata"]["name"], set(cq["spec"]["preemption"]) - read)


def test_prod_under_fair_sharing_promises_no_borrow_guard() -> None:
    """The old prod ClusterQueues carried borrowWithinCohort LowerPriority next to fair sharing: never enforced."""
    config = yaml.safe_load(helm_values("prod", "kueue")["managerConfig"]["controllerManagerConfigYaml"])
    assert "fairSharing" in config
    old_preemption = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority", "borrowWithinCohort": {"policy": "LowerPriority"}}
    assert set(old_preemption) - fields_kueue_reads(config) == {"borrowWithinCohort"}


def test_classical_preemption_keeps_the_borrow_guard(tmp_path: Path) -> None:
    """With fairSharing off, borrowWithinCohort is enforced and defaults to LowerPriority below production training."""
    from gpu_platform.k8s.kueue import preemption
    from gpu_platform.spec.loader import load_stack_file

    doc = yaml.safe_load(stack_path("dev").read_text())
    doc["config"]["gpu-platform:queueing"] = {"kueue": {"fairSharing": False}}
    path = tmp_path / "Pulumi.classical.yaml"
    path.write_text(yaml.safe_dump(doc))
    rendered = preemption(load_stack_file(path))
    assert rendered["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": PRIORITY_VALUES["inference"]}
    assert set(rendered) <= CLASSICAL


def test_spec_refuses_borrow_within_cohort_under_fair_sharing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(stack_path("prod").read_text())
    edit("gpu-platform:queueing.kueue.preemption.borrowWithinCohort", "LowerPriority")(doc)
    path = tmp_path / "Pulumi.fair-borrow.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = _run(capsys, path)
    assert code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert without_lines(line).startswith(f"{path}: gpu-platform:queueing.kueue.preemption.borrowWithinCohort: ")
    assert "ignored by Kueue when fairSharing is true" in line and "allowed: remove it" in line
