"""Plan output: the JSON contract, a table for terminals and markdown for pull requests."""

from __future__ import annotations

from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.planning.checks import (
    DEFAULT_MIN_COVERAGE,
    DEFAULT_SPOT_CAPS,
    ClassSupply,
    coverage_below_target,
    spot_above_cap,
    spot_without_fallback,
)
from gpu_platform.planning.demand import ANY, DemandGroup
from gpu_platform.planning.held import release_line
from gpu_platform.planning.planner import SPOT_PRICE_SPAN, GroupPlan, Plan, horizon_factor
from gpu_platform.planning.purchase import purchase_line, purchases
from gpu_platform.pricing import HOURS_PER_MONTH, load_commitments


def _label(g: DemandGroup | GroupPlan, siblings: int) -> str:
    """A class's own `any` group is shown as `unconstrained` next to model-specific groups."""
    return "unconstrained" if g.gpu_model == ANY and siblings > 1 else g.gpu_model


def rows(plan: Plan) -> list[tuple[DemandGroup, GroupPlan]]:
    """(demand, plan) per output row: a class's model-specific groups, then its `any` total."""
    out = []
    for total, total_plan in zip(plan.demand.totals, plan.totals, strict=True):
        members = [(d, p) for d, p in zip(plan.demand.groups, plan.groups, strict=True) if d.workload_class == total.workload_class]
        if len(members) > 1 or (members and members[0][0].gpu_model != ANY):
            out += members
        out.append((total, total_plan))
    return out


def plan_findings(plan: Plan) -> list[str]:
    """The capacity policy checks over the plan itself (stable capacity = reserved)."""
    out: list[str] = []
    for t in plan.totals:
        # stable: the reserve and the on-demand nodes the plan keeps up (what --write-stack sets as the pools' minimum)
        supply = ClassSupply(
            t.workload_class, t.sla, t.interruptible, t.p95, t.reserved + t.always_on, t.spot, t.reserved + t.on_demand + t.spot_fallback
        )
        out += coverage_below_target(supply, DEFAULT_MIN_COVERAGE)
        out += spot_above_cap(supply, DEFAULT_SPOT_CAPS)
        out += spot_without_fallback(supply)
    return out


PACKED_SHARE_NOTE = 0.9
"""Below this share of its nodes' GPUs filled at P95, a packed pool's note says how much packing strands."""


