"""CrossGuard wrappers: each rule as a Resource- or StackValidationPolicy over the same plain view.

The engine hands a policy the resource's type token and its inputs with camelCase wire names,
exactly what the offline plan records, so a rule cannot tell which runner called it. Repository
rules (the Ansible tree) are not resources and run only in `gpu-platform check`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpu_platform.behaviour.wiring import UNKNOWN, refs_of
from gpu_platform.catalog import load_catalog
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.versions import Lockfile, deep_merge, load_lockfile, parse_lockfile, raw_lockfile
from gpu_platform_policies.model import RULES, THRESHOLD_DEFAULTS, Context, Finding, PlanView, Resource, Rule

ENV_TAG = "gpu-platform:environment"


REPOSITORY = Path(__file__).resolve().parents[2]


def plain(value: Any) -> Any:
    """Props as plain dicts and lists; values unknown during preview become UNKNOWN, not errors."""
    if isinstance(value, Mapping):
        out = {}
        for key in list(value.keys()):
            try:
                out[str(key)] = plain(value[key])
            except Exception:  # pulumi_policy's UnknownValueError: computed at apply time
                out[str(key)] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = []
        for i in range(len(value)):
            try:
                items.append(plain(value[i]))
            except Exception:
                items.append(UNKNOWN)
        return items
    return value


def _name_from_urn(urn: str | None) -> str | None:
    return urn.rsplit("::", 1)[-1] if urn else None


def resource_view(
    resource_type: str, name: str, props: Mapping[str, Any], parent: str | None = None, refs: Mapping[str, tuple[str, ...]] | None = None
) -> Resource:
    """The plain view of one CrossGuard resource (with its property dependencies, where the engine hands them over)."""
    return Resource(resource_type, name, parent, plain(props), None, dict(refs or {}))


def versions_override(stack_lock: Lockfile, lock: Lockfile) -> dict[str, Any]:
    """The part of a stack's effective lockfile that differs from the repository's (empty when none)."""

    def diff(mine: Any, base: Any) -> Any:
        if isinstance(mine, Mapping) and isinstance(base, Mapping):
            out = {k: d for k, v in mine.items() if (d := diff(v, base.get(k))) is not None}
            return out or None
        return None if mine == base else mine

    return diff(stack_lock.model_dump(by_alias=True, mode="json"), lock.model_dump(by_alias=True, mode="json")) or {}


def _stack_lock(config: Mapping[str, Any]) -> Lockfile | None:
    """The stack's effective lockfile from the pack config's `versions` override (None without one)."""
    override = config.get("versions")
    if not isinstance(override, Mapping) or not override:
        return None
    return parse_lockfile(deep_merge(raw_lockfile(), override), file="policy pack config")


def context(config: Mapping[str, Any], resources: Iterable[Resource] = ()) -> Context:
    """Rule context from a policy's pack config: thresholds and environment (else the stack's env tag)."""
    env = config.get("environment")
    if not env:
        env = next(
            (r.inputs.get("tags", {}).get(ENV_TAG) for r in resources if isinstance(r.inputs.get("tags"), Mapping) and r.inputs["tags"].get(ENV_TAG)),
            None,
        )
    thresholds = {k: float(v) for k, v in config.items() if k in THRESHOLD_DEFAULTS and isinstance(v, (int, float))}
    production = config.get("production")
    return Context(
        lock=load_lockfile(),
        catalog=load_catalog(),
        environment=env,
        thresholds={**THRESHOLD_DEFAULTS, **thresholds},
        production_setting=production if isinstance(production, bool) else None,
        stack_lock=_stack_lock(config),
        # The rules that read the repository (inventories, image manifests) read this checkout, not the directory
        # Pulumi starts the pack in (policies/pack).
        root=REPOSITORY if (REPOSITORY / "Pulumi.yaml").is_file() else None,
    )


def config_schema(rule: Rule) -> PolicyConfigSchema:
    """Each policy takes its rule's thresholds (numbers) and the stack's environment name."""
    props: dict[str, dict[str, Any]] = {
        "environment": {"type": "string", "description": "environment name (decides production when `production` is not given)"},
        "production": {"type": "boolean", "description": "the stack's policy.production: whether production-only rules apply"},
        "versions": {"type": "object", "description": "the stack's gpu-platform:versions override (what it deploys)"},
    }
    for name, default in rule.thresholds.items():
        props[name] = {"type": "number", "default": default}
    return PolicyConfigSchema(properties=props)


def _said(found: str | Finding) -> str:
    """A finding's message for CrossGuard: the same words the offline gate prints (it sees no stack file to place them in)."""
    return found if isinstance(found, str) else found.message


def _resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        parent = getattr(getattr(args, "opts", None), "parent", None)
        res = resource_view(args.resource_type, args.name, args.props, _name_from_urn(parent))
        if not rule.applies_to(res):
            return
        ctx = context(args.get_config(), [res])
        for found in rule.check(res, ctx):
            # A rule that names the field it judged yields a Finding; CrossGuard sees no stack file, so only its words travel.
            report_violation(_said(found), None)

    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=EnforcementLevel(rule.level),
        config_schema=config_schema(rule),
    )


def _stack_policy(rule: Rule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [
            resource_view(r.resource_type, r.name, r.props, r.parent.name if r.parent is not None else None, refs_of(r.property_dependencies))
            for r in args.resources
        ]
        urns = {r.name: r.urn for r in args.resources}
        ctx = context(args.get_config(), resources)
        for finding in rule.stack_findings(PlanView(resources), ctx):
            report_violation(f"{finding.resource}: {_said(finding)}", urns.get(finding.resource))

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=EnforcementLevel(rule.level),
        config_schema=config_schema(rule),
    )


def build_policies() -> list[Policy]:
    """One CrossGuard policy per resource or stack rule, at the rule's default level."""
    policies: list[Policy] = []
    for rule in RULES.values():
        if rule.scope == "resource":
            policies.append(_resource_policy(rule))
        elif rule.scope == "stack":
            policies.append(_stack_policy(rule))
    return policies


def pack_config(spec: PlatformSpec) -> dict[str, Any]:
    """The `--policy-pack-config` document that gives the pack a stack's levels and thresholds."""
    out: dict[str, Any] = {}
    override = versions_override(spec.lock, load_lockfile())
    for rule in RULES.values():
        if rule.scope == "repository":
            continue
        entry: dict[str, Any] = {"enforcementLevel": spec.policy.enforcement.get(rule.name, rule.level), "environment": spec.environment}
        if spec.policy.production is not None:
            entry["production"] = spec.policy.production
        if override:
            entry["versions"] = override
        for name, default in rule.thresholds.items():
            entry[name] = spec.policy.thresholds.get(name, default)
        out[rule.name] = entry
    return out
