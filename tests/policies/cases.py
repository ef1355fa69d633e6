"""Every rule's compliant and violating cases, as data the rule tests, the meta-test and the CrossGuard tests share.

A case starts from a repository stack's real offline plan, changes it the way a bad change would,
and says which rule must (or must not) fire and on which resource. This module runs and judges cases;
the cases themselves live in cases_<family>.py, written with tests/policies/builders.py.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

from gpu_platform.catalog import load_catalog
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.versions import Lockfile, load_lockfile
from gpu_platform_policies import THRESHOLD_DEFAULTS, Context, Resource, Violation, evaluate
from gpu_platform_policies.evaluate import not_applicable
from tests.conftest import plan_for, spec_for
from tests.policies.builders import Case
from tests.policies.cases_ansible import ANSIBLE_CASES
from tests.policies.cases_capacity import CAPACITY_CASES
from tests.policies.cases_controllers import CONTROLLER_CASES
from tests.policies.cases_dra import DRA_CASES
from tests.policies.cases_federation import FEDERATION_CASES
from tests.policies.cases_network import NETWORK_CASES
from tests.policies.cases_observability import OBSERVABILITY_CASES
from tests.policies.cases_paths import PATH_CASES
from tests.policies.cases_security import SECURITY_CASES
from tests.policies.cases_versions import VERSION_CASES


def resources(stack: str) -> list[Resource]:
    """A deep copy of a stack's offline plan as plain resources."""
    return [Resource(r.type, r.name, r.parent, copy.deepcopy(r.inputs), r.source, dict(r.refs), r.secrets) for r in plan_for(stack).resources]


def context(stack: str, lock: Lockfile | None = None, root: Path | None = None, stack_lock: Lockfile | None = None) -> Context:
    """The context `gpu-platform check` would build for a repository stack."""
    spec: PlatformSpec = spec_for(stack)
    return Context(
        lock=lock or load_lockfile(),
        catalog=load_catalog(),
        environment=spec.environment,
        thresholds={**THRESHOLD_DEFAULTS, **spec.policy.thresholds},
        root=root,
        stack_lock=stack_lock or lock or spec.lock,
    )


def edited(case: Case) -> list[Resource]:
    """The case's stack plan with its edits applied."""
    res = resources(case.stack)
    for edit in case.edits:
        res = edit(res)
    return res


def run_case(case: Case, tmp: Path, enforcement: dict[str, Any] | None = None) -> list[Violation]:
    """The case's violations of its own rule, through the same evaluate() the CLI uses."""
    res = edited(case)
    lock = case.lock(load_lockfile()) if case.lock else None
    root = None
    if case.repo is not None:
        root = tmp / "repo"
        case.repo(root)
    stack_lock = case.stack_lock(load_lockfile()) if case.stack_lock else None
    ctx = dataclasses.replace(context(case.stack, lock, root, stack_lock), today=case.today)
    return [v for v in evaluate(res, ctx, enforcement, repository=case.repo is not None) if v.policy == case.rule]


def assert_case(case: Case, violations: list[Violation]) -> None:
    """The behaviour a user would notice: the rule names the resource and says why, or stays silent."""
    if case.fires_on is None:
        assert violations == [], f"{case.rule} fired on a compliant stack: {violations}"
        if case.idle is not None:  # silent because it did not run: `check` must say so, with this reason
            reason = dict(not_applicable(edited(case), context(case.stack))).get(case.rule)
            assert reason == case.idle, f"{case.rule} is not reported not applicable with {case.idle!r}; got {reason!r}"
        return
    hits = [v for v in violations if v.resource == case.fires_on and case.message in v.message]
    assert hits, f"{case.rule} did not report {case.fires_on!r} with {case.message!r}; got {violations}"
    if case.key is not None:
        assert any(v.key == case.key for v in hits), f"{case.rule} did not point at {case.key}; got {[v.key for v in hits]}"


# One module per family of rules; joined in the order their test ids were collected before the split.
CASES: list[Case] = [
    *SECURITY_CASES,
    *VERSION_CASES,
    *CAPACITY_CASES,
    *OBSERVABILITY_CASES,
    *ANSIBLE_CASES,
    *CONTROLLER_CASES,
    *PATH_CASES,
    *NETWORK_CASES,
    *DRA_CASES,
    *FEDERATION_CASES,
]
