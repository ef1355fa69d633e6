"""Whole-node placement with Kueue Topology-Aware Scheduling, replayed (gpu_platform.behaviour.kueue_tas).

Worked examples from kueue v0.19.2 keps/2724-topology-aware-scheduling/README.md ("Computing the assignment") and
the platform's own reserved pool: a mix of 1-GPU and 8-GPU pods is admitted only where whole nodes fit, and no
admitted 8-GPU pod is stranded; kube-scheduler's default scoring without TAS strands them (the counter-case).
"""

from __future__ import annotations

import celpy
import pytest
import yaml

from gpu_platform.behaviour.kueue_tas import Node, admit, flavor_refusal, place, tas_only
from gpu_platform.behaviour.scheduler import least_allocated_node
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s import kueue
from gpu_platform.pools import GPU_RESOURCE, node_counts, whole_nodes
from gpu_platform.spec import checks
from tests.conftest import plan_for, require_shared_crds, spec_for

GPU = GPU_RESOURCE


def gpus(**free: int) -> list[Node]:
    return [Node(name, {GPU: n, "pods": 110}) for name, n in free.items()]


@pytest.mark.parametrize(
    ("free", "count", "mode", "where"),
    [
        # KEP: 7 pods on nodes holding 3, 3, 2 and 1: BestFit fills the two 3s and gives the last pod the tightest node.
        ({"a": 3, "b": 3, "c": 2, "d": 1}, 7, "preferred", {"a": 3, "b": 3, "d": 1}),
        # ... and LeastFreeCapacity (unconstrained) fills from the smallest up.
        ({"a": 3, "b": 3, "c": 2, "d": 1}, 7, "unconstrained", {"d": 1, "c": 2, "a": 3, "b": 1}),
        ({"a": 8, "b": 8, "c": 8}, 10, "preferred", {"a": 8, "b": 2}),
        ({"a": 8, "b": 8, "c": 8}, 10, "unconstrained", {"a": 8, "b": 2}),
        ({"a": 8, "b": 3, "c": 1}, 2, "required", {"b": 2}),
        ({"a": 8, "b": 3, "c": 1}, 2, "unconstrained", {"b": 2}),
        ({"a": 8, "b": 3, "c": 1}, 10, "unconstrained", {"c": 1, "b": 3, "a": 6}),
        # required at the hostname: all pods on one node or none.
        ({"a": 8, "b": 8}, 9, "required", None),
    ],
)
def test_assignment_matches_kueues_algorithm(free: dict[str, int], count: int, mode: str, where: dict[str, int] | None) -> None:
    assert place(gpus(**free), count, {GPU: 1}, mode) == where  # type: ignore[arg-type]


def test_network_blocks_keep_a_required_job_in_one_block() -> None:
    """Topology [layer-3, hostname]: a job required at layer-3 goes to the block that holds it, tightest first."""
    nodes = [
        Node("n1", {GPU: 8, "pods": 110}, ("nn-a",)),
        Node("n2", {GPU: 8, "pods": 110}, ("nn-a",)),
        Node("n3", {GPU: 8, "pods": 110}, ("nn-b",)),
        Node("n4", {GPU: 8, "pods": 110}, ("nn-b",)),
        Node("n5", {GPU: 8, "pods": 110}, ("nn-b",)),
    ]
    assert place(nodes, 2, {GPU: 8}, "required", level=1) == {"n1": 1, "n2": 1}
    assert place(nodes, 3, {GPU: 8}, "required", level=1) == {"n3": 1, "n4": 1, "n5": 1}
    assert place(nodes, 4, {GPU: 8}, "required", level=1) is None
    # preferred moves up a level and spreads over blocks instead of refusing.
    assert place(nodes, 4, {GPU: 8}, "preferred", level=1) is not None


