"""Run the rule set over one stack's resources (and the repository), at each rule's effective level."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from gpu_platform.provenance import WORKER_KEYS
from gpu_platform_policies.model import RULES, Context, Finding, Level, PlanView, Resource, Rule, Violation


def effective_level(rule: Rule, enforcement: Mapping[str, Level]) -> Level:
    """The stack's override for this rule, else its default level."""
    return enforcement.get(rule.name, rule.level)


def run_rule(rule: Rule, plan: PlanView, ctx: Context) -> list[Finding]:
    """Every finding of one rule over the plan (or the repository at ctx.root).

    A resource rule yields messages (or Findings naming a `field`); each becomes a Finding on its resource.
    """
    if rule.scope == "resource":
        out = []
        for r in plan:
            if rule.applies_to(r):
                out += [replace(m, resource=r.name) if isinstance(m, Finding) else Finding(r.name, m) for m in rule.check(r, ctx)]
        return out
    if rule.scope == "stack":
        return rule.stack_findings(plan, ctx)
    root = ctx.root or Path(".")
    return list(rule.check(root, ctx))


WORKER_SOURCE = re.compile(r"^gpu-platform:workers\[\d+\]\.")


def in_worker(key: str, base: str | None) -> str:
    """A rule's key for a resource a MultiKueue worker builds, at that worker's keys.

    A rule names `gpu-platform:cluster.publicAccessCidrs` for any EKS cluster; on a worker's cluster (built from
    `gpu-platform:workers[1].cluster`) the user fixes `gpu-platform:workers[1].cluster.publicAccessCidrs`.
    """
    worker = WORKER_SOURCE.match(base or "")
    short = key.removeprefix("gpu-platform:")
    if worker is None or short == key or re.split(r"[.\[]", short, maxsplit=1)[0] not in WORKER_KEYS:
        return key
    return worker.group(0) + short


def key_path(finding: Finding, plan: PlanView) -> str | None:
    """The stack key the user changes to fix a finding: the rule's own, else the key its resource was built from (plus `field`)."""
    if finding.key:
        return in_worker(finding.key, plan.source_of(finding.resource))
    if finding.file:  # a repository file (inventory, lockfile): no stack key unless the rule named one
        return None
    base = plan.source_of(finding.resource)
    if base is None:
        return None
    return f"{base}.{finding.field}" if finding.field else base


def violation(rule: Rule, level: Level, finding: Finding, plan: PlanView) -> Violation:
    """A finding of `rule` at `level`, with its stack key path (file and line come from gpu_platform_policies.placement)."""
    return Violation(rule.name, level, finding.resource, finding.message, finding.file, key_path(finding, plan))


def not_applicable(resources: Iterable[Resource], ctx: Context, enforcement: Mapping[str, Level] | None = None) -> list[tuple[str, str]]:
    """(rule, reason) of every enabled rule whose input the stack does not have: it judged nothing, so it did not pass."""
    plan = PlanView(resources)
    out = []
    for rule in RULES.values():
        if rule.not_applicable is None or effective_level(rule, enforcement or {}) == "disabled":
            continue
        reason = rule.not_applicable(plan, ctx)
        if reason:
            out.append((rule.name, reason))
    return out


def evaluate(
    resources: Iterable[Resource],
    ctx: Context,
    enforcement: Mapping[str, Level] | None = None,
    *,
    repository: bool = True,
) -> list[Violation]:
    """Violations of every enabled rule, sorted by resource, then level (mandatory first), then rule."""
    plan = PlanView(resources)
    out: list[Violation] = []
    for rule in RULES.values():
        level = effective_level(rule, enforcement or {})
        if level == "disabled" or (rule.scope == "repository" and not repository):
            continue
        out += [violation(rule, level, f, plan) for f in run_rule(rule, plan, ctx)]
    return sorted(out, key=lambda v: (v.resource, v.level != "mandatory", v.policy, v.message))
