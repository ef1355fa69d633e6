"""`gpu-platform capacity`: GPUs, reserved floor, Spot exposure, quota coverage and cost of a stack."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gpu_platform.capacity import (
    HOURS_PER_MONTH,
    SPOT_PRICE_FACTOR,
    ClassCapacity,
    PoolCapacity,
    block_hourly_cost,
    class_capacity_report,
    monthly_cost,
    pool_capacity_report,
)
from gpu_platform.catalog import Pricing, load_catalog
from gpu_platform.commands.options import camel_keys
from gpu_platform.pricing import catalog_note
from gpu_platform.spec.loader import load_stack_file


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def render_table(stack: str, pools: list[PoolCapacity], classes: list[ClassCapacity], pricing_note: str) -> str:
    """Two tables (pools, workload classes) and the cost estimate."""
    head = f"{'POOL':<24} {'CLASS':<12} {'TIER':<15} {'GPU':<11} {'MIN':>5} {'DESIRED':>8} {'MAX':>5} {'QUOTA':>6} {'COVER':>6} {'$/HOUR':>11}"
    lines = [f"Stack {stack}: GPU capacity (GPUs are physical GPUs)", "", head]
    for p in pools:
        lines.append(
            f"{p.pool:<24} {p.workload_class:<12} {p.tier:<15} {p.gpu:<11} {p.min_gpus:>5} {p.desired_gpus:>8} "
            f"{p.max_gpus:>5} {p.quota_gpus:>6} {p.quota_coverage:>6.0%} {_money(p.hourly_cost):>11}"
        )
    lines += ["", f"{'CLASS':<12} {'MAX GPUS':>9} {'FLOOR':>6} {'SPOT MAX':>9} {'SPOT EXPOSURE':>14}"]
    for c in classes:
        lines.append(f"{c.workload_class:<12} {c.max_gpus:>9} {c.floor_gpus:>6} {c.spot_max_gpus:>9} {c.spot_exposure:>14.0%}")
    cost = f"Estimated cost at desired size: {_money(monthly_cost(pools))} per month ({HOURS_PER_MONTH} h)"
    fixed = "reserved (ODCR, billed at On-Demand list) pools count at full size, billed used or not"
    lines += ["", cost, fixed]
    block = block_hourly_cost(pools)
    if block:
        lines.append(f"Capacity Blocks: {_money(block)} per hour of their dates at full size, paid up front per block (not in the monthly figure)")
    lines.append(pricing_note)
    return "\n".join(lines)


def to_json(stack: str, pools: list[PoolCapacity], classes: list[ClassCapacity], pricing: Pricing) -> dict[str, Any]:
    """`capacity --format json`: pools, classes, cost and the price source, camelCase like every command's JSON."""
    return {
        "stack": stack,
        "pools": [camel_keys({**asdict(x), "quota_coverage": round(x.quota_coverage, 4)}) for x in pools],
        "classes": [camel_keys({**asdict(c), "spot_exposure": round(c.spot_exposure, 4)}) for c in classes],
        "monthlyCost": round(monthly_cost(pools), 2),
        "capacityBlockHourlyCost": round(block_hourly_cost(pools), 2),
        "pricing": {"region": pricing.region, "asOf": pricing.as_of, "source": pricing.source, "spotPriceFactor": SPOT_PRICE_FACTOR},
    }


def _row(cells: list[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def render_markdown(stack: str, pools: list[PoolCapacity], classes: list[ClassCapacity], pricing_note: str) -> str:
    """The same two tables and cost as the text output, for a pull-request comment or a wiki page."""
    lines = [f"### GPU capacity of `{stack}` (GPUs are physical GPUs)", ""]
    lines += [
        _row(["pool", "class", "tier", "GPU", "min", "desired", "max", "quota", "cover", "$/hour"]),
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in pools:
        cells = [f"`{p.pool}`", p.workload_class, p.tier, p.gpu, p.min_gpus, p.desired_gpus, p.max_gpus, p.quota_gpus, f"{p.quota_coverage:.0%}"]
        lines.append(_row([*cells, _money(p.hourly_cost)]))
    lines += ["", _row(["class", "max GPUs", "floor", "Spot max", "Spot exposure"]), "|---|---:|---:|---:|---:|"]
    lines += [_row([c.workload_class, c.max_gpus, c.floor_gpus, c.spot_max_gpus, f"{c.spot_exposure:.0%}"]) for c in classes]
    lines += [
        "",
        f"Estimated cost at desired size: **{_money(monthly_cost(pools))} per month** ({HOURS_PER_MONTH} h); reserved pools count at full size.",
    ]
    block = block_hourly_cost(pools)
    if block:
        lines.append(f"Capacity Blocks: {_money(block)} per hour of their dates at full size, paid up front per block (not in the monthly figure).")
    lines += ["", pricing_note]
    return "\n".join(lines)


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point of the subcommand."""
    spec = load_stack_file(path, stack)
    catalog = load_catalog()
    pools = pool_capacity_report(spec, catalog, str(path))
    classes = class_capacity_report(pools)
    p = catalog.pricing
    note = catalog_note(catalog) + " On-prem pools are owned hardware: unpriced."
    if spec.region and spec.region != p.region:
        note += f"\nThis stack runs in {spec.region}; its prices may differ from these {p.region} list prices."
    if args.format == "json":
        print(json.dumps(to_json(stack, pools, classes, p), indent=2))
    elif args.format == "markdown":
        print(render_markdown(stack, pools, classes, note))
    else:
        print(render_table(stack, pools, classes, note))
    return 0
