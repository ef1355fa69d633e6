"""The planner on the Alibaba GPU trace: demand quantiles checked against an independent computation.

Definition reproduced (shared/traces/README.md, from the trace's own documentation in alibaba/clusterdata
cluster-trace-gpu-v2023): a task holds `num_gpu * gpu_milli / 1000` GPUs over `[creation_time,
deletion_time)`; the window runs from the first GPU task's creation to the last GPU task's deletion,
the same for every class; a quantile is the least value v such that the share of the window's time
with demand <= v reaches q.
"""

from __future__ import annotations

import bisect
import csv
from itertools import accumulate, pairwise
from pathlib import Path

import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.planning.trace import DEFAULT_QOS_CLASS
from tests.planning.helpers import TRACE_FILES, plan_json, require_trace, row, run_cli


def independent_quantiles(path: Path, qos_class: dict[str, str]) -> dict[str, dict[str, float]]:
    """Per class: p50/p95/p99/peak by prefix sums over sorted starts and ends (no step-function code shared)."""
    with path.open(newline="") as fh:
        tasks = [r for r in csv.DictReader(fh) if int(r["num_gpu"]) > 0 and int(r["gpu_milli"]) > 0]
    start = min(int(r["creation_time"]) for r in tasks)
    end = max(int(r["deletion_time"]) for r in tasks)
    out = {}
    for cls in sorted(set(qos_class.values())):
        mine = [r for r in tasks if qos_class[r["qos"]] == cls]
        if not mine:
            continue
        starts = sorted((int(r["creation_time"]), int(r["num_gpu"]) * int(r["gpu_milli"])) for r in mine)
        ends = sorted((int(r["deletion_time"]), int(r["num_gpu"]) * int(r["gpu_milli"])) for r in mine)
        s_t = [t for t, _ in starts]
        e_t = [t for t, _ in ends]
        s_sum = [0, *accumulate(v for _, v in starts)]
        e_sum = [0, *accumulate(v for _, v in ends)]
        cuts = sorted({start, end, *s_t, *e_t})
        durations: dict[int, int] = {}
        for a, b in pairwise(cuts):
            # demand on [a, b): tasks started at or before a minus tasks ended at or before a
            level = s_sum[bisect.bisect_right(s_t, a)] - e_sum[bisect.bisect_right(e_t, a)]
            durations[level] = durations.get(level, 0) + (b - a)
        total = end - start
        levels = sorted(durations)
        q = {}
        for name, share in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
            cum = 0
            for v in levels:
                cum += durations[v]
                if cum >= share * total:
                    q[name] = v / 1000
                    break
            # the definition, checked directly: at least `share` of the time at or below, less strictly below
            below_or_at = sum(d for v, d in durations.items() if v <= q[name] * 1000)
            strictly_below = sum(d for v, d in durations.items() if v < q[name] * 1000)
            assert below_or_at >= share * total > strictly_below
        q["peak"] = max(levels) / 1000
        out[cls] = q
    return out


