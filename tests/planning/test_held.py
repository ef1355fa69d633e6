"""Reservations a stack already holds, judged on the trace's demand: prod's four reserved H100 nodes."""

from __future__ import annotations

import csv
from itertools import pairwise

import pytest

from tests.planning.helpers import TRACE_FILES, plan_json, require_trace, run_cli


def _training_node_use(path: str, nodes: int, per: int) -> list[float]:
    """Independent recomputation: the share of the window during which Guaranteed (training) GPU demand fills each node
    stacked under it; the window runs from the first GPU task's creation to the last one's deletion (all classes)."""
    with open(path, encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if int(r["num_gpu"]) > 0]
    start = min(int(r["creation_time"]) for r in rows)
    end = max(int(r["deletion_time"]) for r in rows)
    events: dict[int, float] = {}
    for r in rows:
        if r["qos"] != "Guaranteed":
            continue
        gpus = int(r["num_gpu"]) * int(r["gpu_milli"]) / 1000
        events[int(r["creation_time"])] = events.get(int(r["creation_time"]), 0.0) + gpus
        events[int(r["deletion_time"])] = events.get(int(r["deletion_time"]), 0.0) - gpus
    times = sorted(events)
    filled = [0.0] * nodes
    level = 0.0
    for t, nxt in zip(times, [*times[1:], end], strict=True):
        level += events[t]
        for i in range(nodes):
            filled[i] += min(max(level - i * per, 0.0), per) * (nxt - t)
    return [f / (per * (end - start)) for f in filled]


def _training_node_up(path: str, nodes: int, per: int) -> list[float]:
    """Independent recomputation: the share of the window during which training demand is above the nodes below node i."""
    with open(path, encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if int(r["num_gpu"]) > 0]
    start = min(int(r["creation_time"]) for r in rows)
    end = max(int(r["deletion_time"]) for r in rows)
    up = [0] * nodes
    cuts = sorted({start, end, *(int(r[k]) for r in rows if r["qos"] == "Guaranteed" for k in ("creation_time", "deletion_time"))})
    train = [(int(r["creation_time"]), int(r["deletion_time"]), int(r["num_gpu"]) * int(r["gpu_milli"])) for r in rows if r["qos"] == "Guaranteed"]
    for a, b in pairwise(cuts):
        milli = sum(v for s, e, v in train if s <= a < e)
        for i in range(nodes):
            up[i] += (b - a) if milli > i * per * 1000 else 0
    return [u / (end - start) for u in up]


def test_the_reserved_h100s_the_trace_barely_uses_are_to_be_released(capsys: pytest.CaptureFixture[str]) -> None:
    trace = require_trace(TRACE_FILES[0])
    doc = plan_json(capsys, "--demand", str(trace), "--stack", "prod", "--window", "full")
    (h100,) = [r for r in doc["plan"]["releases"] if r["instanceType"] == "p5.48xlarge"]
    assert (h100["held"], h100["keep"], h100["release"]) == (4, 0, 4)
    assert h100["pools"] == [{"pool": "train-h100-reserved", "reservation": "cr-0a1b2c3d4e5f60718"}]
    want = _training_node_use(str(trace), 4, 8)
    assert h100["nodeUse"] == pytest.approx(want, abs=5e-5)
    assert all(u < h100["breakEvenUtilization"] for u in h100["nodeUse"])
    price = 55.04  # p5.48xlarge list, data/catalog.yaml
    assert h100["monthlyHeld"] == pytest.approx(4 * price * 730, abs=0.01)
    # released, a node runs on demand only while training needs it, billed whole: that, not its GPUs' busy share, is the use
    up = _training_node_up(str(trace), 4, 8)
    assert h100["nodeUp"] == pytest.approx(up, abs=5e-5)
    assert up[0] > want[0] and all(u < h100["breakEvenUtilization"] for u in up)
    assert h100["monthlyUsed"] == pytest.approx(sum(up) * price * 730, abs=1)
    code, out, _ = run_cli(capsys, "capacity", "plan", "--demand", str(trace), "--stack", "prod", "--window", "full")
    assert code == 0 and "Release 4 of 4 held p5.48xlarge nodes (training/any, train-h100-reserved (cr-0a1b2c3d4e5f60718)) now" in out


def test_a_stated_coverage_floor_keeps_what_it_asks_for(capsys: pytest.CaptureFixture[str]) -> None:
    """teams.yaml states a 70 % coverage floor: prod's four H100 nodes are all inside it, so none is to be released."""
    from tests.conftest import ROOT

    doc = plan_json(capsys, "--demand", str(ROOT / "examples" / "demand" / "teams.yaml"), "--stack", "prod")
    assert not [r for r in doc["plan"]["releases"] if r["instanceType"] == "p5.48xlarge"]
