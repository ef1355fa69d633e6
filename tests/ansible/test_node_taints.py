"""On-prem node taints: the real kubernetes.core.k8s_taint merges the platform's taints into each node, keeping everyone else's.

The role k8s_node_taints (ansible/node_taints.yml) runs against the fake API server
(tests/ansible/fake_kube_api.py), over nodes as `pulumi up` leaves them: the on-prem stack's node
patches applied by server-side apply (gpu_platform.behaviour.ssa) onto nodes that already carry
taints of their own (an administrator's, node-problem-detector's). kubernetes.core 6.2.0
plugins/modules/k8s_taint.py `K8sTaintAnsible.execute_module` is reproduced in
gpu_platform.behaviour.kubernetes_core, which the results are compared with.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform import pools
from gpu_platform.behaviour import ssa
from gpu_platform.behaviour.kubernetes_core import k8s_taint_present
from gpu_platform.versions import load_lockfile
from tests.ansible.fake_kube_api import Cluster, FakeKubeApi, node
from tests.ansible.helpers import ANSIBLE_DIR, ROLES, failure_messages, run_playbook
from tests.conftest import plan_for

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# Taints the platform did not put there and must never remove.
ADMIN_TAINT = {"key": "dedicated", "value": "vision", "effect": "NoSchedule"}
NPD_TAINT = {"key": "example.com/nic-degraded", "value": "true", "effect": "NoExecute", "timeAdded": "2026-11-20T08:00:00Z"}
CPU_NODE = "cpu-01"


def _patches() -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in plan_for("onprem").of_type("kubernetes:core/v1:NodePatch")}


def cluster_after_pulumi_up() -> Cluster:
    """The on-prem nodes once `pulumi up` applied the stack's node patches (server-side apply, forced)."""
    defs = ssa.openapi_definitions(load_lockfile().kubernetes.version)
    schema = ssa.definition(defs, "Node")
    nodes: dict[str, dict[str, Any]] = {}
    for name, patch in _patches().items():
        live = node(name, 8)
        if name == "dgx-h100-01":
            live["spec"]["taints"] = [copy.deepcopy(ADMIN_TAINT), copy.deepcopy(NPD_TAINT)]
        if name == "l40s-01":
            live["spec"]["taints"] = [copy.deepcopy(GPU_TAINT)]  # tainted by hand before the platform came
        nodes[name] = ssa.apply(live, {"metadata": patch["metadata"]}, schema, defs)
    cpu = node(CPU_NODE, 0)
    cpu["spec"]["taints"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    nodes[CPU_NODE] = cpu
    return Cluster(nodes=nodes)


def run_role(tmp_path: Path, cluster: Cluster) -> tuple[Any, FakeKubeApi]:
    with FakeKubeApi(cluster) as api:
        result = run_playbook(ANSIBLE_DIR / "node_taints.yml", {"k8s_node_taints_kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig"))})
        return result, api


def _changed(result: Any) -> list[str]:
    out = []
    for play in json.loads(result.stdout)["plays"]:
        for task in play["tasks"]:
            for host in task["hosts"].values():
                out += [r["item"]["metadata"]["name"] for r in host.get("results", []) if r.get("changed")]
    return out


def test_platform_taints_are_merged_foreign_taints_kept_and_a_rerun_changes_nothing(tmp_path: Path) -> None:
    cluster = cluster_after_pulumi_up()
    before = copy.deepcopy(cluster.nodes)
    result, api = run_role(tmp_path, cluster)
    assert result.returncode == 0, " | ".join(failure_messages(result)) or result.stdout[-3000:]
    after = api.snapshot()["nodes"]
    patches = _patches()
    for name, patch in patches.items():
        declared = json.loads(patch["metadata"]["annotations"][pools.ANNOTATION_TAINTS])
        taints = after[name]["spec"]["taints"]
        assert GPU_TAINT in taints, f"{name}: GPU pods only: the nvidia.com/gpu taint must be on the node"
        assert taints == k8s_taint_present(before[name]["spec"].get("taints") or [], declared)[1], name
    # What others put there is still there (the NoExecute taint loses only its timeAdded, as k8s_taint sends it).
    assert {"key": "dedicated", "value": "vision", "effect": "NoSchedule"} in after["dgx-h100-01"]["spec"]["taints"]
    assert {k: v for k, v in NPD_TAINT.items() if k != "timeAdded"} in after["dgx-h100-01"]["spec"]["taints"]
    # The labels others set survive the node patch too (labels are a map: owned key by key).
    assert after["dgx-h100-01"]["metadata"]["labels"]["kubernetes.io/hostname"] == "dgx-h100-01"
    assert after[CPU_NODE] == before[CPU_NODE], "a node outside the platform's pools is never touched"
    # A node that already had the taint was read, not patched.
    patched = {r["path"].rsplit("/", 1)[-1] for r in cluster.requests if r["method"] == "PATCH"}
    assert patched == set(patches) - {"l40s-01"}
    assert all(r["content_type"] == "application/strategic-merge-patch+json" for r in cluster.requests if r["method"] == "PATCH")
    assert sorted(_changed(result)) == sorted(patched)

    # Re-applying changes nothing: k8s_taint finds every declared taint and only reads.
    settled = copy.deepcopy(after)
    cluster.requests.clear()
    again, api = run_role(tmp_path, cluster)
    assert again.returncode == 0, again.stdout[-3000:]
    assert _changed(again) == []
    assert [r for r in cluster.requests if r["method"] != "GET"] == [], "an idempotent run only reads"
    assert api.snapshot()["nodes"] == settled


def test_a_labelled_node_without_declared_taints_stops_the_run_in_one_line(tmp_path: Path) -> None:
    cluster = cluster_after_pulumi_up()
    del cluster.nodes["dgx-a100-02"]["metadata"]["annotations"][pools.ANNOTATION_TAINTS]
    result, _ = run_role(tmp_path, cluster)
    assert result.returncode != 0
    (message,) = failure_messages(result)
    assert message.startswith("k8s_node_taints: nodes dgx-a100-02 carry gpu-platform.io/pool but no gpu-platform.io/taints annotation")
    assert "pulumi up" in message and "\n" not in message.strip()
    assert not [r for r in cluster.requests if r["method"] == "PATCH"], "nothing is tainted before every node is declared"


def test_no_platform_node_at_all_says_so(tmp_path: Path) -> None:
    cluster = Cluster(nodes={CPU_NODE: node(CPU_NODE, 0)})
    result, _ = run_role(tmp_path, cluster)
    (message,) = failure_messages(result)
    assert message.startswith("k8s_node_taints: no node carries the label gpu-platform.io/pool; run `pulumi up`")


ROLE_VARS = [("_k8s_node_taints_pool_label", pools.LABEL_POOL), ("_k8s_node_taints_annotation", pools.ANNOTATION_TAINTS)]


@pytest.mark.parametrize(("var", "value"), ROLE_VARS)
def test_the_role_reads_what_the_program_writes(var: str, value: str) -> None:
    """One source of truth: the role's label and annotation names are the program's."""
    assert yaml.safe_load((ROLES / "k8s_node_taints" / "vars" / "main.yml").read_text())[var] == value
