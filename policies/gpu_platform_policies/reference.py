"""The rule tables of docs/policies.md, generated from the rule set so it cannot drift."""

from __future__ import annotations

from gpu_platform_policies import CATEGORIES, CHANGE_RULES, RULES


def markdown() -> str:
    """Rules grouped by category: name, default level, thresholds with defaults, description."""
    order = {module.__name__.rsplit(".", 1)[-1]: i for i, module in enumerate(CATEGORIES)}
    lines = ["| rule | category | default level | thresholds | checks |", "|---|---|---|---|---|"]
    for rule in sorted(RULES.values(), key=lambda r: (order.get(r.category, 99), r.name)):
        thresholds = ", ".join(f"`{k}` = {v:g}" for k, v in rule.thresholds.items())
        lines.append(f"| `{rule.name}` | {rule.category} | {rule.level} | {thresholds} | {rule.description} |")
    return "\n".join(lines)


def change_markdown() -> str:
    """The change rules `check --base` runs: name, default level, description."""
    lines = ["| change rule | default level | checks |", "|---|---|---|"]
    lines += [f"| `{r.name}` | {r.level} | {r.description} |" for r in CHANGE_RULES.values()]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(change_markdown() if sys.argv[1:] == ["--change"] else markdown())
