"""What `diff --base` and `check --base` print.

Text for people, JSON for machines, markdown for a pull-request comment, and GitHub annotations on the
stack file line of each change finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.change.diff import ResourceChange, counts
from gpu_platform.change.summary import BILLING, CostDelta, QuotaChange, money, percent, signed
from gpu_platform.change.values import ValueChange, shown

TierRow = tuple[str, str, str, int, int]  # (workload class, tier, GPU model, GPUs before, GPUs after)
# The gate's pull-request comment starts with this line; the CI script edits the comment that has it (scripts/pr-comment.sh).
MARKER = "<!-- gpu-platform-gate -->"
VALUES_SHOWN = 6  # old -> new values per resource in text
ROWS_SHOWN = 40  # rows of a Markdown table before "+N more"


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
    stack_keys: Sequence[ValueChange] = ()  # stack keys the change sets, before -> after (secrets masked)
    quotas: Sequence[QuotaChange] = ()  # tenants' GPUs per pool the change moves
    cost: CostDelta | None = None

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
            "stackKeys": [k.to_json() for k in self.stack_keys],
            "gpus": [{"workloadClass": c, "tier": t, "gpuModel": m, "before": b, "after": a} for c, t, m, b, a in self.tiers],
            "quotas": [q.to_json() for q in self.quotas],
            "cost": self.cost.to_json() if self.cost else None,
            "maintenance": list(self.maintenance),
        }


def _action(c: ResourceChange) -> str:
    if c.action == "replace":
        return f"replace  {c.name}  ({', '.join(c.replace_fields)} force a new resource)"
    if c.action == "update":
        rolls = " -> rolls every node" + (f" (new version of {c.rolled_by})" if c.rolled_by else "") if c.rolls_nodes else ""
        shown = ", ".join(c.fields[:6]) + (f", +{len(c.fields) - 6} more" if len(c.fields) > 6 else "")
        return f"update   {c.name}  [{shown}]{rolls}"
    if c.action == "delete" and c.source:
        return f"delete   {c.name}  (built from {c.source} of the base)"
    return f"{c.action:<8} {c.name}"


def _gpus(b: int, a: int) -> str:
    return f"{b} -> {a}" + ("" if a == b else f" ({a - b:+d})")


def render_text(report: ChangeReport) -> str:
    """Stack keys, pools and their cost, quotas, GPUs per class/tier/model, resources with values, then findings with file and line."""
    lines = [f"Stack {report.stack}: change from {report.base} ({report.commit[:12]}): {report.headline()}"]
    if report.stack_keys:
        lines += ["", f"Stack keys changed ({len(report.stack_keys)}), before -> after:"]
        lines += [f"  {k.text()}" for k in report.stack_keys]
    if report.cost is not None:
        lines += ["", report.cost.headline()]
        if report.cost.caveat:
            lines.append(f"  ({report.cost.caveat})")
        moved = [p for p in report.cost.pools if p.changed]
        if moved:
            lines.append(f"  {'POOL':<24} {'TIER':<28} {'GPU MODEL':<26} {'GPUS (MAX)':<14} {'$/MONTH BEFORE':>15} {'AFTER':>14} {'CHANGE':>14}")
        for p in moved:
            b, a = (p.before.max_gpus if p.before else 0), (p.after.max_gpus if p.after else 0)
            lines.append(
                f"  {p.pool:<24} {p.tier:<28} {p.gpu:<26} {_gpus(b, a):<14} {money(p.monthly(p.before)):>15} "
                f"{money(p.monthly(p.after)):>14} {signed(p.delta):>14}"
            )
        if not report.cost.problem:
            lines += [f"  {tier:<15} {money(b):>15} -> {money(a):<15}" for tier, b, a in report.cost.by_tier()]
            lines += [f"  ({'; '.join(f'{t}: {how}' for t, how in BILLING.items())})"]
            hb, ha = report.cost.blocks(False), report.cost.blocks(True)
            if hb or ha:
                lines.append(f"  Capacity Blocks per hour of their dates, paid up front per block: {money(hb)} -> {money(ha)}")
    if report.quotas:
        lines += ["", "Tenant quotas (GPUs), before -> after:"]
        lines += [f"  {q.tenant:<20} {q.pool:<24} {_gpus(q.before, q.after)}" for q in report.quotas]
    lines += ["", "GPUs by workload class, tier and GPU model (at maximum size), before -> after:"]
    lines += [f"  {cls:<12} {tier:<15} {model:<11} {_gpus(b, a)}" for cls, tier, model, b, a in report.tiers]
    if report.changes:
        lines += ["", "Resources:"]
    for c in report.changes:
        lines.append(f"  {_action(c)}  <{c.type}>")
        lines += [f"      {v.text()}" for v in c.values[:VALUES_SHOWN]]
        if len(c.values) > VALUES_SHOWN:
            lines.append(f"      +{len(c.values) - VALUES_SHOWN} more (diff --format json)")
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


def _code(value: object) -> str:
    return "`" + shown(value, 60).replace("`", "'").replace("|", "\\|") + "`"


def _more(rows: Sequence[object], what: str) -> list[str]:
    return [f"| +{len(rows) - ROWS_SHOWN} more {what} (`diff --format json` lists them all) |"] if len(rows) > ROWS_SHOWN else []


def _cost_markdown(cost: CostDelta) -> list[str]:
    """A table of the pools whose cost or GPUs move and the stack's totals, the way cost-diff comments show a project."""
    if cost.problem:
        return [f"**{cost.headline()}**"]
    delta = cost.after - cost.before
    trend = "increases" if delta > 0.005 else "decreases" if delta < -0.005 else "does not change"
    lines = [f"**Monthly cost {trend}**: {money(cost.before)} → {money(cost.after)} (**{signed(delta)}**{percent(cost.before, cost.after)})", ""]
    if cost.caveat:
        lines[-1:-1] = [f"*{cost.caveat[0].upper()}{cost.caveat[1:]}.*"]
    lines += ["| pool | tier | GPU model | GPUs (max) | monthly before | monthly after | diff |", "|---|---|---|---:|---:|---:|---:|"]
    moved = [p for p in cost.pools if p.changed]
    for p in moved[:ROWS_SHOWN]:
        b, a = (p.before.max_gpus if p.before else 0), (p.after.max_gpus if p.after else 0)
        cells = [f"`{p.pool}`", _md(p.tier.replace("->", "→")), _md(p.gpu.replace("->", "→")), _gpus(b, a).replace("->", "→")]
        lines.append("| " + " | ".join([*cells, money(p.monthly(p.before)), money(p.monthly(p.after)), signed(p.delta)]) + " |")
    lines += _more(moved, "pools")
    unchanged = len(cost.pools) - len(moved)
    label = f"**total** ({len(cost.pools)} pools{f', {unchanged} unchanged' if unchanged else ''})"
    lines.append(f"| {label} | | | | **{money(cost.before)}** | **{money(cost.after)}** | **{signed(delta)}** |")
    notes = "; ".join(f"{t}: {how}" for t, how in BILLING.items())
    lines += ["", f"Per month of 730 h ({notes})."]
    hb, ha = cost.blocks(False), cost.blocks(True)
    if hb or ha:
        lines.append(f"Capacity Blocks: {money(hb)} → {money(ha)} per hour of their dates, paid up front per block (not in the monthly figure).")
    return lines


