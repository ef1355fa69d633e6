"""First-fit decreasing packing of running tasks into whole nodes at each event, against hand-packed cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.planning.packing import NodeShape, Pod, ffd_counts, nodes_over
from tests.planning.helpers import plan_json, row
from tests.planning.test_replay import HEADER

NODE = NodeShape(gpus=4, vcpu=16, memory_gib=64)


def ffd(pods: list[Pod], shape: NodeShape) -> int:
    """Pod-by-pod first fit decreasing, the definition (pods already listed largest first): each pod goes to the first
    node with its vCPU, memory and `gpus` GPUs each with `milli` free, else to a new node."""
    nodes: list[tuple[list[int], list[int]]] = []
    for p in pods:
        for free, rest in nodes:
            fit = [i for i, f in enumerate(free) if f >= p.milli][: p.gpus]
            if rest[0] >= p.cpu_milli and rest[1] >= p.memory_mib and len(fit) == p.gpus:
                break
        else:
            free, rest = [1000] * shape.gpus, [shape.vcpu * 1000, shape.memory_gib * 1024]
            nodes.append((free, rest))
            fit = list(range(p.gpus))
        for i in fit:
            free[i] -= p.milli
        rest[0] -= p.cpu_milli
        rest[1] -= p.memory_mib
    return len(nodes)


def counted(pods: list[Pod]) -> dict[tuple[int, int, int, int], int]:
    """The pods as ffd_counts takes them: how many of each (GPUs, share, vCPU, memory)."""
    out: dict[tuple[int, int, int, int], int] = {}
    for p in pods:
        key = (p.gpus, p.milli, p.cpu_milli, p.memory_mib)
        out[key] = out.get(key, 0) + 1
    return out


def test_ffd_packs_largest_first_and_respects_cpu_memory_and_gpu_shares() -> None:
    # by hand, largest first: 3 GPUs -> node 1 (1 GPU left); 2 GPUs -> node 2; 1 GPU -> node 1 (full); 0.6 -> node 2; 0.6 -> node 2
    # (a 0.6 share needs 0.6 of one GPU: node 2 has 2 free GPUs) : 2 nodes
    pods = [Pod(0, 1, 3, 1000), Pod(0, 1, 2, 1000), Pod(0, 1, 1, 1000), Pod(0, 1, 1, 600), Pod(0, 1, 1, 600)]
    assert ffd(pods, NODE) == ffd_counts(counted(pods), NODE) == 2
    # three 0.6 shares: 1.8 GPUs of fluid work, but no two share a GPU: 3 GPUs, one node
    assert ffd([Pod(0, 1, 1, 600)] * 3, NODE) == ffd_counts(counted([Pod(0, 1, 1, 600)] * 3), NODE) == 1
    # five 0.6 shares on a 4-GPU node: the fifth needs a second node
    assert ffd([Pod(0, 1, 1, 600)] * 5, NODE) == ffd_counts(counted([Pod(0, 1, 1, 600)] * 5), NODE) == 2
    # CPU binds before GPUs: two 1-GPU tasks of 10 vCPU each on 16-vCPU nodes take two nodes
    assert ffd([Pod(0, 1, 1, 1000, cpu_milli=10_000)] * 2, NODE) == ffd_counts(counted([Pod(0, 1, 1, 1000, cpu_milli=10_000)] * 2), NODE) == 2
    # memory binds: 40 GiB each on 64 GiB nodes
    assert ffd([Pod(0, 1, 1, 1000, memory_mib=40 * 1024)] * 2, NODE) == ffd_counts(counted([Pod(0, 1, 1, 1000, memory_mib=40 * 1024)] * 2), NODE) == 2


def test_nodes_over_time_follow_the_running_tasks_and_a_window_reads_the_same_packing() -> None:
    # [0,10): one 3-GPU task -> 1 node; [10,20): plus a 2-GPU task -> 2 nodes; [20,40): only the 2-GPU task -> 1 node
    pods = (Pod(0, 20, 3, 1000), Pod(10, 40, 2, 1000))
    packing = nodes_over(pods, NODE, 0, 40)
    assert list(packing.nodes.segments()) == [(0, 10, 1000), (10, 20, 2000), (20, 40, 1000)]
    # time-weighted: 2 nodes for 10 of 40 s (25 %) -> P95 is 2 nodes, P50 1 node
    assert packing.nodes.quantile(0.95) == 2 and packing.nodes.quantile(0.5) == 1
    assert list(nodes_over(pods, NODE, 15, 40).nodes.segments()) == [(15, 20, 2000), (20, 40, 1000)]


def test_a_task_larger_than_a_node_is_reported_and_counted_as_the_nodes_it_would_fill() -> None:
    # 9 GPUs on 4-GPU nodes: no node holds it; it counts as ceil(9 / 4) = 3 nodes, beside a 1-GPU task's node
    packing = nodes_over((Pod(0, 10, 9, 1000), Pod(0, 10, 1, 1000)), NODE, 0, 10)
    assert packing.unplaceable == 1
    assert packing.nodes.quantile(0.95) == pytest.approx(4)


def test_inference_from_a_trace_is_sized_on_packed_nodes_not_gpu_hours(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # three 0.6-GPU inference tasks all the time: 1.8 GPUs of fluid demand, but no two 0.6 shares fit one GPU,
    # so on 1-GPU nodes they take 3 nodes; + 15 % safety stock = 3.45 GPUs -> 4 nodes, + 1 N+1 spare = 5
    path = tmp_path / "pods.csv"
    path.write_text("\n".join([HEADER, *(f"t{i},1000,1024,1,600,,LS,Running,0,{100 * 86400},0" for i in range(3))]) + "\n")
    plan = row(plan_json(capsys, "--demand", str(path)), "plan", "inference")
    assert plan["instanceType"] == "g6.xlarge"
    assert plan["packedNodesP95"] == 3 and plan["unplaceableTasks"] == 0
    assert plan["target"] == pytest.approx(3.45)
    assert sum(plan["nodes"].values()) == 5
    assert "first-fit decreasing" in plan["basis"] and "rule of thumb" in plan["basis"]


def test_tasks_no_node_holds_are_named_in_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 9 GPUs in one inference task: the largest L4 node has 8, so no type holds it (none is preferred: the cheapest GPU-hour,
    # g6.xlarge, is kept); it counts as the 9 one-GPU nodes it would fill, and the plan says so
    path = tmp_path / "pods.csv"
    path.write_text(f"{HEADER}\nbig,1000,1024,9,1000,,LS,Running,0,{100 * 86400},0\n")
    doc = plan_json(capsys, "--demand", str(path))
    plan = row(doc, "plan", "inference")
    assert plan["unplaceableTasks"] == 1
    assert plan["instanceType"] == "g6.xlarge" and plan["packedNodesP95"] == 9
    assert any("1 tasks ask more GPUs, vCPU or memory than one" in n for n in doc["assumptions"]["notes"])


def test_no_node_is_in_use_after_the_last_pod_leaves() -> None:
    """A pool whose pods end before the window does: the nodes go to 0 at the last deletion, not held to the window's end."""
    pods = (Pod(0, 10, 1, 1000), Pod(5, 20, 1, 1000))
    got = nodes_over(pods, NodeShape(1, 8, 32), 0, 100)
    assert list(got.nodes.segments()) == [(0, 5, 1000), (5, 10, 2000), (10, 20, 1000), (20, 100, 0)]
    assert got.nodes.quantile(0.5) == 0
    assert list(nodes_over(pods, NodeShape(1, 8, 32), 30, 100).nodes.segments()) == [(30, 100, 0)]