def _packed_share(g: GroupPlan) -> float | None:
    """P95 demand (GPUs' worth) over the GPUs of the P95 packed nodes: the share of them the tasks can be given."""
    if not g.packed_p95_nodes or g.gpus_per_node <= 0:
        return None
    return min(1.0, g.p95 / (g.packed_p95_nodes * g.gpus_per_node))


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def to_json(plan: Plan, catalog: Catalog) -> dict[str, Any]:
    """The `capacity plan --format json` document (the contract's fields, and more)."""
    d = plan.demand
    counts = {c: sum(1 for g in d.groups if g.workload_class == c) for c in {g.workload_class for g in d.groups}}
    demand_rows = []
    plan_rows = []
    for dg, pg in rows(plan):
        label = ANY if any(dg is t for t in d.totals) else _label(dg, counts[dg.workload_class])
        demand_rows.append(
            {
                "class": dg.workload_class,
                "gpuModel": label,
                "p50": _r(dg.p50),
                "p95": _r(dg.p95),
                "p99": _r(dg.p99),
                "peak": _r(dg.peak),
                "interruptible": dg.interruptible,
                "interruptibleP95": _r(dg.interruptible_p95),
                "sla": dg.sla,
                "growthPerMonth": _r(dg.growth_per_month, 4),
                "leadTimeMonths": dg.lead_time_months,
            }
        )
        plan_rows.append(
            {
                "class": pg.workload_class,
                "gpuModel": label,
                "catalogGpu": pg.catalog_gpu,
                "instanceType": pg.instance_type,
                "target": _r(pg.target),
                "safetyStock": _r(pg.target - dg.p95 * horizon_factor(dg)),
                "basis": pg.basis,
                "reserved": pg.reserved,
                "onDemand": pg.on_demand,
                "spot": pg.spot,
                "spotFallback": pg.spot_fallback,
                "spotInstanceTypes": list(pg.spot_types) if pg.spot else [],
                "spotNodeHour": _r(pg.spot_price, 4),
                "alwaysOn": pg.always_on,
                "existingReserved": pg.existing_reserved,
                "breakEvenReserved": pg.break_even_reserved,
                "meanAboveReserve": _r(pg.mean_above_reserve),
                "taskShape": None
                if dg.shape is None
                else {
                    "gpusPerTask": dg.shape.gpus_per_task,
                    "vcpuPerGpu": _r(dg.shape.vcpu_per_gpu),
                    "memoryGiBPerGpu": _r(dg.shape.memory_gib_per_gpu),
                },
                "fitsNode": _r(pg.shape_fit, 4),
                "replayWaitHours": None
                if pg.waits is None
                else {"p99": _r(pg.waits.p99 / 3600), "max": _r(pg.waits.max / 3600), "jobs": pg.waits.jobs, "utilisation": _r(pg.waits.utilisation)},
                "nodes": pg.nodes,
                "nodesPerZone": pg.nodes_per_zone or None,
                "packedNodesP95": pg.packed_p95_nodes,
                "packedShare": _r(_packed_share(pg), 4),
                "unplaceableTasks": pg.unplaceable,
                "coverage": _r(pg.coverage, 4),
                "spotExposure": _r(pg.spot_exposure, 4),
                "monthlyCost": _r(pg.monthly_cost, 2),
                "onDemandOnlyMonthlyCost": _r(pg.on_demand_only_cost, 2),
                "instrument": pg.instrument,
                "breakEvenUtilization": _r(pg.break_even, 4),
                "reservedUtilization": _r(pg.reserved_utilization, 4),
                "expectedMonthlyCost": _r(pg.expected_cost, 2),
                "expectedCost": {k: round(v, 2) for k, v in pg.expected_parts.items()},
                "onDemandOnlyExpectedMonthlyCost": _r(pg.expected_on_demand_only, 2),
            }
        )
    o = d.options
    notes = [*d.notes]
    for g in plan.groups:
        if g.unplaceable:
            notes.append(
                f"{g.workload_class}/{g.gpu_model}: {g.unplaceable} tasks ask more GPUs, vCPU or memory than one {g.instance_type} node has; "
                "they are counted as the whole nodes they would fill, but cannot run as one pod there"
            )
        if g.shape_fit is not None and g.shape_fit < 0.95:
            notes.append(
                f"{g.workload_class}/{g.gpu_model}: only {g.shape_fit:.0%} of its GPU-hours come from tasks that fit one {g.instance_type} "
                "(GPUs, vCPU, memory); the rest need a larger node of another GPU model: map them with --gpu-map"
            )
        share = _packed_share(g)
        if share is not None and share < PACKED_SHARE_NOTE:
            assert g.packed_p95_nodes is not None
            notes.append(
                f"{g.workload_class}/{g.gpu_model}: at P95 its tasks fill {share:.0%} of the GPUs their packed {g.instance_type} nodes hold "
                f"({g.p95:.3g} GPUs of demand on {g.packed_p95_nodes * g.gpus_per_node:g} GPUs): shares that do not fit together, vCPU and "
                f"memory strand the rest, so the plan sizes on the nodes: demand / {share:.0%} (capacity fragmentation measures a whole "
                "cluster's share)"
            )
        if g.spot and g.spot_price is not None:
            notes.append(
                f"{g.workload_class}/{g.gpu_model}: Spot over {', '.join(g.spot_types)} ({g.gpus_per_node} x {g.catalog_gpu} each; EC2 "
                f"launches whichever has capacity), priced at the dearest one's Spot estimate, ${g.spot_price:,.2f} a node-hour "
                f"({1 - o.spot_discount:.0%} of its list price); {o.spot_fallback_share:.0%} of Spot hours run on the pool's on-demand "
                f"fallback group, as large as its Spot quota ({g.spot_fallback} GPUs, the gate's spot-fallback-sized)"
            )
        elif g.interruptible and g.instance_type and 0 < len(g.spot_types) < 2 and g.total:
            notes.append(
                f"{g.workload_class}/{g.gpu_model}: interruptible, but {g.instance_type} is the only priced type with {g.gpus_per_node} x "
                f"{g.catalog_gpu} that holds its tasks (within {SPOT_PRICE_SPAN:g}x its price): no Spot, since one type is reclaimed all "
                "at once; its interruptible work is planned on on-demand"
            )
        if g.total and g.gpus_per_node > 1 and g.target < g.gpus_per_node / 2:
            notes.append(
                f"{g.workload_class}/{g.gpu_model}: {g.target:.3g} GPUs of demand take whole {g.gpus_per_node}-GPU {g.instance_type} nodes "
                f"(no smaller {g.catalog_gpu} type in the catalog)"
            )
    saving = 1 - plan.monthly_cost / plan.on_demand_only_cost if plan.on_demand_only_cost else 0.0
    expected_saving = 1 - plan.expected_cost / plan.expected_on_demand_only if plan.expected_on_demand_only else 0.0
    window = {"start": d.window[0], "end": d.window[1]} if d.window else None
    return {
        "source": {"file": d.source, "kind": d.kind, "window": list(d.window) if d.window else None},
        "demand": {"classes": demand_rows, "window": window},
        "plan": {
            "classes": plan_rows,
            "expectedMonthlyCost": round(plan.expected_cost, 2),
            "onDemandOnlyExpectedMonthlyCost": round(plan.expected_on_demand_only, 2),
            "expectedSaving": round(expected_saving, 4),
            "monthlyCost": round(plan.monthly_cost, 2),
            "onDemandOnlyMonthlyCost": round(plan.on_demand_only_cost, 2),
            "saving": round(saving, 4),
            "shortfall": [
                {
                    "class": s.workload_class,
                    "gpuModel": s.gpu_model,
                    "needed": s.needed,
                    "available": s.available,
                    "gap": s.gap,
                    "nonSpotNeeded": s.non_spot_needed,
                    "nonSpotAvailable": s.non_spot_available,
                    "options": [
                        {"action": x.action, "gpus": x.gpus, "monthlyCost": _r(x.monthly_cost, 2), "risk": x.risk, "detail": x.detail}
                        for x in s.options
                    ],
                }
                for s in plan.shortfall
            ],
            "stack": plan.stack,
            "findings": plan_findings(plan),
            "purchases": purchases(plan, catalog),
        },
        "assumptions": {
            "coverageTarget": o.coverage_target,
            "spotCap": o.spot_cap,
            "instrument": o.instrument,
            "reservedDiscount": o.reserved_discount,
            "spotDiscount": o.spot_discount,
            "spotFallbackShare": o.spot_fallback_share,
            "safetyStock": o.safety_stock,
            "queueDelayHours": o.queue_delay_hours,
            "hoursPerMonth": HOURS_PER_MONTH,
            "prices": {
                "region": catalog.pricing.region,
                "asOf": catalog.pricing.as_of,
                "source": catalog.pricing.source,
                "commitmentsAsOf": load_commitments().as_of,
                "commitmentsSource": load_commitments().source,
            },
            "notes": notes,
            "allocatable": None
            if o.allocatable is None
            else {
                "share": round(o.allocatable.share, 4),
                "seedRange": [round(o.allocatable.low, 4), round(o.allocatable.high, 4)],
                "policy": o.allocatable.policy,
                "nodesFile": o.allocatable.nodes_file,
                "nodes": o.allocatable.nodes,
                "gpus": o.allocatable.gpus,
                "seeds": list(o.allocatable.seeds),
                "basis": o.allocatable.basis,
            },
            "gpuSubstitutions": [{"traceModel": m, "catalogGpu": g, "throughputFactor": round(f, 4), "basis": b} for m, g, f, b in d.substitutions],
        },
    }


