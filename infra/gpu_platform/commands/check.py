"""`gpu-platform check`: every policy over the offline plan (and the repository), for people, machines and CI."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from gpu_platform.catalog import load_catalog
from gpu_platform.commands import bad_input
from gpu_platform.commands.bad_input import escape as _escape
from gpu_platform.commands.stacks import find_root
from gpu_platform.engine import run_program
from gpu_platform.errors import ConfigError, Problem, did_you_mean, one_of
from gpu_platform.spec.loader import load_stack
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.spec.secret_scan import detected_credentials
from gpu_platform.versions import load_lockfile
from gpu_platform_policies import CHANGE_RULES, RULES, THRESHOLD_DEFAULTS, Context, Resource, Rule, Violation, evaluate
from gpu_platform_policies.evaluate import not_applicable
from gpu_platform_policies.placement import place

POLICY_KEY = "gpu-platform:policy"


def check_policy_config(spec: PlatformSpec, file: str) -> list[Problem]:
    """Unknown rule or threshold names in the stack's policy section (typos would silently do nothing)."""
    known = {**RULES, **CHANGE_RULES}  # change rules (check --base) take the same enforcement overrides
    problems = [
        Problem(file, f"{POLICY_KEY}.enforcement.{name}", f"unknown rule '{name}'{did_you_mean(name, known)}", one_of(known))
        for name in spec.policy.enforcement
        if name not in known
    ]
    problems += [
        Problem(
            file, f"{POLICY_KEY}.thresholds.{name}", f"unknown threshold '{name}'{did_you_mean(name, THRESHOLD_DEFAULTS)}", one_of(THRESHOLD_DEFAULTS)
        )
        for name in spec.policy.thresholds
        if name not in THRESHOLD_DEFAULTS
    ]
    return problems


def _rule(name: str) -> Rule:
    return RULES.get(name) or CHANGE_RULES[name]


@dataclass(frozen=True)
class GateSettings:
    """What the stack changed about the gate, shown in every output format so nothing is silently off."""

    production: bool
    production_source: str
    disabled: tuple[str, ...]
    levels: tuple[tuple[str, str, str], ...]  # (rule, default level, stack's level)
    thresholds: tuple[tuple[str, float, float], ...]  # (threshold, default, stack's value)
    not_applicable: tuple[tuple[str, str], ...] = ()  # (rule, why it had nothing to judge)

    @classmethod
    def of(cls, spec: PlatformSpec, ctx: Context, not_applicable: Sequence[tuple[str, str]] = ()) -> GateSettings:
        """The stack's policy overrides that differ from the rule set's defaults."""
        enforcement = spec.policy.enforcement
        return cls(
            production=ctx.production,
            production_source=ctx.production_source,
            disabled=tuple(sorted(n for n, level in enforcement.items() if level == "disabled")),
            levels=tuple(sorted((n, _rule(n).level, level) for n, level in enforcement.items() if level not in ("disabled", _rule(n).level))),
            thresholds=tuple(sorted((n, THRESHOLD_DEFAULTS[n], v) for n, v in spec.policy.thresholds.items() if float(v) != THRESHOLD_DEFAULTS[n])),
            not_applicable=tuple(not_applicable),
        )

    def lines(self) -> list[str]:
        """One line each: production, rules disabled, levels and thresholds changed by the stack."""
        out = [f"production: {'yes' if self.production else 'no'} ({self.production_source})"]
        if self.disabled:
            out.append(f"disabled by the stack: {', '.join(self.disabled)}")
        if self.levels:
            out.append("level changed by the stack: " + ", ".join(f"{n} {d} -> {level}" for n, d, level in self.levels))
        if self.thresholds:
            out.append("threshold changed by the stack: " + ", ".join(f"{n} {d:g} -> {v:g}" for n, d, v in self.thresholds))
        out += [f"not applicable: {n} ({why})" for n, why in self.not_applicable]
        return out

    def to_json(self) -> dict[str, object]:
        """The `check --format json` `gate` object."""
        return {
            "production": self.production,
            "productionSource": self.production_source,
            "disabled": list(self.disabled),
            "levels": [{"policy": n, "default": d, "level": level} for n, d, level in self.levels],
            "thresholds": [{"name": n, "default": d, "value": v} for n, d, v in self.thresholds],
            "notApplicable": [{"policy": n, "reason": why} for n, why in self.not_applicable],
        }


def check_stack(path: Path, stack: str, root: Path | None = None) -> tuple[PlatformSpec, list[Violation]]:
    """Validate the stack, plan it offline, and evaluate every enabled rule at the stack's levels."""
    spec, violations, _ = check_stack_details(path, stack, root)
    return spec, violations


