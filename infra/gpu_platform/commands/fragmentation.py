"""`gpu-platform capacity fragmentation`: the share of a cluster's GPUs GPU-sharing pods can really be given.

Replays a pod list onto a node list the way the trace paper's simulator does (gpu_platform.planning.fragmentation)
and prints, per placement policy, the allocated share of the cluster's GPUs as the arrived demand reaches 90, 100
and 130 % of them, and the GPUs left unallocated.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from gpu_platform.behaviour.gpu_share import accepts
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.input_limits import DEMAND, read_regular
from gpu_platform.planning.chart import check_chart_path, curves_scene, write_scene
from gpu_platform.planning.fragmentation import (
    ARRIVED_MARKS,
    INFLATION,
    UNALLOCATED_MARKS,
    PolicyResult,
    fragmentation_report,
    read_nodes,
    read_pods,
    unallocated_gpus,
)
from gpu_platform.planning.fragmentation_choices import MAX_SEEDS, POLICIES


def parse_seeds(text: str) -> tuple[int, ...]:
    """`42-51`, `42,45` or `7` -> the seeds; ConfigError naming what is allowed."""
    allowed = f"allowed: N, N-M or N,M,... with at most {MAX_SEEDS} seeds, each 0..2**31-1"
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d{1,10})\s*(?:-\s*(\d{1,10})\s*)?", part)
        if m is None:
            raise ConfigError([Problem("--seeds", "", f"{text!r} is not a seed list", allowed)])
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo or hi > 2**31 - 1 or hi - lo >= MAX_SEEDS:
            raise ConfigError([Problem("--seeds", "", f"{part.strip()!r} is not a usable range", allowed)])
        seeds.extend(range(lo, hi + 1))
    if len(seeds) > MAX_SEEDS:
        raise ConfigError([Problem("--seeds", "", f"{len(seeds)} seeds", allowed)])
    return tuple(dict.fromkeys(seeds))


def run(args: argparse.Namespace, spec_path: Path, stack: str) -> int:
    """Read both lists, replay every policy over every seed, print the figures."""
    seeds = parse_seeds(args.seeds)
    if args.chart is not None:
        check_chart_path(args.chart)
    if args.jobs < 0:
        raise ConfigError([Problem("--jobs", "", f"{args.jobs}", "allowed: 0 (one per CPU) or more")])
    allowed = "allowed: a CSV file of at most 256 MiB"
    nodes = read_nodes(read_regular(args.nodes, DEMAND, allowed, encoding="utf-8-sig"), str(args.nodes))
    pods = read_pods(read_regular(args.pods, DEMAND, allowed, encoding="utf-8-sig"), str(args.pods))
    policies = POLICIES if args.policy == "all" else (args.policy,)
    results = fragmentation_report(nodes, pods, policies, seeds, jobs=args.jobs or None)
    gpus = sum(n.gpus for n in nodes)
    data = to_json(len(nodes), gpus, len(pods), results)
    models = {n.model for n in nodes}
    data["podsAcceptingNoNode"] = sum(1 for p in pods if p.shape.gpus and p.shape.spec and not any(accepts(p.shape.spec, m) for m in models))
    if args.chart is not None:
        shapes, height = curves_scene({r.policy: r.curve() for r in results}, gpus)
        write_scene(shapes, height, args.chart)
    fmt = getattr(args, "format", "text") or "text"
    if fmt == "json":
        print(json.dumps(data, indent=2))
    else:
        print(render(data, markdown=fmt == "markdown"))
    return 0


def to_json(nodes: int, gpus: int, pods: int, results: list[PolicyResult]) -> dict[str, Any]:
    """`{"cluster": {"nodes", "gpus"}, "policies": [...]}`, shares in percent of the cluster's GPUs."""
    policies = []
    for r in results:
        share = {str(m): r.allocated(m) for m in ARRIVED_MARKS}
        unallocated = {str(m): unallocated_gpus(v[0], gpus) if (v := r.allocated(m)) else None for m in UNALLOCATED_MARKS}
        policies.append(
            {
                "policy": r.policy,
                "seeds": [s.seed for s in r.seeds],
                "allocatedShareAt": {k: v[0] if v else None for k, v in share.items()},
                "allocatedShareRangeAt": {k: [v[1], v[2]] if v else None for k, v in share.items()},
                "unallocatedGpusAt": unallocated,
                "podsPerSeed": [s.pods for s in r.seeds],
            }
        )
    return {"cluster": {"nodes": nodes, "gpus": gpus}, "pods": pods, "inflation": INFLATION, "policies": policies}


def _cell(v: list[float] | None, mean: float | None) -> str:
    return "-" if v is None or mean is None else f"{mean:.2f} ({v[0]:.2f}-{v[1]:.2f})"


def render(data: dict[str, Any], markdown: bool = False) -> str:
    """The figures for people: one row per policy, and what they mean for a plan."""
    c = data["cluster"]
    head = (
        f"Fragmentation: {c['nodes']:,} nodes, {c['gpus']:,} GPUs; {data['pods']:,} pods, inflated with random copies to "
        f"{data['inflation']:.0%} of the cluster's GPUs, each placed once (seeds {_seeds(data['policies'][0]['seeds'])})"
    )
    cols = ["policy", *(f"allocated at {m}% arrived" for m in ARRIVED_MARKS), *(f"unallocated GPUs at {m}%" for m in UNALLOCATED_MARKS)]
    rows = []
    for p in data["policies"]:
        shares = [_cell(p["allocatedShareRangeAt"][str(m)], p["allocatedShareAt"][str(m)]) for m in ARRIVED_MARKS]
        rows.append([p["policy"], *shares, *(str(p["unallocatedGpusAt"][str(m)]) for m in UNALLOCATED_MARKS)])
    if markdown:
        table = [f"| {' | '.join(cols)} |", f"|{'---|' * len(cols)}", *(f"| {' | '.join(r)} |" for r in rows)]
    else:
        widths = [max(len(x) for x in col) for col in zip(cols, *rows, strict=True)]
        table = ["  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in (cols, *rows)]
    notes = ["Shares are percent of the cluster's GPUs, mean (min-max) over the seeds."]
    by = {p["policy"]: p for p in data["policies"]}
    if {"best-fit", "fgd"} <= by.keys():
        gap = by["best-fit"]["unallocatedGpusAt"]["130"] - by["fgd"]["unallocatedGpusAt"]["130"]
        than = "fewer" if gap >= 0 else "more"
        notes.append(f"FGD leaves {abs(gap)} GPUs {than} unallocated than best-fit at 130 % arrived.")
    if data.get("podsAcceptingNoNode"):
        notes.append(f"{data['podsAcceptingNoNode']:,} pods accept no node's GPU model (gpu_spec): they never place.")
    for p in data["policies"]:
        share = p["allocatedShareAt"]["130"]
        if share:
            notes.append(f"Under {p['policy']}, a cluster serves at most {share:.2f} % of its GPUs: buy demand / {share / 100:.4f} GPUs.")
    return "\n".join([head, "", *table, "", *notes])


def _seeds(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 1:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))
