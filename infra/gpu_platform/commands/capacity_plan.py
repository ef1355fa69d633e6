"""`gpu-platform capacity plan --demand FILE`: size reserved / on-demand / Spot tiers from demand."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpu_platform.catalog import load_catalog
from gpu_platform.commands.capacity_plan_args import FORMATS, add_arguments  # noqa: F401 (re-exported: the subcommand's options)
from gpu_platform.errors import ConfigError, Problem, did_you_mean, one_of
from gpu_platform.planning.chart import write_chart
from gpu_platform.planning.demand import WORKLOAD_CLASSES
from gpu_platform.planning.inputs import load_demand
from gpu_platform.planning.planner import plan
from gpu_platform.planning.report import render_markdown, render_table, to_json
from gpu_platform.planning.shortfall import shortfall
from gpu_platform.planning.stackfile import stack_text, write_text
from gpu_platform.planning.trace import DEFAULT_GPU_MAP, QOS
from gpu_platform.spec.loader import load_stack


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


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point: read demand, plan, compare with the stack (when given), print, chart, write a stack."""
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
    result = plan(demand, catalog)
    if given and spec is not None:
        result = shortfall(result, spec, catalog)
    doc = to_json(result, catalog)
    planned = None
    if args.write_stack is not None:  # validated before any file is written: nothing half-applied
        assert config is not None and spec is not None
        planned = stack_text(result, config, spec, catalog, args.write_stack, base_file=str(path))
    if args.chart is not None:
        write_chart(result, args.chart)
    if planned is not None:
        write_text(args.write_stack, planned)
    if args.format == "json":
        print(json.dumps(doc, indent=2))
    elif args.format == "markdown":
        print(render_markdown(doc, str(args.chart) if args.chart else None))
    else:
        print(render_table(doc))
    return 0
