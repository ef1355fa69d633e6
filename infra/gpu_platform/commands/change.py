"""`gpu-platform diff --base REF` and `gpu-platform check --base REF`: judge the change a revision makes, offline.

The base revision is planned by its own program in a subprocess (gpu_platform.change.base) while the
working tree is planned here; the two plans are diffed per resource and the change rules
(gpu_platform_policies.rules.change) run over both, beside every state rule of `check`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpu_platform.catalog import Catalog, load_catalog
from gpu_platform.change.base import BasePlanJob, changed_paths, lock_facts, maintenance_trailers, repository_root
from gpu_platform.change.base_rules import JUDGED_PLAN, BaseVerdict, judge, judged_plan, rule_code_changes
from gpu_platform.change.diff import by_key, diff_plans
from gpu_platform.change.inputs import demand_p95, usage_snapshot
from gpu_platform.change.owners import GATE_PATHS, owners_of, read_codeowners
from gpu_platform.change.report import ChangeReport, Finding, render_github, render_markdown, render_text
from gpu_platform.change.summary import CostDelta, cost_delta, quota_changes
from gpu_platform.change.trailers import read_trailers
from gpu_platform.change.values import key_changes
from gpu_platform.commands import check
from gpu_platform.engine import run_program
from gpu_platform.errors import ConfigError
from gpu_platform.spec.loader import decoded_config, load_stack, spec_from_config
from gpu_platform.spec.models import PlatformSpec
from gpu_platform_policies import CHANGE_RULES, Resource, Violation, evaluate
from gpu_platform_policies.changeview import ChangeView, evaluate_change, tier_rows
from gpu_platform_policies.model import PlanView
from gpu_platform_policies.placement import place
from gpu_platform_policies.strictness import loosened, setting_of, strictest


@dataclass
class Outcome:
    """Everything one `--base` run found."""

    report: ChangeReport
    state: list[Violation]
    change: list[Violation]
    spec: PlatformSpec
    loosened: list[tuple[str, str, str]]
    own_mandatory: int  # mandatory violations with the working tree's own gate settings (what a loosening PR would see)
    base_rules: BaseVerdict | None = None  # the base revision's rules over this plan, when the change touches rule code


def _resources(items: list[dict[str, Any]]) -> list[Resource]:
    # The base revision's plan (JSON from its own program) may predate `refs`: its joins then read ids as text.
    return [Resource(str(r["type"]), str(r["name"]), r.get("parent"), r.get("inputs") or {}, r.get("source"), r.get("refs") or {}) for r in items]


def compare(args: argparse.Namespace, path: Path, stack: str, rules: bool) -> Outcome:
    """Plan base and working tree (in parallel), diff them, and run the change and state rules when `rules`."""
    root = repository_root(path)
    job = BasePlanJob(root, args.base, path, stack)
    try:
        config, spec = load_stack(path, stack)
        if rules:
            problems = check.check_policy_config(spec, str(path))
            if problems:
                raise ConfigError(problems)
        catalog = load_catalog()
        usage = usage_snapshot(args.usage, spec, catalog) if getattr(args, "usage", None) else None
        # A demand file wins; else the stack's own `demand` (what `capacity plan --write-stack` recorded).
        demand = demand_p95(args.demand, spec, catalog, str(path)) if getattr(args, "demand", None) else None
        if demand is None and spec.demand:
            demand = {d.workload_class: float(d.p95) for d in spec.demand}
        # In the base revision's process judging a change to the rules (base_rules): the working tree's plan.
        after = judged_plan()
        if after is None:
            plan = run_program(config, stack, spec)
            after = [{**r.to_json(), "source": r.source, "refs": r.refs} for r in plan.resources]
    except BaseException:
        job.cancel()
        raise
    base = job.result()
    sources = {(str(r["type"]), str(r["name"])): r.get("source") for r in base.resources}
    changes = [
        replace(c, source=sources.get((c.type, c.name))) if c.action == "delete" and sources.get((c.type, c.name)) else c
        for c in diff_plans(by_key(base.resources), by_key(after))
    ]
    before_view, after_view = PlanView(_resources(base.resources)), PlanView(_resources(after))
    # The base decides how strict the gate is: each setting at the stricter of base and working tree.
    base_config = base.config  # parsed (and bounded) once
    base_setting, own_setting = setting_of(base_config), setting_of(config)
    judged = strictest(base_setting, own_setting)
    ctx = check.gate_context(spec, root)
    ctx = replace(ctx, thresholds={**ctx.thresholds, **judged.thresholds}, production_setting=judged.production)
    rel = path.resolve().relative_to(root).as_posix()
    gate_changes = changed_paths(root, base.commit, GATE_PATHS)
    codeowners = read_codeowners(root)
    view = ChangeView(
        before=before_view,
        after=after_view,
        changes=tuple(changes),
        catalog=catalog,
        before_config=base_config,
        after_config=config,
        before_lock=base.lock,
        after_lock=lock_facts(spec.lock),
        usage=usage,
        demand_p95=demand,
        maintenance=tuple(m.text for m in read_trailers(maintenance_trailers(root, base.commit), f"commits {base.commit[:12]}..HEAD")),
        production=ctx.production,
        gate_changes=gate_changes,
        owners={p: owners_of(p, codeowners) for p in (*gate_changes, rel)},
        stack_file=rel,
    )
    state: list[Violation] = []
    change: list[Violation] = []
    own_mandatory = 0
    loose = loosened(base_setting, own_setting)
    base_rules = None
    rule_code = rule_code_changes(gate_changes)
    if rules and rule_code and os.environ.get(JUDGED_PLAN) is None:
        extra = [a for option in ("usage", "demand") if getattr(args, option, None) for a in (f"--{option}", str(getattr(args, option).resolve()))]
        base_rules = judge(root, base.commit, path, after, extra, rule_code)
    if rules:
        state = place(evaluate(after_view.resources, ctx, judged.enforcement), path, root)
        change = place(evaluate_change(view, judged.enforcement), path, root)
        if loose:  # what the change's own settings would have let through, printed beside the verdict
            own_ctx = check.gate_context(spec, root)
            own = evaluate(after_view.resources, own_ctx, spec.policy.enforcement) + evaluate_change(view, spec.policy.enforcement)
            own_mandatory = sum(v.level == "mandatory" for v in own if v.policy not in ("gate-loosened",))
    findings = [Finding(v.policy, v.level, v.resource, v.message, v.file or str(path), v.key, v.line) for v in change]
    report = ChangeReport(
        stack,
        str(path),
        args.base,
        base.commit,
        changes,
        list(tier_rows(view)),
        findings,
        view.maintenance,
        len(CHANGE_RULES) if rules else 0,
        # Pulumi hands structured config to the program as JSON text: both sides compared as the loader reads them,
        # so a value written as JSON on one side and YAML on the other is no change.
        stack_keys=key_changes(decoded_config(base_config), decoded_config(config)),
        quotas=quota_changes(decoded_config(base_config), decoded_config(config)),
        cost=_cost(base_config, spec, stack, path, catalog),
    )
    return Outcome(report, state, change, spec, loose, own_mandatory, base_rules)


def _cost(base_config: Mapping[str, Any], spec: PlatformSpec, stack: str, path: Path, catalog: Catalog) -> CostDelta:
    """Both sides priced by `capacity`'s model; a base this revision's code cannot read is said, not guessed."""
    if not base_config:  # a stack file the change adds: nothing ran at the base, so before is $0
        return cost_delta(None, spec, catalog, str(path), new_stack=True)
    try:
        before = spec_from_config(base_config, stack, f"{path} at the base revision")
    except ConfigError as err:
        first = next(iter(err.problems), None)
        why = f"the base revision's stack does not load with this revision's code: {first.path}: {first.message}" if first else ""
        return cost_delta(None, spec, catalog, str(path), why)
    return cost_delta(before, spec, catalog, str(path))


def run_diff(args: argparse.Namespace, path: Path, stack: str) -> int:
    """`diff --base REF`: the resource changes and GPUs per tier; exit 0 (2 on bad input)."""
    out = compare(args, path, stack, rules=False)
    if args.format == "json":
        print(json.dumps(out.report.to_json(), indent=2))
    elif args.format == "markdown":
        print(render_markdown(out.report))
    else:
        print(render_text(out.report))
    return 0


def base_only(verdict: BaseVerdict | None, own: list[Violation]) -> list[Violation]:
    """What the base revision's rules found that this change's own rules did not (each marked as the base's).

    A base that could not judge the change is itself a mandatory finding: the change fails closed.
    """
    if verdict is None:
        return []
    if verdict.problem:
        why = f"{', '.join(verdict.changed)} changed and {verdict.problem}; the change cannot be judged by the rules it changes"
        return [Violation("gate-code-changed", "mandatory", "repository", why, verdict.changed[0])]
    seen = {(v.policy, v.resource, v.message) for v in own}
    return [
        Violation(
            str(v["policy"]),
            v["level"],
            str(v["resource"]),
            f"(the base revision's rule; this change's own rules did not find it) {v['message']}",
            v.get("file"),
            v.get("keyPath"),
            v.get("line"),
        )
        for v in verdict.violations
        if (v["policy"], v["resource"], v["message"]) not in seen
    ]


def run_check(args: argparse.Namespace, path: Path, stack: str) -> int:
    """`check --base REF`: every state rule as `check` runs them, plus the change rules; exit 1 on a mandatory one.

    When the change touches rule code, the base revision's rules judge it too (change.base_rules): what only
    they find is reported beside this change's own findings, and counts toward the verdict.
    """
    out = compare(args, path, stack, rules=True)
    gate = check.GateSettings.of(out.spec, check.gate_context(out.spec))
    extra = base_only(out.base_rules, out.state + out.change)
    verdict = out.state + out.change + extra
    if args.format == "json":
        doc = json.loads(check.render_json(stack, str(path), out.state + out.change + extra, gate))
        doc["summary"]["changeRules"] = len(CHANGE_RULES)
        doc["change"] = out.report.to_json()
        if out.loosened:
            doc["summary"]["loosened"] = [{"key": k, "base": b, "change": h} for k, b, h in out.loosened]
            doc["summary"]["mandatoryWithOwnSettings"] = out.own_mandatory
        if out.base_rules is not None:
            doc["summary"]["baseRules"] = {
                "commit": out.base_rules.commit,
                "ruleCodeChanged": list(out.base_rules.changed),
                "judged": not out.base_rules.problem,
                "problem": out.base_rules.problem or None,
                "mandatory": out.base_rules.mandatory,
                "onlyBase": len(extra),
            }
        print(json.dumps(doc, indent=2))
    elif args.format == "github":
        print(check.render_github(str(path), out.state + extra, gate))
        print("\n".join(render_github(out.report)))
    elif args.format == "markdown":
        print(render_markdown(out.report, out.state + extra))
    else:
        print(verdict_line(out, extra))
        print()
        print(check.render_text(stack, out.state + extra, gate, title=f"State rules on stack {stack}"))
        if out.loosened:
            print(
                f"  Judged with the base's gate settings: this change loosens {len(out.loosened)} of them; "
                f"with its own it would have {out.own_mandatory} mandatory violation(s)"
            )
        if out.base_rules is not None:
            print(f"  {base_rules_line(out.base_rules, extra)}")
        print()
        print(render_text(out.report))
        print()
        print(verdict_line(out, extra))
    return 1 if any(v.level == "mandatory" for v in verdict) else 0


def verdict_line(out: Outcome, extra: list[Violation]) -> str:
    """The verdict the exit code carries, counted over every finding that decides it (state, change, the base's rules)."""
    parts = [("state", out.state), ("change", out.change), ("the base revision's", extra)]
    mandatory = {name: sum(v.level == "mandatory" for v in found) for name, found in parts}
    advisory = sum(v.level == "advisory" for _, found in parts for v in found)
    total = sum(mandatory.values())
    where = ", ".join(f"{n} from {name} rules" for name, n in mandatory.items() if n or name != "the base revision's")
    verdict = "FAILS" if total else "passes"
    r = out.report
    return (
        f"Stack {r.stack} against {r.base} ({r.commit[:12]}): the gate {verdict}: {total} mandatory ({where}) "
        f"and {advisory} advisory finding(s); exit {1 if total else 0}"
    )


def base_rules_line(verdict: BaseVerdict, extra: list[Violation]) -> str:
    """One line: the rule code changed, and what the base revision's rules made of the change."""
    what = f"rule code changed ({len(verdict.changed)} file(s)), so the base revision {verdict.commit[:12]}'s rules judged it too"
    if verdict.problem:
        return f"{what}, and could not: {verdict.problem}"
    return f"{what}: {verdict.mandatory} mandatory violation(s) by its rules, {len(extra)} of them not found by this change's own"
