"""The plain data every rule works on: a resource view, findings, rules and their context.

Rules never see Pulumi or CrossGuard objects. The offline gate (`gpu-platform check`) builds
`Resource`s from the mock engine's plan; the CrossGuard pack builds them from the policy args.
Both carry the same Pulumi type token and the same camelCase wire inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from gpu_platform.behaviour.wiring import Wiring
from gpu_platform.catalog import Catalog
from gpu_platform.federation import WORKER_COMPONENT
from gpu_platform.versions import Lockfile

Level = Literal["advisory", "mandatory", "disabled"]
Scope = Literal["resource", "stack", "repository", "change"]
LEVELS: tuple[Level, ...] = ("advisory", "mandatory", "disabled")
# Environment names that mean production when a stack does not say (`policy.production`).
PRODUCTION_WORDS = ("prod", "production", "prd", "live")
NOT_PRODUCTION_PREFIXES = ("pre", "non")


def default_production(environment: str | None) -> bool:
    """The documented default of `policy.production`: the environment's name says production.

    A name is production when one of its `-`/`_`-separated words is prod, production, prd or live
    (prod, prod-eu, eu-west-prod, live_2), unless that word follows pre/non (pre-prod, non-prod).
    """
    words = re.split(r"[-_]", (environment or "").lower())
    for i, word in enumerate(words):
        stem = word.rstrip("0123456789")
        if stem in PRODUCTION_WORDS and not (i > 0 and words[i - 1] in NOT_PRODUCTION_PREFIXES):
            return True
    return False


@dataclass(frozen=True)
class Resource:
    """One planned resource: Pulumi type token, logical name, parent's logical name, wire inputs."""

    type: str
    name: str
    parent: str | None
    inputs: Mapping[str, Any]
    source: str | None = None
    """The stack key the program built it from (`gpu-platform:nodePools[2]`); None under CrossGuard, which sees no stack file."""
    refs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Input name -> the resources its value was built from (Pulumi's property dependencies; behaviour.wiring)."""
    secrets: tuple[str, ...] | None = None
    """Inputs that are or hold a Pulumi secret; None where that is not known (CrossGuard's validation hands secrets unwrapped)."""


@dataclass(frozen=True)
class Finding:
    """What a rule reports: the resource (or repository file) at fault and why.

    Where the user fixes it: `key`, a full stack key path (`gpu-platform:nodePools[0].instanceTypes`),
    or `field`, a path under the key the resource was built from (`scaling.max` under
    `gpu-platform:nodePools[2]`). With neither, the finding points at the resource's own key
    (evaluate() fills it in), so a rule cannot leave a finding without a place in the stack file.
    """

    resource: str
    message: str
    file: str | None = None
    key: str | None = None
    field: str | None = None


@dataclass(frozen=True)
class Violation:
    """A finding with its rule and the enforcement level it was reported at."""

    policy: str
    level: Level
    resource: str
    message: str
    file: str | None = None
    key: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The `check --format json` shape: where to fix it (file, line, keyPath), then the resource it shows on."""
        out: dict[str, Any] = {"policy": self.policy, "level": self.level, "resource": self.resource, "message": self.message}
        if self.file:
            out["file"] = self.file
        if self.line:
            out["line"] = self.line
        if self.key:
            out["keyPath"] = self.key
        return out

    def where(self) -> str:
        """`stacks/Pulumi.prod.yaml:57 gpu-platform:nodePools[2].scaling.max` (as much of it as is known)."""
        at = f"{self.file}:{self.line}" if self.file and self.line else self.file or ""
        return " ".join(part for part in (at, self.key) if part)


@dataclass(frozen=True)
class Context:
    """What rules may know besides the resources: environment, thresholds, lockfile, catalog."""

    lock: Lockfile
    catalog: Catalog
    environment: str | None = None
    thresholds: Mapping[str, float] = field(default_factory=dict)
    root: Path | None = None
    # The stack's explicit `policy.production`; None: derived from the environment's name.
    production_setting: bool | None = None
    # The stack's effective lockfile (the repository's with the stack's `versions` override laid over
    # it): what the stack really deploys. `lock` stays the repository's, the reference for drift and
    # for the compatibility matrix, so an override cannot relax the matrix it is judged by.
    stack_lock: Lockfile | None = None
    # The day the gate runs; None means today (tests inject a fixed day).
    today: date | None = None

    @property
    def deployed(self) -> Lockfile:
        """The versions the stack deploys (its own lockfile when known, else the repository's)."""
        return self.stack_lock or self.lock

    @property
    def day(self) -> date:
        """The day the gate compares end-of-support dates against."""
        return self.today or date.today()

    @property
    def production(self) -> bool:
        """True for production stacks (production-only rules apply): the stack's setting, else its default."""
        if self.production_setting is not None:
            return self.production_setting
        return default_production(self.environment)

    @property
    def production_source(self) -> str:
        """Why `production` has its value, for the gate's output."""
        if self.production_setting is not None:
            return "policy.production"
        return f"default for environment '{self.environment or ''}'"

    def threshold(self, name: str) -> float:
        """A threshold by name: the stack's override, else the default its rule declared."""
        if name in self.thresholds:
            return float(self.thresholds[name])
        return THRESHOLD_DEFAULTS[name]


ResourceCheck = Callable[[Resource, Context], Iterable[str]]
StackCheck = Callable[["PlanView", Context], Iterable[Finding]]
RepositoryCheck = Callable[[Path, Context], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    """One policy: kebab-case name, one-line description, default level, scope and check."""

    name: str
    description: str
    level: Level
    scope: Scope
    check: Callable[..., Iterable[Any]]
    types: tuple[str, ...] = ()
    thresholds: Mapping[str, float] = field(default_factory=dict)
    category: str = ""
    not_applicable: Callable[[PlanView, Context], str | None] | None = None
    """Stack rules whose input may be absent: the reason the rule has nothing to judge, else None."""
    federation: bool = False
    """Stack rules over a MultiKueue stack's clusters together; every other stack rule judges each cluster alone."""

    def stack_findings(self, plan: PlanView, ctx: Context) -> list[Finding]:
        """A stack rule's findings: over the whole stack (federation rules), else over each cluster of it in turn.

        A federation rule with nothing to judge (its not_applicable gives a reason: no workers) does not run.
        """
        if self.federation:
            if self.not_applicable is not None and self.not_applicable(plan, ctx):
                return []
            return list(self.check(plan, ctx))
        return [f for cluster in plan.clusters() for f in self.check(cluster, ctx)]

    def applies_to(self, resource: Resource) -> bool:
        """Resource rules run on their type tokens only (every type when none are listed)."""
        return not self.types or resource.type in self.types


THRESHOLD_DEFAULTS: dict[str, float] = {}
RULES: dict[str, Rule] = {}
# Rules over a change (base plan -> working tree plan), run only by `check --base`: kept apart so the
# CrossGuard pack and the state gate, which see one plan, never meet them.
CHANGE_RULES: dict[str, Rule] = {}


def rule(
    name: str,
    description: str,
    level: Level,
    scope: Scope,
    *,
    category: str,
    types: tuple[str, ...] = (),
    thresholds: Mapping[str, float] | None = None,
    not_applicable: Callable[[PlanView, Context], str | None] | None = None,
    federation: bool = False,
) -> Callable[[Callable[..., Iterable[Any]]], Callable[..., Iterable[Any]]]:
    """Register a check function as a rule (names are unique; thresholds share one namespace)."""

    def register(fn: Callable[..., Iterable[Any]]) -> Callable[..., Iterable[Any]]:
        assert name not in RULES and name not in CHANGE_RULES, f"duplicate rule {name}"
        for key, value in (thresholds or {}).items():
            assert THRESHOLD_DEFAULTS.get(key, value) == value, f"threshold {key} has two defaults"
            THRESHOLD_DEFAULTS[key] = value
        registry = CHANGE_RULES if scope == "change" else RULES
        registry[name] = Rule(name, description, level, scope, fn, types, dict(thresholds or {}), category, not_applicable, federation)
        return fn

    return register


class PlanView:
    """The resources of one stack, with the lookups stack rules share."""

    def __init__(self, resources: Iterable[Resource]):
        self.resources = list(resources)
        self._by_type: dict[str, list[Resource]] = {}
        self._by_name: dict[str, Resource] = {}
        for r in self.resources:
            self._by_type.setdefault(r.type, []).append(r)
            self._by_name.setdefault(r.name, r)

    @cached_property
    def wiring(self) -> Wiring:
        """Which resource each reference input names (behaviour.wiring), built once for every rule that follows references."""
        return Wiring(self.resources)

    def clusters(self) -> list[PlanView]:
        """The stack's clusters, each as a view of its own: the stack's own cluster first, then its MultiKueue workers."""
        return list(self.by_cluster().values())

    def by_cluster(self) -> dict[str | None, PlanView]:
        """Each cluster's view by its worker's WorkerScope name (None: the stack's own cluster, first).

        A worker is the resources under its `gpu-platform:index:Worker` component (gpu_platform.federation); the
        stack's own cluster is the rest. A single-cluster stack is one view, this one.
        """
        workers = {r.name for r in self.of_type(WORKER_COMPONENT)}
        if not workers:
            return {None: self}
        owner: dict[str, str | None] = {}

        def worker_of(name: str | None) -> str | None:
            chain: list[str] = []
            found: str | None = None
            while name is not None and name not in owner and name not in workers and name not in chain:
                chain.append(name)
                r = self._by_name.get(name)
                name = r.parent if r is not None else None
            if name in workers:
                found = name
            elif name is not None and name in owner:
                found = owner[name]
            for n in chain:
                owner[n] = found
            return found

        groups: dict[str | None, list[Resource]] = {None: []}
        for r in self.resources:
            groups.setdefault(worker_of(r.name), []).append(r)
        return {w: PlanView(rs) for w, rs in groups.items()}

    def of_type(self, *types: str) -> list[Resource]:
        """Resources of any of these type tokens."""
        return [r for t in types for r in self._by_type.get(t, [])]

    def __iter__(self) -> Iterator[Resource]:
        return iter(self.resources)

    def source_of(self, name: str) -> str | None:
        """The stack key a resource (by logical name) was built from: its own, else its nearest parent's."""
        seen: set[str] = set()
        current: str | None = name
        while current is not None and current not in seen:
            seen.add(current)
            r = self._by_name.get(current)
            if r is None:
                return None
            if r.source:
                return r.source
            current = r.parent
        return None