def check_stack_details(path: Path, stack: str, root: Path | None = None) -> tuple[PlatformSpec, list[Violation], list[tuple[str, str]]]:
    """`check_stack`, plus the enabled rules that had nothing to judge on this stack and why."""
    config, spec = load_stack(path, stack)
    problems = detected_credentials(config, str(path)) + check_policy_config(spec, str(path))
    if problems:
        raise ConfigError(problems)
    plan = run_program(config, stack, spec)
    resources = [Resource(r.type, r.name, r.parent, r.inputs, r.source, r.refs, r.secrets) for r in plan.resources]
    ctx = gate_context(spec, root)
    violations = place(evaluate(resources, ctx, spec.policy.enforcement), path, ctx.root)
    return spec, violations, not_applicable(resources, ctx, spec.policy.enforcement)


def gate_context(spec: PlatformSpec, root: Path | None = None) -> Context:
    """The rule context of one stack: repository lockfile, the stack's own versions, thresholds, production."""
    return Context(
        lock=load_lockfile(),  # the repository's lockfile: a stack's `versions` override shows up as drift
        catalog=load_catalog(),
        environment=spec.environment,
        thresholds={**THRESHOLD_DEFAULTS, **spec.policy.thresholds},
        root=root or find_root() or Path("."),
        stack_lock=spec.lock,  # what the stack deploys: rules about the running versions read this
        production_setting=spec.policy.production,
    )


def _counts(violations: Sequence[Violation]) -> dict[str, int]:
    return {level: sum(v.level == level for v in violations) for level in ("mandatory", "advisory")}


def _rules_run(gate: GateSettings | None) -> str:
    off = len(gate.disabled) if gate else 0
    idle = len(gate.not_applicable) if gate else 0
    ran = f"{len(RULES) - off - idle} of {len(RULES)} rules" if off or idle else f"{len(RULES)} rules"
    return ran + (f" ({idle} not applicable)" if idle else "")


def render_text(stack: str, violations: Sequence[Violation], gate: GateSettings | None = None, title: str = "") -> str:
    """For people: the stack's gate settings, then violations grouped under their resource, mandatory first."""
    counts = _counts(violations)
    lines = [f"{title or 'Stack ' + stack}: {_rules_run(gate)}, {counts['mandatory']} mandatory and {counts['advisory']} advisory violation(s)"]
    lines += [f"  {line}" for line in (gate.lines() if gate else [])]
    current = None
    for v in violations:
        if v.resource != current:
            current = v.resource
            lines += ["", v.resource]
        lines.append(f"  {v.level:<9}  {v.policy}: {v.message}")
        if v.key or v.line:
            lines.append(f"  {'':<9}  at {v.where()}")
    if not violations:
        lines.append("No violations.")
    return "\n".join(lines)


def render_json(stack: str, file: str, violations: Sequence[Violation], gate: GateSettings | None = None) -> str:
    """For machines: the contract's `{"violations": [{policy, level, resource, message}], ...}` and the `gate` settings."""
    doc: dict[str, object] = {
        "stack": stack,
        "file": file,
        "violations": [v.to_json() for v in violations],
        "summary": {
            **_counts(violations),
            "rules": len(RULES),
            "rulesRun": len(RULES) - (len(gate.disabled) + len(gate.not_applicable) if gate else 0),
            "notApplicable": len(gate.not_applicable) if gate else 0,
            "badInput": 0,  # a stack that could not be checked has its problems here (commands.bad_input)
        },
    }
    if gate is not None:
        doc["gate"] = gate.to_json()
    return json.dumps(doc, indent=2)