def _money(x: float | None) -> str:
    return "n/a" if x is None else f"${x:,.0f}"


def _table_rows(doc: dict[str, Any]) -> list[list[str]]:
    out = []
    for dem, p in zip(doc["demand"]["classes"], doc["plan"]["classes"], strict=True):
        out.append(
            [
                dem["class"],
                dem["gpuModel"],
                f"{dem['p50']:g}",
                f"{dem['p95']:g}",
                f"{dem['p99']:g}",
                f"{dem['peak']:g}",
                "yes" if dem["interruptible"] else "no",
                p["catalogGpu"] or "-",
                str(p["reserved"]),
                str(p["onDemand"]),
                str(p["spot"]),
                f"{p['coverage']:.0%}",
                f"{p['spotExposure']:.0%}",
                "-" if p["reservedUtilization"] is None else f"{p['reservedUtilization']:.0%}",
                f"{p['breakEvenUtilization']:.0%}",
                _money(p["expectedMonthlyCost"]),
                _money(p["monthlyCost"]),
            ]
        )
    return out


HEAD = [
    "class",
    "gpu model",
    "P50",
    "P95",
    "P99",
    "peak",
    "interr.",
    "catalog GPU",
    "reserved",
    "on-demand",
    "spot",
    "coverage",
    "spot exp.",
    "res. used",
    "break-even",
    "expected $/mo",
    "full-size $/mo",
]