def test_below_the_fit_level_all_chosen_domains_children_share_one_sort() -> None:
    """findTopologyAssignment phase 2b: once blocks A (3 + 2 free) and B (4 free) are chosen for 6 pods, their nodes are
    sorted together and the whole count is spread again, BestFit giving the last piece the tightest node: b1 takes 4
    and a2 (not a1) the last 2, although A was picked for 5 and B for 1 at the block level."""
    nodes = [Node("a1", {GPU: 3, "pods": 110}, ("A",)), Node("a2", {GPU: 2, "pods": 110}, ("A",)), Node("b1", {GPU: 4, "pods": 110}, ("B",))]
    assert place(nodes, 6, {GPU: 1}, "preferred", level=2) == {"b1": 4, "a2": 2}


def _reserved_pool() -> tuple[list[Node], int]:
    spec, catalog = spec_for("prod"), load_catalog()
    pool = spec.pool("train-h100-reserved")
    assert whole_nodes(pool)
    n = node_counts(pool)[2]
    per = catalog.instance(pool.instance_types[0]).gpus
    return [Node(f"p5-{i}", {GPU: per, "cpu": 192_000, "memory": 2_048 * 1024, "pods": 110}) for i in range(n)], per


def test_small_pods_leave_whole_nodes_free_and_a_big_job_waits_instead_of_stranding() -> None:
    """prod's reserved pool: 4 p5 nodes of 8 GPUs. Four 1-GPU notebooks, then a 3 x 8-GPU job, then one more 8-GPU pod."""
    nodes, per = _reserved_pool()
    small = {GPU: 1, "cpu": 8_000, "memory": 64 * 1024}
    for _ in range(4):
        a = place(nodes, 1, small)
        assert a is not None
        admit(nodes, a, small)
    # LeastFreeCapacity put every small pod on the same node.
    assert sorted(n.free[GPU] for n in nodes) == [per - 4, per, per, per]
    big = {GPU: per, "cpu": 96_000, "memory": 1_024 * 1024}
    job = place(nodes, 3, big)
    assert job is not None and sorted(job.values()) == [1, 1, 1]
    admit(nodes, job, big)
    assert all(n.free[GPU] >= 0 for n in nodes)
    # No room for another whole node: not admitted (it waits in the queue, quota untouched), never admitted-then-stuck.
    assert place(nodes, 1, big) is None


def test_without_topology_the_default_scheduler_strands_the_big_job() -> None:
    """The counter-case: Kueue admits on quota alone and kube-scheduler's LeastAllocated spreads the small pods."""
    nodes, per = _reserved_pool()
    alloc = {n.name: {GPU: per, "cpu": 192_000, "memory": 2_048 * 1024} for n in nodes}
    used: dict[str, dict[str, int]] = {}
    small = {GPU: 1, "cpu": 8_000, "memory": 64 * 1024}
    for _ in range(4):
        node = least_allocated_node(alloc, used, small)
        assert node is not None
        used[node] = {r: used.get(node, {}).get(r, 0) + v for r, v in small.items()}
    assert len(used) == 4  # one per node
    big = {GPU: per, "cpu": 96_000, "memory": 1_024 * 1024}
    assert least_allocated_node(alloc, used, big) is None  # 28 GPUs free, no node with 8: the job's pods stay Pending


