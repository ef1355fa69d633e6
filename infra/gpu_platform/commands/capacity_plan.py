"""`gpu-platform capacity plan --demand FILE`: size reserved / on-demand / Spot tiers from demand."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from gpu_platform.catalog import load_catalog
from gpu_platform.commands.capacity_plan_args import add_arguments  # noqa: F401 (re-exported: the subcommand's options)
from gpu_platform.commands.fragmentation import parse_seeds
from gpu_platform.errors import ConfigError, Problem, did_you_mean, one_of
from gpu_platform.input_limits import DEMAND, read_regular
from gpu_platform.planning.chart import check_chart_path, write_chart
from gpu_platform.planning.demand import WORKLOAD_CLASSES, Allocatable, Demand
from gpu_platform.planning.fragmentation import allocatable, read_nodes, read_pods
from gpu_platform.planning.held import releases
from gpu_platform.planning.inputs import load_demand, read_text
from gpu_platform.planning.instruments import instrument_table
from gpu_platform.planning.planner import plan
from gpu_platform.planning.regimes import find_regimes, in_regime, regime_line, regimes_json
from gpu_platform.planning.report import render_markdown, render_table, to_json
from gpu_platform.planning.shortfall import shortfall
from gpu_platform.planning.stackmerge import check_target, merged_stack, write_new
from gpu_platform.planning.trace import DEFAULT_GPU_MAP, QOS
from gpu_platform.planning.windows import DAY, history_notes, sensitivity, windowed
from gpu_platform.planning.zones import zoned
from gpu_platform.pools import node_counts
from gpu_platform.pricing import load_commitments
from gpu_platform.spec.loader import load_stack
from gpu_platform.spec.models import PlatformSpec
from gpu_platform_policies.model import default_production  # the gate's own reading of "production"


def _pairs(text: str, flag: str, keys: tuple[str, ...] | None, values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    problems = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            problems.append(Problem(flag, item, "not KEY=VALUE", "allowed: comma-separated KEY=VALUE pairs"))
        elif keys is not None and key not in keys:
            problems.append(Problem(flag, key, f"unknown key '{key}'{did_you_mean(key, keys)}", one_of(keys)))
        elif value not in values:
            problems.append(Problem(flag, key, f"'{value}' is not allowed{did_you_mean(value, values)}", one_of(values)))
        else:
            out[key] = value
    if problems:
        raise ConfigError(problems)
    return out


def existing_reservations(spec: PlatformSpec) -> dict[tuple[str, str], int]:
    """(workload class, instance type) -> nodes the stack already reserves (ODCR pools at max size): supply the plan is given."""
    out: dict[tuple[str, str], int] = {}
    for pool in spec.node_pools:
        if pool.capacity == "reserved" and pool.reservation is not None and len(pool.instance_types) == 1:
            key = (pool.workload_class, pool.instance_types[0])
            out[key] = out.get(key, 0) + node_counts(pool)[2]
    return out


def cluster_share(args: argparse.Namespace, demand: Demand) -> Allocatable:
    """The share of arrived GPUs the cluster of `--nodes` can place, from the trace paper's replay of the demand's pods."""
    if demand.kind != "alibaba-trace":
        raise ConfigError(
            [
                Problem(
                    "--nodes",
                    str(args.nodes),
                    f"{args.demand} is {demand.kind} demand: it has no pods to place on the nodes",
                    "allowed: --nodes with a trace pod list as --demand (openb_pod_list_*.csv)",
                )
            ]
        )
    seeds = parse_seeds("42-51" if args.seeds is None else args.seeds)
    allowed = "allowed: a node list CSV (sn, cpu_milli, memory_mib, gpu, model) of at most 256 MiB"
    nodes = read_nodes(read_regular(args.nodes, DEMAND, allowed, encoding="utf-8-sig"), str(args.nodes))
    pods = read_pods(read_text(args.demand), str(args.demand))
    return allocatable(nodes, pods, args.policy or "fgd", seeds, str(args.nodes))


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point: read demand, plan, compare with the stack (when given), print, chart, write a stack."""
    if args.write_stack is not None:  # every target is checked before anything is planned or written
        check_target(args.write_stack, args.force, (path, args.demand))
    if args.chart is not None:
        check_chart_path(args.chart)
    catalog = load_catalog()
    qos = _pairs(args.qos_class, "--qos-class", QOS, WORKLOAD_CLASSES)
    gpus = _pairs(args.gpu_map, "--gpu-map", None, tuple(catalog.gpus))
    by_class = {k: v for k, v in gpus.items() if k in WORKLOAD_CLASSES}
    by_model = {k: v for k, v in gpus.items() if k not in WORKLOAD_CLASSES}
    given = args.stack is not None or args.config is not None
    spec = None
    config = None
    if given or args.write_stack is not None:
        config, spec = load_stack(path, stack)
    demand = load_demand(
        args.demand, catalog, spec if given else None, str(path), qos_class=qos, gpu_map={**DEFAULT_GPU_MAP, **by_model}, class_gpu=by_class
    )
    if args.nodes is not None:
        demand = replace(demand, options=replace(demand.options, allocatable=cluster_share(args, demand)))
    elif args.policy is not None or args.seeds is not None:
        flag = "--policy" if args.policy is not None else "--seeds"
        raise ConfigError([Problem(flag, "", "given without --nodes", "allowed: --policy and --seeds with --nodes FILE (the cluster's node list)")])
    if args.window_days is not None:
        if not args.window_days > 0 or demand.window is None:
            what = "needs a history (a trace or an export)" if demand.window is None else f"{args.window_days:g} is not a positive number of days"
            raise ConfigError([Problem("--window-days", str(args.window_days), what, "allowed: days > 0, with a trace CSV or a Prometheus export")])
        demand = windowed(demand, args.window_days)
    production = False
    if spec is not None:
        production = spec.policy.production if spec.policy.production is not None else default_production(spec.environment)
    existing = existing_reservations(spec) if given and spec is not None else None
    full = demand
    regimes = find_regimes(demand) if args.window == "regime" and args.window_days is None else {}
    if any(r.changes for r in regimes.values()):
        demand = in_regime(demand, regimes)
    result = plan(demand, catalog, production, existing)
    ways = instrument_table(demand, result, catalog, production)
    if given and spec is not None:
        result = zoned(shortfall(result, spec, catalog), spec, catalog)
    doc = to_json(result, catalog)
    if given and spec is not None:
        doc["plan"]["releases"] = releases(result, spec, catalog)
    notes, history = history_notes(full, load_commitments().instrument(demand.options.instrument).term_months, bool(regimes))
    doc["demand"]["history"] = history
    doc["assumptions"]["notes"] += notes
    if regimes and full.window is not None:
        days = (full.window[1] - full.window[0]) / DAY
        doc["demand"]["regimes"] = regimes_json(regimes, full.window[0])
        doc["assumptions"]["notes"] += [regime_line(r, days) for r in regimes.values()]
        if demand is not full:
            whole = plan(full, catalog, production, existing)
            doc["plan"]["fullWindow"] = {
                "days": round(days, 3),
                "reserved": {t.workload_class: t.reserved for t in whole.totals},
                "expectedMonthlyCost": round(whole.expected_cost, 2),
                "monthlyCost": round(whole.monthly_cost, 2),
            }
    doc["instruments"] = ways
    doc["sensitivity"] = sensitivity(full, catalog, production, existing)
    planned = None
    if args.write_stack is not None:  # validated before any file is written: nothing half-applied
        assert config is not None and spec is not None
        planned, merge = merged_stack(result, read_text(path), spec, catalog, args.write_stack, base_file=str(path))
        doc["plan"]["writtenStack"] = {
            "file": str(args.write_stack),
            "updated": list(merge.updated),
            "added": list(merge.added),
            "kept": list(merge.kept),
            "layoutsKept": [{"pool": p, "sharing": have, "planned": want} for p, have, want in merge.layouts_kept],
            "quotaChanges": [{"tenant": t, "pool": p, "before": a, "after": b} for t, p, a, b in merge.quota_changes],
            "instanceTypesKept": [k.priced(catalog, demand.options.spot_discount) for k in merge.types_kept],
        }
    if planned is not None:
        write_new(args.write_stack, planned, args.force, (path, args.demand))
    if args.chart is not None:
        write_chart(result, args.chart)
    if args.format == "json":
        print(json.dumps(doc, indent=2))
    elif args.format == "markdown":
        print(render_markdown(doc, str(args.chart) if args.chart else None))
    else:
        print(render_table(doc))
    return 0