def test_packing_by_shape_counts_is_first_fit_decreasing_pod_by_pod() -> None:
    """ffd_counts places each shape's pods node by node, many at a time; on 3,000 random cases it needs exactly the nodes
    that one-by-one first fit decreasing (ffd, above) needs on the same pods, largest first."""
    import random

    rng = random.Random(1)
    checked = 0
    for _ in range(3000):
        shape = NodeShape(rng.choice([1, 2, 4, 8]), rng.choice([4, 16, 48, 96]), rng.choice([16, 64, 192, 768]))
        pods = []
        for _ in range(rng.randrange(1, 40)):
            g = rng.choice([1, 1, 1, 2, 4, 8])
            m = 1000 if g > 1 and rng.random() < 0.8 else rng.choice([100, 250, 300, 460, 500, 600, 1000])
            p = Pod(0, 1, g, m, rng.choice([0, 1000, 4000, 8000, 12000]), rng.choice([0, 1024, 8192, 16384, 32768]))
            if shape.holds(p):
                pods.append(p)
        counts = counted(pods)
        order = sorted(pods, key=lambda p: (-p.gpus * p.milli, -p.cpu_milli, -p.memory_mib, (p.gpus, p.milli, p.cpu_milli, p.memory_mib)))
        assert ffd_counts(counts, shape) == ffd(order, shape)
        checked += bool(pods)
    assert checked > 2500