def test_prods_queues_place_every_pod_set_kueue_would() -> None:
    """The tenant's `whole-nodes` queue is TAS-only, so pod sets without an annotation are placed there (implied), and
    its default queue has no TAS flavor, so nothing there is refused for lacking one (checkPodSetAndFlavorMatchForTAS)."""
    spec, catalog = spec_for("prod"), load_catalog()
    flavors = {f["metadata"]["name"]: f for f in [kueue.cpu_flavor(), *(kueue.resource_flavor(p, catalog) for p in spec.node_pools)]}
    tenant = next(t for t in spec.tenants if t.name == "llm-training")
    whole = kueue.whole_nodes_queue(spec, catalog, tenant)
    default = kueue.cluster_queue(spec, catalog, tenant)
    assert whole is not None and tas_only(whole, flavors) and not tas_only(default, flavors)
    requested = ["cpu", "memory", GPU]
    for cq in (whole, default):
        for group in cq["spec"]["resourceGroups"]:
            for f in group["flavors"]:
                for asked in ({}, {"kueue.x-k8s.io/podset-preferred-topology": "kubernetes.io/hostname"}):
                    why = flavor_refusal(cq, flavors, f["name"], group["coveredResources"], asked, requested)
                    if cq is whole or not asked:
                        assert why is None, (cq["metadata"]["name"], f["name"], asked, why)
    # The counter-case: the reserved flavor in the default queue (one mixed queue) refuses every unannotated pod set,
    # and an annotated one loses `default-cpu`.
    mixed = {"spec": {"resourceGroups": [*default["spec"]["resourceGroups"], *whole["spec"]["resourceGroups"]]}}
    assert (
        flavor_refusal(mixed, flavors, "train-h100-reserved", requested, {}, requested)
        == 'Flavor "train-h100-reserved" supports only TopologyAwareScheduling'
    )
    annotated = {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
    assert "does not support" in str(flavor_refusal(mixed, flavors, "default-cpu", ["cpu", "memory"], annotated, requested))


def _flavor_spec_rules() -> list[dict[str, str]]:
    """The `spec` x-kubernetes-validations of Kueue's ResourceFlavor CRD (v1beta2) at the lockfile's tag."""
    folder = require_shared_crds() / "kueue" / "v0.19.2"
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition" and doc["spec"]["names"]["kind"] == "ResourceFlavor":
                (v,) = [v for v in doc["spec"]["versions"] if v["name"] == "v1beta2"]
                return list(v["schema"]["openAPIV3Schema"]["properties"]["spec"].get("x-kubernetes-validations") or [])
    pytest.fail(f"no ResourceFlavor CRD under {folder}")


def _refusals(rules: list[dict[str, str]], new: dict, old: dict) -> list[str]:
    """What the API server's CEL transition rules say about updating `old` to `new` (apiextensions-apiserver CEL validator)."""
    env = celpy.Environment()
    out = []
    for rule in rules:
        act = {"self": celpy.json_to_cel(new), "oldSelf": celpy.json_to_cel(old)}
        if not bool(env.program(env.compile(rule["rule"])).evaluate(act)):
            out.append(rule.get("message", rule["rule"]))
    return out


def test_switching_whole_nodes_replaces_the_flavor_the_crd_will_not_update() -> None:
    """Kueue's CRD makes topologyName, nodeLabels and tolerations immutable once topologyName is set, so turning
    `wholeNodes` off (or relabelling a whole-node pool) cannot be an update: the program replaces the flavor instead."""
    spec, catalog = spec_for("prod"), load_catalog()
    pool = spec.pool("train-h100-reserved")
    tas = kueue.resource_flavor(pool, catalog)["spec"]
    plain = kueue.resource_flavor(pool.model_copy(update={"whole_nodes": False}), catalog)["spec"]
    assert "topologyName" in tas and "topologyName" not in plain
    refused = _refusals(_flavor_spec_rules(), plain, tas)
    assert refused, "an in-place update would be refused"
    flavor = plan_for("prod").named("kueue-flavor-train-h100-reserved")
    assert {"spec.topologyName", "spec.nodeLabels", "spec.tolerations"} <= set(flavor.replace_on_changes) and flavor.delete_before_replace


def test_no_tenant_can_be_named_like_a_whole_nodes_queue() -> None:
    """The spec refuses tenant names ending in the whole-nodes queue's suffix (a tenant `a-whole-nodes` beside a tenant
    `a` would be two ClusterQueues of one name); the spec's constant is the queue builder's."""
    assert f"-{kueue.WHOLE_NODES_QUEUE}" == checks.WHOLE_NODES_SUFFIX
    assert all(kueue.whole_nodes_queue_name(t) == f"{t.name}{checks.WHOLE_NODES_SUFFIX}" for t in spec_for("prod").tenants)