@pytest.mark.parametrize("name", TRACE_FILES)
def test_trace_quantiles_match_an_independent_computation(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = require_trace(name)
    doc = plan_json(capsys, "--demand", str(path), "--window", "full")
    assert doc["source"]["kind"] == "alibaba-trace"
    expected = independent_quantiles(path, DEFAULT_QOS_CLASS)
    assert {r["class"] for r in doc["demand"]["classes"]} == set(expected)
    for cls, q in expected.items():
        got = row(doc, "demand", cls)
        for key in ("p50", "p95", "p99", "peak"):
            assert got[key] == pytest.approx(q[key], abs=5e-4), (name, cls, key)
    # BE is interruptible, LS is not (default class mapping)
    assert row(doc, "demand", "batch")["interruptible"] is True
    assert row(doc, "demand", "inference")["interruptible"] is False


def test_class_mapping_is_overridable(capsys: pytest.CaptureFixture[str]) -> None:
    path = require_trace(TRACE_FILES[0])
    mapping = {**DEFAULT_QOS_CLASS, "Burstable": "training"}
    doc = plan_json(capsys, "--demand", str(path), "--qos-class", "Burstable=training", "--window", "full")
    expected = independent_quantiles(path, mapping)
    for cls, q in expected.items():
        assert row(doc, "demand", cls)["p95"] == pytest.approx(q["p95"], abs=5e-4)


@pytest.mark.parametrize("window", ["full", "regime"])
def test_plan_of_the_trace_holds_its_own_formulas(window: str, capsys: pytest.CaptureFixture[str]) -> None:
    """coverage = reserved / P95 and spotExposure = spot / P95 on every row; costs add up; Spot only where interruptible;
    capacity reaches P95 except where a job-level replay shows the queue meets its wait target with less."""
    doc = plan_json(capsys, "--demand", str(require_trace(TRACE_FILES[0])), "--window", window)
    for d, p in zip(doc["demand"]["classes"], doc["plan"]["classes"], strict=True):
        assert (d["class"], d["gpuModel"]) == (p["class"], p["gpuModel"])
        assert p["coverage"] == pytest.approx(p["reserved"] / d["p95"], abs=1e-4)
        assert p["spotExposure"] == pytest.approx(p["spot"] / d["p95"], abs=1e-4)
        assert p["spot"] <= d["interruptibleP95"] + 1e-9
        assert p["reserved"] + p["onDemand"] + p["spot"] >= d["p95"] or p["basis"].startswith("job-level replay")
    totals = [p for p in doc["plan"]["classes"] if p["gpuModel"] == "any"]
    assert doc["plan"]["monthlyCost"] == pytest.approx(sum(p["monthlyCost"] for p in totals), abs=0.05)
    assert doc["plan"]["monthlyCost"] < doc["plan"]["onDemandOnlyMonthlyCost"]


def cheapest_gpu_hour(gpu: str) -> float:
    """The catalog's cheapest on-demand price of one GPU-hour of a model (independent of the planner's code)."""
    return min(t.price_per_hour / t.gpus for t in load_catalog().instance_types.values() if t.gpu.name == gpu and t.price_per_hour)


def test_gpu_spec_filters_the_pools_and_a_task_goes_to_the_cheapest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One row per catalog GPU that gets work (not one per gpu_spec string): a task's gpu_spec lists the trace models it
    accepts, each standing for a catalog GPU; it runs on the cheapest of them per unit of its work; an undisclosed model
    (G2) stands for the class's own GPU, and the output says so."""
    head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    rows = [
        "p0,1000,1024,2,1000,V100M16|V100M32,LS,Running,0,100,0",
        "p1,1000,1024,1,500,,LS,Running,50,100,50",
        "p2,1000,1024,1,1000,T4,LS,Running,0,50,0",
        "p3,1000,1024,0,0,,LS,Running,0,100,0",
        "p4,1000,1024,1,1000,P100|T4,LS,Running,0,100,0",
        "p5,1000,1024,1,1000,G2,LS,Running,0,100,0",
    ]
    trace = tmp_path / "pods.csv"
    trace.write_text(head + "\n".join(rows) + "\n")
    doc = plan_json(capsys, "--demand", str(trace))
    assert [r["gpuModel"] for r in doc["demand"]["classes"]] == ["L4", "A10G", "T4", "any"]  # the class's own GPU first
    # P100|T4: a P100's work on a T4 is 9.3 / 8.1 T4s (catalog throughput), so T4 itself is the cheaper way to run it
    assert cheapest_gpu_hour("T4") < cheapest_gpu_hour("T4") * 9.3 / 8.1
    t4 = row(doc, "demand", "inference", "T4")
    assert (t4["p50"], t4["peak"]) == (pytest.approx(1.0), pytest.approx(2.0))  # p2 on [0, 50) with p4 on [0, 100)
    # 2 V100s on the A10G standing for them: 2 x 15.7 / 31.2 TFLOPS (catalog throughput) = 1.006 A10Gs' worth
    assert row(doc, "demand", "inference", "A10G")["p50"] == pytest.approx(1.006)
    # the unconstrained share and the undisclosed G2 task both run on the class's L4
    assert row(doc, "demand", "inference", "L4")["peak"] == pytest.approx(1.5)
    # the class's total is its own series: [0, 50) holds 1.006 + 2 (T4) + 1 (G2), more than [50, 100)'s 1.006 + 1 + 1.5
    assert row(doc, "demand", "inference")["peak"] == pytest.approx(1.006 + 2 + 1)
    assert {r["catalogGpu"] for r in doc["plan"]["classes"] if r["gpuModel"] != "any"} == {"L4", "A10G", "T4"}
    subs = {s["traceModel"]: s for s in doc["assumptions"]["gpuSubstitutions"]}  # the mapping is stated, not silent
    assert sorted(subs) == ["G2", "P100", "T4", "V100M16", "V100M32"]
    assert subs["V100M16"] == {
        "traceModel": "V100M16",
        "catalogGpu": "A10G",
        "throughputFactor": 0.5032,
        "basis": "peak FP32 TFLOPS (dense, non-tensor): 15.7 / 31.2 (catalog throughput, 2026-11-26)",
    }
    assert subs["G2"]["catalogGpu"] == "the class's GPU" and "undisclosed" in subs["G2"]["basis"] and "--gpu-map G2=<GPU>" in subs["G2"]["basis"]
    # every row is priced, and no row expects to pay more than its full size
    for r in doc["plan"]["classes"]:
        assert r["monthlyCost"] is not None and r["expectedMonthlyCost"] <= r["monthlyCost"] + 1e-6, r["gpuModel"]
    # V100M16 mapped to L4: 15.7 / 30.3 of an L4-hour is cheaper than 15.7 / 31.2 of an A10G-hour, so p0 moves to L4
    assert cheapest_gpu_hour("L4") * 15.7 / 30.3 < cheapest_gpu_hour("A10G") * 15.7 / 31.2
    doc = plan_json(capsys, "--demand", str(trace), "--gpu-map", "V100M16=L4,inference=L40S")
    assert [r["gpuModel"] for r in doc["demand"]["classes"]] == ["L40S", "L4", "T4", "any"]
    assert row(doc, "demand", "inference", "L4")["p50"] == pytest.approx(round(2000 * 15.7 / 30.3) / 1000)
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(trace), "--gpu-map", "V100M16=A100-40G")
    assert code == 2 and "did you mean 'A100-40GB'" in err


POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def test_instance_types_hold_the_tasks_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Inference tasks asking 12 vCPU and 48 GiB per L4 do not fit a g6.xlarge (4 vCPU, 16 GiB): the plan takes the
    cheapest GPU-hour among L4 types with at least that per GPU: g6.12xlarge (4 GPUs, 48 vCPU, 192 GiB: $1.15 a GPU-hour)
    before g6.4xlarge (16 vCPU, 64 GiB: $1.32); batch with 8-GPU tasks takes 8-GPU nodes."""
    trace = tmp_path / "pods.csv"
    rows = [POD_HEADER]
    rows += [f"i{i},12000,49152,1,1000,,LS,Running,0,1000,0" for i in range(4)]
    rows += ["b0,96000,393216,8,1000,,Burstable,Running,0,1000,0"]
    trace.write_text("\n".join(rows) + "\n")
    doc = plan_json(capsys, "--demand", str(trace))
    inference = row(doc, "plan", "inference")
    assert inference["instanceType"] == "g6.12xlarge"
    assert inference["taskShape"] == {"gpusPerTask": 1, "vcpuPerGpu": 12.0, "memoryGiBPerGpu": 48.0}
    assert inference["fitsNode"] == 1.0
    batch = row(doc, "plan", "batch")
    assert batch["instanceType"] == "g6e.48xlarge" and batch["taskShape"]["gpusPerTask"] == 8


def test_an_undisclosed_trace_gpu_model_runs_on_the_class_gpu_and_the_output_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """G2 is undisclosed: its tasks run on the class's own GPU, GPU for GPU, stated with the flag that maps it elsewhere."""
    trace = tmp_path / "pods.csv"
    trace.write_text(f"{POD_HEADER}\na,1000,1024,1,1000,G2,LS,Running,0,100,0\nb,1000,1024,1,1000,G2,Burstable,Running,0,100,0\n")
    doc = plan_json(capsys, "--demand", str(trace))
    assert row(doc, "plan", "inference")["catalogGpu"] == "L4" and row(doc, "plan", "batch")["catalogGpu"] == "L40S"
    (sub,) = doc["assumptions"]["gpuSubstitutions"]
    assert sub["catalogGpu"] == "the class's GPU" and sub["throughputFactor"] == 1.0
    assert "training H100-80GB, inference L4, batch L40S" in sub["basis"] and sub["basis"].endswith("choose with --gpu-map G2=<GPU>")
    doc = plan_json(capsys, "--demand", str(trace), "--gpu-map", "G2=T4")
    assert row(doc, "plan", "inference")["catalogGpu"] == "T4" and row(doc, "plan", "batch")["catalogGpu"] == "T4"
    # G2 has no throughput figure: counted GPU for GPU, and the plan says it assumed so
    (sub,) = doc["assumptions"]["gpuSubstitutions"]
    assert sub["throughputFactor"] == 1.0 and sub["basis"].startswith("assumed 1: no throughput data for G2")


def test_substituted_gpu_work_scales_by_the_catalog_throughput_ratio(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """P100 work on the T4 standing for it: 9.3 / 8.1 = 1.148 T4s per P100 (catalog.yaml throughput, FP32 peak)."""
    trace = tmp_path / "pods.csv"
    trace.write_text(f"{POD_HEADER}\n" + "".join(f"p{i},1000,1024,1,1000,P100,LS,Running,0,100,0\n" for i in range(10)))
    doc = plan_json(capsys, "--demand", str(trace))
    # 10 P100s busy all the time: 10 x 1.148 = 11.48 T4s' worth
    assert row(doc, "demand", "inference")["p95"] == pytest.approx(11.48, abs=0.01)
    assert row(doc, "plan", "inference")["catalogGpu"] == "T4"
    (sub,) = doc["assumptions"]["gpuSubstitutions"]
    assert (sub["traceModel"], sub["catalogGpu"], sub["throughputFactor"]) == ("P100", "T4", pytest.approx(1.1481, abs=1e-4))
