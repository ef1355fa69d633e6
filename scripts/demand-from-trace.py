#!/usr/bin/env python3
"""Derive a declared demand file from an Alibaba GPU trace pod list (what examples/demand/alibaba-gpu-2023.yaml is).

Usage: .venv/bin/python scripts/demand-from-trace.py TRACE.csv > examples/demand/alibaba-gpu-2023.yaml
The quantiles are the planner's own, time-weighted over each class's current regime (what `capacity plan`
plans a history on by default: planning/regimes.py), so planning the derived file sizes the tiers the
trace's headline plan rests on, without shipping the trace.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from gpu_platform.planning.regimes import find_regimes, in_regime
from gpu_platform.planning.trace import trace_demand
from gpu_platform.planning.windows import DAY


def derive(path: Path) -> str:
    """The demand YAML of one pod list: one entry per workload class."""
    full = trace_demand(path.read_text(encoding="utf-8"), path.name)
    regimes = find_regimes(full)
    demand = in_regime(full, regimes)
    assert full.window is not None
    since = ", ".join(f"{c} from day {(r.start - full.window[0]) / DAY:.0f}" for c, r in regimes.items())
    entries = []
    for g in demand.totals:
        entry = {
            "team": f"trace-{g.workload_class}",
            "class": g.workload_class,
            "gpuModel": g.catalog_gpu or "any",
            "p50": round(g.p50, 3),
            "p95": round(g.p95, 3),
            "p99": round(g.p99, 3),
            "peak": round(g.peak, 3),
            "sla": g.sla,
            "interruptible": g.interruptible,
        }
        if g.interruptible and g.p95:
            entry["interruptibleShare"] = round(min(1.0, g.interruptible_p95 / g.p95), 3)
        entries.append(entry)
    head = (
        f"# Derived from the Alibaba GPU cluster trace 2023 ({path.name}, alibaba/clusterdata cluster-trace-gpu-v2023,\n"
        "# commit 7a6c496e4f4b6ce6150be8f881cb051bf2abff42) by scripts/demand-from-trace.py: time-weighted quantiles of\n"
        "# concurrent GPU demand per class (LS -> inference, Guaranteed -> training, Burstable and BE -> batch, BE interruptible),\n"
        f"# each over its current regime ({since} of {(full.window[1] - full.window[0]) / DAY:.0f}).\n"
    )
    return head + yaml.safe_dump({"demand": entries}, sort_keys=False)


if __name__ == "__main__":
    sys.stdout.write(derive(Path(sys.argv[1])))
