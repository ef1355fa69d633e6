"""What `diff --base` and `check --base` print.

Text for people, JSON for machines, markdown for a pull-request comment, and GitHub annotations on the
stack file line of each change finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.change.diff import ResourceChange, counts

TierRow = tuple[str, str, int, int]  # (workload class, tier, GPUs before, GPUs after)


@dataclass(frozen=True)
class Finding:
    """A change-rule violation placed in a file: what the report needs of it."""

    policy: str
    level: str
    resource: str
    message: str
    file: str
    key: str | None = None
    line: int | None = None

    def where(self) -> str:
        """`file:line (key)` for text output."""
        at = f"{self.file}:{self.line}" if self.line else self.file
        return f"{at} ({self.key})" if self.key else at


@dataclass(frozen=True)
class ChangeReport:
    """One stack's change: base revision, resource changes, GPUs per class and tier, change findings."""

    stack: str
    file: str
    base: str
    commit: str
    changes: Sequence[ResourceChange]
    tiers: Sequence[TierRow]
    findings: Sequence[Finding] = ()
    maintenance: Sequence[str] = field(default_factory=tuple)
    rules: int = 0  # change rules run (0: `diff`, which judges nothing)

    def headline(self) -> str:
        """`3 to create, 1 to update (1 rolls its nodes), 1 to replace, 0 to delete`."""
        n = counts(self.changes)
        rolls = sum(c.rolls_nodes and c.action == "update" for c in self.changes)
        roll = f" ({rolls} roll their nodes)" if rolls else ""
        return f"{n['create']} to create, {n['update']} to update{roll}, {n['replace']} to replace, {n['delete']} to delete"

    def to_json(self) -> dict[str, Any]:
        """`diff --format json` (and the `change` object of `check --base --format json`)."""
        return {
            "stack": self.stack,
            "file": self.file,
            "base": {"ref": self.base, "commit": self.commit},
            "summary": counts(self.changes),
            "changes": [c.to_json() for c in self.changes],
            "gpus": [{"workloadClass": c, "tier": t, "before": b, "after": a} for c, t, b, a in self.tiers],
            "maintenance": list(self.maintenance),
        }


def _action(c: ResourceChange) -> str:
    if c.action == "replace":
        return f"replace  {c.name}  ({', '.join(c.replace_fields)} force a new resource)"
    if c.action == "update":
        rolls = " -> rolls every node" + (f" (new version of {c.rolled_by})" if c.rolled_by else "") if c.rolls_nodes else ""
        shown = ", ".join(c.fields[:6]) + (f", +{len(c.fields) - 6} more" if len(c.fields) > 6 else "")
        return f"update   {c.name}  [{shown}]{rolls}"
    return f"{c.action:<8} {c.name}"


def render_text(report: ChangeReport) -> str:
    """Resource changes grouped by action, the GPU table, then change findings with file and line."""
    lines = [f"Stack {report.stack}: change from {report.base} ({report.commit[:12]}): {report.headline()}"]
    for c in report.changes:
        lines.append(f"  {_action(c)}  <{c.type}>")
    lines += ["", "GPUs by workload class and tier (at maximum size), before -> after:"]
    lines += [f"  {cls:<12} {tier:<15} {b:>5} -> {a:<5}{'' if a == b else f' ({a - b:+d})'}" for cls, tier, b, a in report.tiers]
    if report.maintenance:
        lines += ["", "Maintenance stated (GPU-Maintenance trailers): " + "; ".join(report.maintenance)]
    lines.append("")
    if report.rules and not report.findings:
        lines.append(f"{report.rules} change rules: no violations.")
    elif report.rules:
        lines.append(f"{report.rules} change rules: {len(report.findings)} violation(s)")
    for f in report.findings:
        lines.append(f"  {f.level:<9}  {f.policy}: {f.where()}: {f.message}")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: ChangeReport, state: Sequence[Any] = ()) -> str:
    """The pull-request comment: GPUs per tier before/after, replaced and deleted resources, findings."""
    mandatory = sum(f.level == "mandatory" for f in report.findings) + sum(getattr(v, "level", "") == "mandatory" for v in state)
    verdict = "fails" if mandatory else "passes"
    lines = [
        f"### gpu-platform: `{report.stack}` against `{report.base}` ({report.commit[:12]})",
        "",
        f"The gate **{verdict}**: {report.headline()}.",
        "",
        "| workload class | tier | GPUs before | GPUs after | change |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [f"| {cls} | {tier} | {b} | {a} | {a - b:+d} |" for cls, tier, b, a in report.tiers]
    heavy = [c for c in report.changes if c.action in ("replace", "delete") or c.rolls_nodes]
    if heavy:
        lines += ["", "**Replaced, deleted and recycled resources**", "", "| action | resource | type | why |", "|---|---|---|---|"]
        for c in heavy:
            why = ", ".join(c.replace_fields) if c.action == "replace" else ("nodes roll: " + ", ".join(c.fields) if c.rolls_nodes else "")
            action = "recycle" if c.action == "update" else c.action
            lines.append(f"| {action} | `{c.name}` | `{c.type}` | {_md(why)} |")
    findings = [*report.findings]
    lines += ["", f"**Change findings** ({len(findings)})" if findings else "No change findings."]
    if findings:
        lines += ["", "| level | rule | where | finding |", "|---|---|---|---|"]
        lines += [f"| {f.level} | `{f.policy}` | `{f.where()}` | {_md(f.message)} |" for f in findings]
    if state:
        lines += ["", f"**State findings** ({len(state)})", "", "| level | rule | where | resource | finding |", "|---|---|---|---|---|"]
        lines += [f"| {v.level} | `{v.policy}` | `{v.where()}` | `{v.resource}` | {_md(v.message)} |" for v in state]
    return "\n".join(lines)


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def render_github(report: ChangeReport) -> list[str]:
    """One `::error`/`::warning` per change finding, on the file and line of the key that caused it."""
    out = []
    for f in report.findings:
        command = "error" if f.level == "mandatory" else "warning"
        line = f",line={f.line}" if f.line else ""
        text = _escape(f"{f.key or f.resource}: {f.message}")
        out.append(f"::{command} file={_escape(f.file, prop=True)}{line},title={_escape(f.policy, prop=True)}::{text}")
    out.append(f"gpu-platform check --base {report.base}: {report.headline()}; {len(report.findings)} change finding(s)")
    return out