def render_github(file: str, violations: Sequence[Violation], gate: GateSettings | None = None) -> str:
    """For pull requests: one `::error`/`::warning` annotation per violation, on the file to change."""
    lines = []
    if gate is not None and (gate.disabled or gate.levels or gate.thresholds):
        # A reviewer sees a weakened gate on the stack file itself, not only in the log.
        changed = "; ".join(line for line in gate.lines()[1:] if not line.startswith("not applicable: "))
        lines.append(f"::notice file={_escape(file, prop=True)},title=policy overrides::{_escape(changed)}")
    for name, why in gate.not_applicable if gate is not None else ():
        # A rule with nothing to judge did not pass: say so where the reviewer looks.
        lines.append(f"::notice file={_escape(file, prop=True)},title={_escape(name, prop=True)} not applicable::{_escape(why)}")
    for v in violations:
        command = "error" if v.level == "mandatory" else "warning"
        where = _escape(v.file or file, prop=True) + (f",line={v.line}" if v.line else "")
        text = f"{v.key}: {v.message} ({v.resource})" if v.key else f"{v.resource}: {v.message}"
        lines.append(f"::{command} file={where},title={_escape(v.policy, prop=True)}::{_escape(text)}")
    counts = _counts(violations)
    lines.append(f"gpu-platform check: {counts['mandatory']} mandatory, {counts['advisory']} advisory violation(s) in {file}")
    lines += [f"gpu-platform check: {line}" for line in (gate.lines() if gate else [])]
    return "\n".join(lines)


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point: 1 when any mandatory violation remains, 0 otherwise (bad input raises: exit 2)."""
    if getattr(args, "base", None) and getattr(args, "all", False):
        raise ConfigError([Problem(str(path), "--base", "cannot be combined with --all", "allowed: --base with one --stack or --config")])
    if getattr(args, "all", False):
        return run_all(args, find_root() or Path("."))
    for option in ("usage", "demand"):
        if getattr(args, option, None) is not None:
            allowed = f"allowed: check --base GIT_REF --{option} FILE"
            raise ConfigError([Problem(str(path), f"--{option}", "only means something with --base", allowed)])
    spec, violations, idle = check_stack_details(path, stack)
    gate = GateSettings.of(spec, gate_context(spec), idle)
    if args.format == "json":
        print(render_json(stack, str(path), violations, gate))
    elif args.format == "github":
        print(render_github(str(path), violations, gate))
    elif args.format == "markdown":
        print(render_markdown(stack, violations, gate))
    else:
        print(render_text(stack, violations, gate))
    return 1 if any(v.level == "mandatory" for v in violations) else 0


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(stack: str, violations: Sequence[Violation], gate: GateSettings | None = None) -> str:
    """For a pull-request comment without --base: the verdict and one table row per violation."""
    counts = _counts(violations)
    verdict = f"{_rules_run(gate)}: {counts['mandatory']} mandatory, {counts['advisory']} advisory violation(s)."
    lines = [f"### gpu-platform check: `{stack}`", "", verdict]
    lines += [f"- {line}" for line in (gate.lines() if gate else [])]
    if violations:
        lines += ["", "| level | rule | where | resource | finding |", "|---|---|---|---|---|"]
        lines += [f"| {v.level} | `{v.policy}` | `{v.where()}` | `{v.resource}` | {_cell(v.message)} |" for v in violations]
    return "\n".join(lines)


def stack_files(root: Path) -> list[Path]:
    """Every stack file under `root/stacks`, by name; ConfigError when there is none."""
    files = sorted((root / "stacks").glob("Pulumi.*.yaml"))
    if not files:
        raise ConfigError(
            [
                Problem(
                    str(root / "stacks"),
                    "",
                    "no stack file (Pulumi.<name>.yaml)",
                    "run inside the repository or set GPU_PLATFORM_ROOT",
                )
            ]
        )
    return files


def run_all(args: argparse.Namespace, root: Path) -> int:
    """`check --all`: each stack exactly as `check --config` checks it, in one process.

    Imports, the lockfile and the catalog load once. Every stack is checked even after one fails;
    exit 2 if any stack is bad input, else 1 if any has a mandatory violation, else 0.
    """
    codes: dict[str, int] = {}
    docs: list[dict[str, object]] = []
    for path in stack_files(root):
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        if args.format == "text" and codes:
            print()
        buffer = io.StringIO()
        one = argparse.Namespace(**{**vars(args), "all": False})
        try:
            if args.format == "json":
                with redirect_stdout(buffer):
                    codes[stack] = run(one, path, stack)
                docs.append(json.loads(buffer.getvalue()))
            else:
                codes[stack] = run(one, path, stack)
        except ConfigError as err:
            codes[stack] = 2
            for problem in err.problems:
                print(bad_input.located(problem), file=sys.stderr)
            if args.format == "json":
                docs.append(bad_input.json_doc(stack, str(path), err.problems))
            else:
                print(bad_input.render(args.format, stack, str(path), err.problems))
    code = 2 if 2 in codes.values() else 1 if 1 in codes.values() else 0
    failed = sorted(s for s, c in codes.items() if c == 1)
    bad = sorted(s for s, c in codes.items() if c == 2)
    if args.format == "json":
        print(json.dumps({"stacks": docs, "summary": {"stacks": len(codes), "failed": failed, "badInput": bad}}, indent=2))
    else:
        if args.format == "text":
            print()
        print(
            f"gpu-platform check --all: {len(codes)} stack(s); mandatory violations in: {', '.join(failed) or 'none'};"
            f" bad input in: {', '.join(bad) or 'none'}"
        )
    return code