def _summary(doc: dict[str, Any]) -> list[str]:
    p = doc["plan"]
    lines = [
        f"Expected monthly bill {_money(p['expectedMonthlyCost'])} (reserved fixed cost + on-demand and Spot GPU-hours used above it) against "
        f"{_money(p['onDemandOnlyExpectedMonthlyCost'])} for the same plan on on-demand alone "
        f"({abs(p['expectedSaving']):.0%} {'less' if p['expectedSaving'] >= 0 else 'more'}).",
        f"Full size (every tier up 730 h): {_money(p['monthlyCost'])}; all on-demand at full size: {_money(p['onDemandOnlyMonthlyCost'])}.",
    ]
    whole = p.get("fullWindow")
    if whole:
        since = ", ".join(f"{c} from day {r['fromDay']:.0f}" for c, r in doc["demand"].get("regimes", {}).items())
        lines.append(
            f"Window: each class's current regime ({since}; see the notes). The full {whole['days']:.0f}-day window's plan: expected "
            f"{_money(whole['expectedMonthlyCost'])}, full size {_money(whole['monthlyCost'])}, reserved GPUs "
            + ", ".join(f"{c} {n}" for c, n in whole["reserved"].items())
            + " (--window full plans on it)."
        )
    for s in p["shortfall"]:
        best = s["options"][0] if s["options"] else None
        tail = f"; cheapest: {best['action']} ({_money(best['monthlyCost'])}/month, {best['risk']} risk)" if best else ""
        lines.append(
            f"Shortfall {s['class']}/{s['gpuModel']}: need {s['needed']} GPUs ({s['nonSpotNeeded']} not on Spot), stack {p['stack']} has "
            f"{s['available']} ({s['nonSpotAvailable']} not on Spot) (gap {s['gap']}){tail}."
        )
    lines += [f"Finding: {f}" for f in p["findings"]]
    lines += [purchase_line(x) for x in p.get("purchases", [])]
    lines += [release_line(x) for x in p.get("releases", [])]
    for c in p["classes"]:
        if c.get("nodesPerZone") and c["gpuModel"] != "any":
            zones = "; ".join(f"{z} " + ", ".join(f"{k} {n}" for k, n in tiers.items() if n) for z, tiers in c["nodesPerZone"].items())
            lines.append(f"Nodes per zone {c['class']}/{c['gpuModel']} ({c['instanceType']}): {zones}.")
    w = p.get("writtenStack")
    if w:
        lines.append(
            f"Wrote {w['file']}: {len(w['updated'])} pools resized, {len(w['added'])} added, {len(w['kept'])} kept as they were "
            f"({', '.join(w['kept']) or 'none'}: not planned, so their capacity adds to the plan's)."
        )
        for k in w.get("layoutsKept", []):
            lines.append(
                f"Kept pool {k['pool']}'s layout {k['sharing']} (the plan sizes it as {k['planned']}): re-partitioning evicts its pods, "
                "so change it in a pull request of its own (the gate's sharing-layout-changed)."
            )
        for k in w.get("instanceTypesKept", []):
            lines.append(
                f"Kept pool {k['pool']}'s instance types {', '.join(k['instanceTypes'])} (the plan priced {', '.join(k['planned'])}): a node "
                "group's types do not change in place (EKS replaces the group), so change them in a pull request of their own." + kept_price(k)
            )
        for q in w.get("quotaChanges", []):
            lines.append(f"Quota moved: tenant {q['tenant']} on {q['pool']} {q['before']} -> {q['after']} GPUs.")
    a = doc["assumptions"]
    lines.append(
        f"Assumptions: reserved as {a['instrument']} at {a['reservedDiscount']:.0%} below list (a reserved node pays when up at least "
        f"{1 - a['reservedDiscount']:.0%} of the time) and Spot {a['spotDiscount']:.0%} below list, {a['spotFallbackShare']:.0%} of its hours "
        "falling back to on-demand; "
        f"Spot cap {a['spotCap']:.0%}; prices {a['prices']['region']} as of {a['prices']['asOf']}; GPUs are physical GPUs' worth."
    )
    if a.get("allocatable"):
        lines.append(
            f"Fragmentation: {a['allocatable']['basis']}; each class needs at least its demand / {a['allocatable']['share']:.4f} "
            "(the basis of each row says whether that or the plan's own placement sizes it)."
        )
    lines += [f"Note: {n}" for n in a["notes"]]
    subs = a.get("gpuSubstitutions") or []
    if subs:
        lines.append(
            "GPU substitution: "
            + ", ".join(f"{s['traceModel']} -> {s['catalogGpu']} (x{s['throughputFactor']:g}: {s['basis']})" for s in subs)
            + " (the substituted work scaled by the factor; --gpu-map changes the mapping)."
        )
    return lines


