"""The rolling driver upgrade: per-pool waves, its Python dependency, and its Kubernetes steps run for real.

The kubernetes.core modules (k8s_drain cordon/drain/uncordon, k8s_info) run against a fake API
server (tests/ansible/fake_kube_api.py) through the `kubernetes` library from the lock, as they run
against a cluster: `--check` never reached them, so a missing library only failed at the first node.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.ansible.fake_kube_api import Cluster, FakeKubeApi, node, pod
from tests.ansible.helpers import ANSIBLE_DIR, BIN, DEBIAN_12, FIXTURES, HERE, LAB_OVERLAY, ROLES, ansible_env, failure_messages, run_playbook

sys.path.insert(0, str(ROLES / "driver_upgrade_plan" / "filter_plugins"))
from driver_upgrade_waves import driver_upgrade_order, driver_upgrade_serial, driver_upgrade_waves

NODE = "gpu-h100-01"


def dry_run(inventory: Path, *extra: str) -> list[str]:
    """The plan driver_upgrade.yml prints for `inventory` in a dry run."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(ANSIBLE_DIR / "driver_upgrade.yml"), "-e", "driver_upgrade_dry_run=true", *extra]
    result = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), timeout=180, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert data["plays"][1]["tasks"] == [], "a dry run must not run the rollout on any node"
    return next(t["hosts"]["localhost"]["msg"] for t in data["plays"][0]["tasks"] if t["task"]["name"].endswith("Show the upgrade waves"))


def test_prod_rolls_one_node_of_a_pool_at_a_time():
    """The former 25 % wave drained 5 of the 8 H100 training nodes at once; pools of 8 or fewer now lose one node at a time."""
    plan = dry_run(ANSIBLE_DIR / "inventories" / "prod")
    assert plan[0].endswith("22 node(s) in 22 wave(s), one pool at a time (dry run, nothing changed)")
    h100 = [line for line in plan[1:] if "pool_h100_training" in line]
    assert len(h100) == 8
    assert all(line.endswith(f"(pool_h100_training, at most 1 down): gpu-h100-0{i}") for i, line in zip(range(1, 9), h100, strict=True))
    # Pools go one after another, never interleaved.
    pools = [line.split("(")[1].split(",")[0] for line in plan[1:]]
    assert pools == sorted(pools)


def test_the_inventory_sets_a_pools_maximum_unavailable(tmp_path: Path):
    inventory = tmp_path / "prod"
    shutil.copytree(ANSIBLE_DIR / "inventories" / "prod", inventory)
    with (inventory / "group_vars" / "pool_l40s_inference.yml").open("a") as f:
        f.write("gpu_pool_max_unavailable: 2\n")
    plan = dry_run(inventory)
    l40s = [line for line in plan[1:] if "pool_l40s_inference" in line]
    assert l40s == [
        "wave 13 (pool_l40s_inference, at most 2 down): gpu-l40s-01, gpu-l40s-02",
        "wave 14 (pool_l40s_inference, at most 2 down): gpu-l40s-03, gpu-l40s-04",
        "wave 15 (pool_l40s_inference, at most 2 down): gpu-l40s-05, gpu-l40s-06",
    ]
    assert all("at most 1 down" in line for line in plan[1:] if "pool_l40s_inference" not in line)


def inventory_for(pools: dict[str, int], **pool_vars: dict[str, Any]) -> tuple[list[str], dict[str, list[str]], dict[str, Any]]:
    hosts, groups, hostvars = [], {}, {}
    for pool, size in pools.items():
        groups[pool] = [f"{pool}-{i:02d}" for i in range(1, size + 1)]
        hosts += groups[pool]
        hostvars.update({name: dict(pool_vars.get(pool, {})) for name in groups[pool]})
    return hosts, {"gpu_nodes": hosts, **groups}, hostvars


def test_a_larger_pool_defaults_to_one_node_in_eight():
    hosts, groups, hostvars = inventory_for({"pool_big": 17, "pool_small": 3})
    waves = driver_upgrade_waves(hosts, groups, hostvars)
    assert driver_upgrade_serial(waves) == [2] * 8 + [1] + [1, 1, 1]
    assert driver_upgrade_order(waves) == hosts
    assert all(len({h.rsplit("-", 1)[0] for h in w["hosts"]}) == 1 for w in waves), "a wave never mixes pools"


@pytest.mark.parametrize("bad", [0, "two", -1, True])
def test_a_maximum_that_is_not_a_node_count_is_refused_in_one_line(bad: Any):
    hosts, groups, hostvars = inventory_for({"pool_h100_training": 8}, pool_h100_training={"gpu_pool_max_unavailable": bad})
    with pytest.raises(AnsibleFilterError) as err:
        driver_upgrade_waves(hosts, groups, hostvars)
    assert str(err.value) == f"pool_h100_training: gpu_pool_max_unavailable: {bad!r} is not a node count; allowed: an integer from 1 to 8"