def render_markdown(report: ChangeReport, state: Sequence[Any] = ()) -> str:
    """The pull-request comment: verdict, cost delta, stack keys, quotas, GPUs per class/tier/model, heavy resources, findings."""
    mandatory = sum(f.level == "mandatory" for f in report.findings) + sum(getattr(v, "level", "") == "mandatory" for v in state)
    verdict = f"fails** ({mandatory} mandatory finding(s))" if mandatory else "passes**"
    lines = [
        f"### gpu-platform: `{report.stack}` against `{report.base}` ({report.commit[:12]})",
        "",
        f"The gate **{verdict}: {report.headline()}.",
        "",
    ]
    if report.cost is not None:
        lines += [*_cost_markdown(report.cost), ""]
    if report.stack_keys:
        lines += [f"**Stack keys changed** ({len(report.stack_keys)})", "", "| key | before | after |", "|---|---|---|"]
        lines += [f"| `{_md(k.key)}` | {_code(k.before)} | {_code(k.after)} |" for k in report.stack_keys[:ROWS_SHOWN]]
        lines += [*_more(report.stack_keys, "keys"), ""]
    if report.quotas:
        lines += ["**Tenant quotas** (GPUs)", "", "| tenant | pool | before | after | change |", "|---|---|---:|---:|---:|"]
        lines += [f"| {q.tenant} | `{q.pool}` | {q.before} | {q.after} | {q.after - q.before:+d} |" for q in report.quotas[:ROWS_SHOWN]]
        lines += [*_more(report.quotas, "quotas"), ""]
    lines += ["| workload class | tier | GPU model | GPUs before | GPUs after | change |", "|---|---|---|---:|---:|---:|"]
    lines += [f"| {cls} | {tier} | {model} | {b} | {a} | {a - b:+d} |" for cls, tier, model, b, a in report.tiers]
    heavy = [c for c in report.changes if c.action in ("replace", "delete") or c.rolls_nodes]
    if heavy:
        lines += ["", "**Replaced, deleted and recycled resources**", "", "| action | resource | type | why |", "|---|---|---|---|"]
        for c in heavy[:ROWS_SHOWN]:
            why = ", ".join(c.replace_fields) if c.action == "replace" else ("nodes roll: " + ", ".join(c.fields) if c.rolls_nodes else "")
            if c.action == "delete":
                why = f"built from {c.source} of the base, which this change removes or changes" if c.source else "no longer built"
            changed = {v.key: v for v in c.values}
            shown_values = [changed[f] for f in (c.replace_fields if c.action == "replace" else ()) if f in changed]
            if shown_values:
                why += ": " + "; ".join(f"{shown(v.before, 40)} → {shown(v.after, 40)}" for v in shown_values)
            action = "recycle" if c.action == "update" else c.action
            lines.append(f"| {action} | `{c.name}` | `{c.type}` | {_md(why)} |")
        lines += _more(heavy, "resources")
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