WAYS_HEAD = ["class", "gpu model", "instance type", "instrument", "$/node-h", "break-even", "reserved nodes", "expected $/mo", "vs on-demand"]


def _ways_rows(doc: dict[str, Any]) -> list[list[str]]:
    out = []
    for r in doc.get("instruments", []):
        base, cost = r["onDemandOnlyExpectedMonthlyCost"], r["expectedMonthlyCost"]
        versus = "-" if not base or cost is None else f"{cost / base - 1:+.0%}"
        out.append(
            [
                r["class"],
                r["gpuModel"],
                r["instanceType"],
                r["instrument"],
                f"${r['nodeHour']:,.2f}",
                f"{r['breakEven']:.0%}",
                str(r["reservedNodes"]),
                _money(cost),
                versus,
            ]
        )
    return out


WAYS_TITLE = (
    "Instruments (each group's reserve bought every way, from scratch: a node is committed when it would be up at least the "
    "break-even share of the hours; an ODCR at list buys assurance only; a Capacity Block bills its rate for its dates):"
)
SENS_HEAD = ["window", "instrument", "Spot off", "reserved GPUs by class", "expected $/mo", "on-demand only $/mo"]


def _sensitivity_rows(doc: dict[str, Any]) -> list[list[str]]:
    return [
        [
            r["window"],
            r["instrument"],
            f"{r['spotDiscount']:.0%}",
            ", ".join(f"{k} {v}" for k, v in r["reserved"].items()),
            _money(r["expectedMonthlyCost"]),
            _money(r["onDemandOnlyExpectedMonthlyCost"]),
        ]
        for r in doc.get("sensitivity", [])
    ]