def test_the_rollout_play_runs_the_planned_waves(tmp_path: Path):
    """driver_upgrade.yml's own plays, the rollout's tasks replaced by one that records each batch:
    Ansible templates `hosts` and `serial` at play start, from the inventory (no node is contacted)."""
    plan, rollout = yaml.safe_load((ANSIBLE_DIR / "driver_upgrade.yml").read_text())
    probe = {k: rollout[k] for k in ("name", "hosts", "serial", "max_fail_percentage")}
    probe |= {
        "gather_facts": False,
        "tasks": [{"name": "Record the batch", "ansible.builtin.debug": {"msg": "{{ ansible_play_batch }}"}, "run_once": True}],
    }
    playbook = tmp_path / "driver_upgrade_batches.yml"
    playbook.write_text(yaml.safe_dump([plan, probe], sort_keys=False))
    cmd = [
        str(BIN / "ansible-playbook"),
        "-i",
        str(ANSIBLE_DIR / "inventories" / "prod"),
        str(playbook),
        "-e",
        f"ansible_python_interpreter={sys.executable}",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), timeout=180, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    # The json callback starts a play entry for each batch.
    batches = [next(iter(t["hosts"].values()))["msg"] for play in json.loads(result.stdout)["plays"][1:] for t in play["tasks"]]
    plan_lines = dry_run(ANSIBLE_DIR / "inventories" / "prod")[1:]
    assert [", ".join(b) for b in batches] == [line.split(": ", 1)[1] for line in plan_lines]
    assert batches[4:12] == [[f"gpu-h100-0{i}"] for i in range(1, 9)]


def plan_check(python: str) -> tuple[int, str]:
    extra = {"role_name": "driver_upgrade_plan", "fake": DEBIAN_12, "driver_upgrade_plan_python": python}
    result = run_playbook(HERE / "playbooks" / "role_under_test.yml", extra)
    return result.returncode, " | ".join(failure_messages(result))


def test_preflight_names_the_missing_kubernetes_library_in_one_line(tmp_path: Path):
    bare = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    rc, msg = plan_check(str(bare / "bin" / "python"))
    assert rc != 0
    assert msg.startswith(f"driver_upgrade_plan: {bare}/bin/python cannot import the Python library kubernetes, which kubernetes.core's k8s_drain")
    assert "make setup" in msg


def test_preflight_passes_with_the_locked_venv():
    rc, msg = plan_check(sys.executable)
    assert rc == 0, msg


def maintenance(tmp_path: Path, cluster: Cluster, **extra: Any) -> tuple[int, str, FakeKubeApi]:
    """Run the node's Kubernetes steps of a driver upgrade against the fake API server."""
    with FakeKubeApi(cluster) as api:
        variables = {
            "fake": DEBIAN_12,
            "gpu_platform_versions_overlay": LAB_OVERLAY,
            "k8s_node_maintenance_node_name": NODE,
            "k8s_node_maintenance_kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig")),
            "k8s_node_maintenance_expected_gpus": 8,
            "k8s_node_maintenance_drain_timeout": 30,
            "gpu_node_validate_gpu_model": "H100-80GB",
            "gpu_node_validate_gpu_count": 8,
            "gpu_node_validate_xml_path": str(FIXTURES / "nvidia-smi-h100-sxm-8x-mig-disabled.xml"),
            "gpu_node_validate_mig_config_file": str(tmp_path / "no-mig-config.yaml"),
            "gpu_node_validate_check_container_runtime": False,
            "gpu_node_validate_check_fabricmanager": False,
            "gpu_node_validate_report_path": str(tmp_path / "node-report.json"),
            **extra,
        }
        result = run_playbook(HERE / "playbooks" / "node_maintenance.yml", variables)
        return result.returncode, " | ".join(failure_messages(result)) or result.stdout[-2000:], api


def h100_node_with_work() -> Cluster:
    return Cluster(
        nodes={NODE: node(NODE, 8), "gpu-h100-02": node("gpu-h100-02", 8)},
        pods=[
            pod("training", "llm-7b-worker-0", NODE, owner_kind="Job"),
            pod("serving", "chat-5d9f", NODE, owner_kind="ReplicaSet"),
            pod("gpu-operator", "nvidia-device-plugin-x2k", NODE, owner_kind="DaemonSet"),
            pod("training", "llm-7b-worker-1", "gpu-h100-02", owner_kind="Job"),
        ],
    )