@pytest.mark.parametrize("seed", range(6))
def test_pods_packed_by_columns_and_one_by_one_give_the_same_nodes(seed: int) -> None:
    """Pods of whole-number sizes are read as arrays (a million of them); any other pods, here with one vCPU request as a
    float, take the loop over each pod. Both find the same events, the same pods no node holds, the same nodes."""
    import random

    from gpu_platform.planning import packing

    rng = random.Random(40 + seed)
    shape = NodeShape(rng.choice([1, 4, 8]), 48, 192)
    pods = []
    for _ in range(rng.randrange(50, 400)):
        start = rng.randrange(0, 1000)
        g = rng.choice([1, 1, 2, 4, 8, 16])  # 16: more than any node
        pods.append(Pod(start, start + rng.randrange(0, 200), g, rng.choice([250, 500, 1000]), rng.choice([0, 4000, 64000]), rng.choice([0, 8192])))
    as_ints = tuple(pods)
    with_float = (*pods[:-1], pods[-1]._replace(cpu_milli=float(pods[-1].cpu_milli)))
    assert packing._columns(as_ints) is not None and packing._columns(with_float) is None
    for window in ((0, 1200), (100, 700)):
        by_columns, by_pod = nodes_over(as_ints, shape, *window), nodes_over(with_float, shape, *window)
        assert (by_columns.nodes, by_columns.unplaceable) == (by_pod.nodes, by_pod.unplaceable)
        assert by_columns.unplaceable > 0  # 16-GPU pods fit no node


def test_pods_held_as_columns_pack_as_their_tuples() -> None:
    """A trace's pods are held as columns (packing.Pods): indexed, walked and packed, they are the same pods and the
    same nodes as the tuple of them; columns of Python integers past int64 take the loop and still agree."""
    import numpy as np

    from gpu_platform.planning.packing import Pods

    rng = np.random.default_rng(3)
    n = 300
    start = rng.integers(0, 1000, n)
    columns = (
        start,
        start + rng.integers(0, 200, n),
        rng.choice([1, 2, 4, 16], n),
        rng.choice([250, 1000], n),
        rng.choice([0, 4000], n),
        np.zeros(n, dtype=np.int64),
    )
    held = Pods(*columns)
    as_tuple = tuple(Pod(*(int(c[i]) for c in columns)) for i in range(n))
    assert tuple(held) == as_tuple and held[7] == as_tuple[7] and len(held) == n
    huge = Pods(*columns[:4], np.array([*columns[4][:-1].tolist(), 2**70], dtype=object), columns[5])
    for pods in (held, huge):
        for window in ((0, 1200), (300, 800)):
            got, want = nodes_over(pods, NODE, *window), nodes_over(tuple(pods), NODE, *window)
            assert (got.nodes, got.unplaceable) == (want.nodes, want.unplaceable)
            assert got.unplaceable > 0  # 16-GPU pods (and the 2**70 vCPU one) fit no node


def test_a_history_with_more_events_than_the_exact_bound_is_packed_at_sampled_instants() -> None:
    """Past MAX_EXACT_EVENTS the packing is read at SAMPLES evenly spaced instants; on a steady load it gives the same
    nodes as packing at every event, and it says it sampled."""
    from gpu_platform.planning import packing

    pods = tuple(Pod(i, i + 99, 1, 500) for i in range(0, 30_000, 2))  # 15,000 pods, 30,000 event times, 49-50 running
    whole = packing.nodes_over(pods, NODE, 100, 29_900)
    assert whole.sampled == packing.SAMPLES
    # 49 or 50 half-GPU pods: 25 GPUs, 7 four-GPU nodes (the last with 1 free GPU or more) at every instant
    assert whole.nodes.quantile(0.5) == 7 and whole.nodes.quantile(0.95) == 7


def test_the_shared_traces_are_packed_at_every_event(capsys: pytest.CaptureFixture[str]) -> None:
    """Sampling is for histories far larger than the published ones: theirs are packed exactly, event by event."""
    from gpu_platform.planning import packing
    from gpu_platform.planning.trace import trace_demand
    from tests.planning.helpers import TRACE_FILES, require_trace

    for name in TRACE_FILES:
        path = require_trace(name)
        demand = trace_demand(path.read_text(), str(path))
        for g in demand.groups:
            events = {t for p in g.pods for t in (p.start, p.end)}
            assert len(events) <= packing.MAX_EXACT_EVENTS, (name, g.workload_class)


def test_the_plan_states_the_share_of_packed_gpus_its_tasks_can_be_given(capsys: pytest.CaptureFixture[str]) -> None:
    """gpushare40: 40 % of GPU tasks share GPUs; at P95 the inference tasks fill only part of the GPUs their packed nodes
    hold, and the plan says so and sizes on the nodes (GPUs needed = demand / that share)."""
    from tests.planning.helpers import TRACE_FILES, require_trace

    doc = plan_json(capsys, "--demand", str(require_trace(TRACE_FILES[1])))
    p, d = row(doc, "plan", "inference"), row(doc, "demand", "inference")
    from gpu_platform.catalog import load_catalog

    per = load_catalog().instance(p["instanceType"]).gpus
    share = d["p95"] / (p["packedNodesP95"] * per)
    assert p["packedShare"] == pytest.approx(share, abs=1e-4) and share < 0.9
    note = next(n for n in doc["assumptions"]["notes"] if n.startswith("inference/any: at P95 its tasks fill"))
    assert f"fill {share:.0%} of the GPUs" in note and f"demand / {share:.0%}" in note
    assert p["target"] >= p["packedNodesP95"] * per  # sized on the nodes, not on the fluid demand