def _aligned(head: list[str], body: list[list[str]], left: tuple[int, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" if i in left else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*r) for r in [head, *body]]


def render_table(doc: dict[str, Any]) -> str:
    """Aligned columns for a terminal: the plan, its summary, and the sensitivity table."""
    src = doc["source"]
    lines = [f"Capacity plan from {src['kind']} {src['file']}", "", *_aligned(HEAD, _table_rows(doc), (0, 1, 7))]
    lines += ["", *_summary(doc)]
    if doc.get("instruments"):
        lines += ["", WAYS_TITLE]
        lines += _aligned(WAYS_HEAD, _ways_rows(doc), (0, 1, 2, 3))
    if doc.get("sensitivity"):
        lines += ["", "Sensitivity (the same plan over other windows, instruments and Spot discounts):"]
        lines += _aligned(SENS_HEAD, _sensitivity_rows(doc), (0, 1, 3))
    return "\n".join(lines)


def render_markdown(doc: dict[str, Any], chart: str | None = None) -> str:
    """A pull-request-ready section: a table, the totals, shortfall options and findings."""
    src = doc["source"]
    lines = [f"### GPU capacity plan ({src['kind']}: `{src['file']}`)", ""]
    if chart:
        lines += [f"![demand and tiers]({chart})", ""]
    lines += ["| " + " | ".join(HEAD) + " |", "|" + "|".join("---" if i < 2 or i == 7 else "---:" for i in range(len(HEAD))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in _table_rows(doc)]
    lines.append("")
    for s in doc["plan"]["shortfall"]:
        lines += [
            f"**Shortfall {s['class']} / {s['gpuModel']}**: need {s['needed']} GPUs ({s['nonSpotNeeded']} not on Spot), "
            f"have {s['available']} ({s['nonSpotAvailable']} not on Spot) (gap {s['gap']}). "
            "Options, cheapest first:",
            "",
        ]
        lines += [f"1. {o['action']}: {o['gpus']} GPUs, {_money(o['monthlyCost'])}/month, {o['risk']} risk; {o['detail']}" for o in s["options"]]
        lines.append("")
    lines += [f"- {line}" for line in _summary(doc) if not line.startswith("Shortfall")]
    if doc.get("instruments"):
        lines += ["", f"**{WAYS_TITLE.removesuffix(':')}**:", ""]
        lines += ["| " + " | ".join(WAYS_HEAD) + " |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
        lines += ["| " + " | ".join(r) + " |" for r in _ways_rows(doc)]
    if doc.get("sensitivity"):
        lines += ["", "**Sensitivity** (the same plan over other windows, instruments and Spot discounts):", ""]
        lines += ["| " + " | ".join(SENS_HEAD) + " |", "|---|---|---:|---|---:|---:|"]
        lines += ["| " + " | ".join(r) + " |" for r in _sensitivity_rows(doc)]
    return "\n".join(lines)


def kept_price(k: dict[str, Any]) -> str:
    """What a kept pool's own types cost beside the plan's: a node-hour each and the month at full size."""
    if k.get("nodeHour") is None or k.get("plannedNodeHour") is None:
        return " Its types are not all priced in the catalog: the plan's bill does not cover them."
    diff = k["monthlyDifferenceAtFullSize"]
    if abs(diff) < 0.005:
        return f" Same node-hour (${k['nodeHour']:.2f})."
    more = "more" if diff > 0 else "less"
    return (
        f" A node-hour costs ${k['nodeHour']:.2f} on them against the plan's ${k['plannedNodeHour']:.2f}: "
        f"${abs(diff):,.0f} a month {more} at full size ({k['nodes']} nodes), which the plan's bill leaves out."
    )