def test_cordon_drain_validate_and_uncordon_run_against_the_api(tmp_path: Path):
    cluster = h100_node_with_work()
    rc, msg, api = maintenance(tmp_path, cluster)
    assert rc == 0, msg
    calls = cluster.calls()
    node_path = f"/api/v1/nodes/{NODE}"
    patches = [r for r in cluster.requests if r["method"] == "PATCH"]
    # cordon, then uncordon last: the node takes work again only after validation and the advertise wait
    assert [p["body"] for p in patches] == [{"spec": {"unschedulable": True}}, {"spec": {"unschedulable": False}}]
    assert all(p["path"] == node_path and p["content_type"] == "application/strategic-merge-patch+json" for p in patches)
    evictions = [c for c in calls if c.endswith("/eviction")]
    assert sorted(evictions) == [
        "POST /api/v1/namespaces/serving/pods/chat-5d9f/eviction",
        "POST /api/v1/namespaces/training/pods/llm-7b-worker-0/eviction",
    ], "Job and ReplicaSet pods are evicted (the API honours PodDisruptionBudgets); the device plugin DaemonSet stays"
    assert calls.index(f"PATCH {node_path}") < calls.index(evictions[0])
    assert calls[-1] == f"PATCH {node_path}"
    assert f"GET {node_path}" in calls[calls.index(evictions[-1]) : -1], "the advertise wait read the Node before the uncordon"
    state = api.snapshot()
    assert "unschedulable" not in state["nodes"][NODE]["spec"]
    assert sorted(p["metadata"]["name"] for p in state["pods"]) == ["llm-7b-worker-1", "nvidia-device-plugin-x2k"]
    assert json.loads((tmp_path / "node-report.json").read_text())["passed"] is True


def test_a_disruption_budget_that_forbids_the_eviction_stops_the_run_with_the_node_cordoned(tmp_path: Path):
    cluster = Cluster(nodes={NODE: node(NODE, 8)}, pods=[pod("serving", "chat-5d9f", NODE, pdb_blocks=True)])
    rc, msg, api = maintenance(tmp_path, cluster)
    assert rc != 0
    assert "Failed to delete pod serving/chat-5d9f due to: Cannot evict pod as it would violate the pod's disruption budget." in msg
    assert api.snapshot()["nodes"][NODE]["spec"] == {"unschedulable": True}
    assert not any(r["method"] == "PATCH" and r["body"] == {"spec": {"unschedulable": False}} for r in cluster.requests)


def test_a_bare_pod_refuses_the_drain_and_the_node_stays_cordoned(tmp_path: Path):
    """k8s_drain reverts its own cordon only (`_revert_node_patch` when it changed the node); the role
    cordoned in the task before, so the node stays cordoned with the bare pod still running on it."""
    cluster = Cluster(nodes={NODE: node(NODE, 8)}, pods=[pod("default", "debug-shell", NODE, owner_kind=None)])
    rc, msg, api = maintenance(tmp_path, cluster)
    assert rc != 0
    assert "cannot delete Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet" in msg
    assert api.snapshot()["nodes"][NODE]["spec"] == {"unschedulable": True}
    assert [p["metadata"]["name"] for p in api.snapshot()["pods"]] == ["debug-shell"]


def test_pods_still_running_at_the_drain_timeout_fail_the_node_before_the_driver_changes(tmp_path: Path):
    """k8s_drain only warns at wait_timeout; the role turns that into a failure, so no driver is replaced under a job."""
    cluster = Cluster(nodes={NODE: node(NODE, 8)}, pods=[pod("training", "llm-7b-worker-0", NODE, owner_kind="Job", never_terminates=True)])
    rc, msg, api = maintenance(tmp_path, cluster, k8s_node_maintenance_drain_timeout=3)
    assert rc != 0
    assert "timeout reached while pods were still running" in msg
    assert api.snapshot()["nodes"][NODE]["spec"] == {"unschedulable": True}
    assert not (tmp_path / "node-report.json").exists(), "nothing after the drain ran"


def test_a_node_not_in_the_cluster_fails_by_name(tmp_path: Path):
    rc, msg, _ = maintenance(tmp_path, Cluster(nodes={}))
    assert rc != 0
    assert f"Node {NODE} not found." in msg


def test_the_fake_answers_like_the_api_for_an_unknown_object():
    cluster = Cluster()
    with FakeKubeApi(cluster) as api, pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{api.url}/api/v1/nodes/nope", timeout=10)
    assert refused.value.code == 404
    assert json.loads(refused.value.read()) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'nodes "nope" not found',
        "reason": "NotFound",
        "code": 404,
    }


def test_the_plan_role_documents_the_pool_variable():
    spec = yaml.safe_load((ROLES / "driver_upgrade_plan" / "meta" / "argument_specs.yml").read_text())
    assert "gpu_pool_max_unavailable" in " ".join(spec["argument_specs"]["main"]["options"]["driver_upgrade_plan_waves"]["description"])
