"""How strict the gate is on a change: the base revision decides, a pull request can only tighten it.

A stack file's `policy` block (enforcement levels, thresholds, `production`) is part of the change it
judges: read from the working tree alone, a pull request could switch off the rule it breaks in the same
diff. `check --base` therefore judges with, for each setting, the stricter of the base's and the working
tree's value (`strictest`), and reports every setting the change loosens (`loosened`), which only the
code owners of the stack files may approve (CODEOWNERS; branch protection enforces the approval).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform_policies.model import CHANGE_RULES, RULES, THRESHOLD_DEFAULTS, Level, default_production

NS = "gpu-platform:"
LEVEL_ORDER: dict[str, int] = {"disabled": 0, "advisory": 1, "mandatory": 2}


@dataclass(frozen=True)
class GateSetting:
    """One stack's `policy` block as the gate reads it (absent keys: the defaults)."""

    enforcement: Mapping[str, Level]
    thresholds: Mapping[str, float]
    production: bool


def setting_of(config: Mapping[str, Any]) -> GateSetting:
    """The `gpu-platform:policy` block and environment of one side's stack config; malformed parts read as unset."""
    policy = config.get(NS + "policy")
    policy = policy if isinstance(policy, Mapping) else {}
    enforcement = policy.get("enforcement")
    levels = {str(k): v for k, v in enforcement.items() if v in LEVEL_ORDER} if isinstance(enforcement, Mapping) else {}
    raw = policy.get("thresholds")
    thresholds: dict[str, float] = {}
    for k, v in raw.items() if isinstance(raw, Mapping) else ():
        if isinstance(v, int | float) and not isinstance(v, bool):
            thresholds[str(k)] = float(v)
    production = policy.get("production")
    if not isinstance(production, bool):
        env = config.get(NS + "environment")
        production = default_production(env if isinstance(env, str) else None)
    return GateSetting(levels, thresholds, production)


def default_level(rule: str) -> Level | None:
    """The rule's own level (state or change rule), None for a name no rule has."""
    found = RULES.get(rule) or CHANGE_RULES.get(rule)
    return found.level if found is not None else None


def tighter_threshold(name: str) -> Any:
    """Min for a `max-*`-style threshold (a lower ceiling is stricter), max for a `min-*`-style one."""
    words = name.split("-")
    if "max" in words:
        return min
    if "min" in words:
        return max
    raise ValueError(f"threshold {name} says neither max nor min: which way is stricter is unknown")


def strictest(base: GateSetting, head: GateSetting) -> GateSetting:
    """Per setting, the stricter of the base's and the working tree's."""
    levels: dict[str, Level] = {}
    for rule in set(base.enforcement) | set(head.enforcement):
        own = default_level(rule)
        if own is None:
            continue
        b, h = base.enforcement.get(rule, own), head.enforcement.get(rule, own)
        levels[rule] = b if LEVEL_ORDER[b] >= LEVEL_ORDER[h] else h
    thresholds: dict[str, float] = {}
    for name in set(base.thresholds) | set(head.thresholds):
        if name not in THRESHOLD_DEFAULTS:
            continue
        default = THRESHOLD_DEFAULTS[name]
        thresholds[name] = tighter_threshold(name)(base.thresholds.get(name, default), head.thresholds.get(name, default))
    return GateSetting(levels, thresholds, base.production or head.production)


def loosened(base: GateSetting, head: GateSetting) -> list[tuple[str, str, str]]:
    """(stack key path, base value, working tree value) of every setting the working tree makes less strict."""
    out: list[tuple[str, str, str]] = []
    for rule in sorted(set(base.enforcement) | set(head.enforcement)):
        own = default_level(rule)
        if own is None:
            continue
        b, h = base.enforcement.get(rule, own), head.enforcement.get(rule, own)
        if LEVEL_ORDER[h] < LEVEL_ORDER[b]:
            out.append((f"{NS}policy.enforcement.{rule}", b, h))
    for name in sorted(set(base.thresholds) | set(head.thresholds)):
        if name not in THRESHOLD_DEFAULTS:
            continue
        default = THRESHOLD_DEFAULTS[name]
        b_value, h_value = base.thresholds.get(name, default), head.thresholds.get(name, default)
        if tighter_threshold(name)(b_value, h_value) != h_value:
            out.append((f"{NS}policy.thresholds.{name}", f"{b_value:g}", f"{h_value:g}"))
    if base.production and not head.production:
        out.append((f"{NS}policy.production", "true", "false"))
    return out
