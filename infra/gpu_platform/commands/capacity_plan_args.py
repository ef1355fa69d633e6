"""The options of `gpu-platform capacity plan` and `capacity fragmentation`, apart from the planner and the replay.

The CLI offers them without importing either: the planner's modules (trace parsing, chart, report) cost about a
second to import, the replay's arrays (numpy) a tenth; `plan`, `render` and `check` never need them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpu_platform.planning.fragmentation_choices import DEFAULT_SEEDS, POLICIES


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `capacity plan` (`--stack`, `--config` and `--format` come from the CLI's common options)."""
    p.add_argument(
        "--demand", type=Path, required=True, metavar="FILE", help="demand YAML, Alibaba trace pod list CSV, or Prometheus query_range JSON"
    )
    p.add_argument("--chart", type=Path, metavar="FILE", help="write demand over time and the tiers to FILE.svg or FILE.png")
    p.add_argument(
        "--write-stack",
        type=Path,
        metavar="FILE",
        help="write a new stack file: the base stack (--stack, default dev) with the plan's pools and quotas merged in",
    )
    p.add_argument("--force", action="store_true", help="let --write-stack replace an existing file")
    p.add_argument(
        "--window-days", type=float, metavar="N", help="plan a history on its last N days (the sensitivity table shows full, 90 and 28 days)"
    )
    p.add_argument(
        "--window",
        choices=("regime", "full"),
        default="regime",
        help="plan a history on each class's current regime (default; the full window's plan is shown beside it) or on the full window",
    )
    p.add_argument("--qos-class", default="", metavar="QOS=CLASS,...", help="trace QoS -> workload class overrides, e.g. Burstable=training,BE=batch")
    p.add_argument(
        "--gpu-map",
        default="",
        metavar="MODEL=GPU,...",
        help="catalog GPU for a trace GPU model or for a class's unconstrained demand (histories), e.g. V100M32=A100-40GB,training=L40S",
    )
    p.add_argument(
        "--nodes",
        type=Path,
        metavar="FILE",
        help="node list CSV of the cluster a trace's pods run on (sn, cpu_milli, memory_mib, gpu, model): "
        "GPUs needed = demand / the share --policy can allocate, replayed as `capacity fragmentation` does",
    )
    p.add_argument("--policy", choices=POLICIES, help="with --nodes: the cluster's placement policy (default fgd)")
    p.add_argument("--seeds", metavar="SEEDS", help="with --nodes: seeds of the replay, N, N-M or N,M,... (default 42-51)")


def add_fragmentation_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `capacity fragmentation`."""
    p.add_argument("--nodes", type=Path, required=True, metavar="FILE", help="node list CSV: sn, cpu_milli, memory_mib, gpu, model")
    p.add_argument("--pods", type=Path, required=True, metavar="FILE", help="pod list CSV: name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec")
    p.add_argument("--policy", choices=(*POLICIES, "all"), default="all", help="placement policy (default all)")
    p.add_argument("--seeds", default=f"{DEFAULT_SEEDS[0]}-{DEFAULT_SEEDS[-1]}", metavar="SEEDS", help="seeds: N, N-M or N,M,... (default 42-51)")
    p.add_argument("--jobs", type=int, default=0, metavar="N", help="worker processes (default: one per CPU, at most one per run)")
    p.add_argument("--chart", type=Path, metavar="FILE", help="write the allocation curves (SVG or PNG, by the file's suffix)")
