"""EFA that pods can use: a 32-EFA training pod is admitted by Kueue and fits the node the plan builds.

Reads the offline plan of `prod` (reserved p5.48xlarge training pools with EFA) and reproduces what the
consumers do with it: Kueue's admission of the pod's workload, the kube-scheduler's fit of the pod on
the pool's node, and the placement of the EFA device plugin's DaemonSet pod on that node.
"""

from __future__ import annotations

import base64
import email
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest
import yaml

from gpu_platform import efa
from gpu_platform.behaviour import ecr, kueue, scheduler
from gpu_platform.behaviour.apimachinery import parse_quantity
from gpu_platform.catalog import load_catalog
from gpu_platform.efa import interface_layout
from gpu_platform.engine import Plan
from gpu_platform.pools import LABEL_EFA
from tests.conftest import plan_for, spec_for
from tests.k8s import charts

RESERVED = "train-h100-reserved"
TENANT = "llm-training"
# A p5.48xlarge training pod as AWS's EKS EFA examples write it: all 8 GPUs, all 32 EFA devices.
TRAINING_POD: dict[str, Any] = {
    "requests": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5120Mi", "cpu": "96", "memory": "1000Gi"},
    "nodeSelector": {},
    "tolerations": [],
}


def kueue_admit(pod: Mapping[str, Any], cluster_queue: Mapping[str, Any], flavors: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, str]:
    """Flavor per requested resource, as Kueue's scheduler assigns it to a one-pod workload with the quota idle.

    gpu_platform.behaviour.kueue.assign_flavors (flavorassigner.go findFlavorForPodSets, checkFlavorForPodSets,
    fitsResourceQuota) after pod_requests' dropExcludedResources. Raises AssertionError with Kueue's
    message when the workload stays pending.
    """
    excluded = tuple((config.get("resources") or {}).get("excludeResourcePrefixes") or ())
    spec = {
        "nodeSelector": dict(pod["nodeSelector"]),
        "tolerations": list(pod["tolerations"]),
        "containers": [{"resources": {"requests": dict(pod["requests"])}}],
    }
    workload = kueue.Workload("Pod", "training", TENANT, (kueue.PodSet("main", 1, spec),), None)
    choices = kueue.assign_flavors(workload, cluster_queue, flavors, [cluster_queue], excluded)
    failed = [t for c in choices if c.flavor is None for t in c.tried]
    if failed:
        raise AssertionError("; ".join(failed))
    return {name: str(c.flavor) for c in choices for name in c.resources}


def _objects(plan: Plan, kind: str) -> dict[str, Any]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in plan.resources if r.inputs.get("kind") == kind}


def _kueue_config(plan: Plan) -> dict[str, Any]:
    values = plan.named("kueue-release").inputs["values"]
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert isinstance(config, dict)
    return config


def test_a_32_efa_training_pod_is_admitted_on_the_reserved_h100_flavor() -> None:
    plan = plan_for("prod")
    cq = _objects(plan, "ClusterQueue")[f"{TENANT}-whole-nodes"]  # the reserved EFA pool is a whole-node pool
    assigned = kueue_admit(TRAINING_POD, cq, _objects(plan, "ResourceFlavor"), _kueue_config(plan))
    assert assigned["nvidia.com/gpu"] == RESERVED
    assert efa.EFA_RESOURCE not in assigned and "hugepages-2Mi" not in assigned


def test_without_the_exclusion_kueue_keeps_the_pod_pending() -> None:
    """The previous configuration (no `resources`) left every EFA pod pending forever."""
    plan = plan_for("prod")
    config = {k: v for k, v in _kueue_config(plan).items() if k != "resources"}
    with pytest.raises(AssertionError, match=re.escape("resource vpc.amazonaws.com/efa unavailable in ClusterQueue")):
        kueue_admit(TRAINING_POD, _objects(plan, "ClusterQueue")[f"{TENANT}-whole-nodes"], _objects(plan, "ResourceFlavor"), config)


def test_stacks_without_efa_leave_kueue_accounting_alone() -> None:
    """Without EFA pools only scratch disk and hugepages are left out of Kueue's accounting, never EFA devices or GPUs."""
    assert _kueue_config(plan_for("dev"))["resources"] == {"excludeResourcePrefixes": ["ephemeral-storage", "hugepages-"]}


def _node_of(plan: Plan, pool: str) -> tuple[dict[str, str], list[dict[str, str]], dict[str, Decimal]]:
    """(labels, taints, allocatable extended resources) of a node the pool's node group launches."""
    ng = plan.named(f"pool-{pool}-ng").inputs
    lt = plan.named(f"pool-{pool}-lt").inputs
    # A Capacity Block names its instance type in the launch template only (EKS user guide).
    instance = load_catalog().instance(ng["instanceTypes"][0] if ng.get("instanceTypes") else lt["instanceType"])
    # The kubelet adds the well-known instance-type label; the node group adds its own labels.
    labels = {**ng["labels"], "node.kubernetes.io/instance-type": instance.name}
    effect = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
    taints = [{"key": t["key"], "value": t["value"], "effect": effect[t["effect"]]} for t in ng["taints"]]
    # The EFA device plugin advertises one device per EFA interface the launch template attaches;
    # the kubelet reports the hugepages user data reserved before it started.
    devices = sum(1 for i in lt["networkInterfaces"] if i["interfaceType"] in ("efa", "efa-only"))
    script = next(
        part.get_payload()
        for part in email.message_from_string(base64.b64decode(lt["userData"]).decode()).walk()
        if part.get_content_type() == "text/x-shellscript"
    )
    pages = int(re.search(r"sysctl -w vm\.nr_hugepages=(\d+)", script).group(1))  # type: ignore[union-attr]
    allocatable = {"nvidia.com/gpu": Decimal(instance.gpus), efa.EFA_RESOURCE: Decimal(devices), "hugepages-2Mi": Decimal(pages * 2 * 2**20)}
    return labels, taints, allocatable


def test_the_admitted_pod_fits_the_node_the_plan_builds() -> None:
    """kube-scheduler NodeResourcesFit: every extended request within what the node advertises."""
    labels, _taints, allocatable = _node_of(plan_for("prod"), RESERVED)
    for name in ("nvidia.com/gpu", efa.EFA_RESOURCE, "hugepages-2Mi"):
        assert parse_quantity(TRAINING_POD["requests"][name]) <= allocatable[name], name
    assert labels[LABEL_EFA] == "true"


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_efa_device_plugin_runs_on_every_efa_pool_and_nowhere_else(stack: str) -> None:
    """The chart's own DaemonSet (`helm template` of the release, aws/eks-charts aws-efa-k8s-device-plugin at the
    pinned version), placed by kube-scheduler's NodeAffinity and TaintToleration (gpu_platform.behaviour.scheduler)."""
    plan, spec = plan_for(stack), spec_for(stack)
    release = plan.named("efa-device-plugin-release").inputs
    lock = spec.lock
    assert (release["chart"], release["version"]) == ("aws-efa-k8s-device-plugin", lock.chart("aws-efa-k8s-device-plugin").version)
    assert release["repositoryOpts"]["repo"] == "https://aws.github.io/eks-charts"
    # The lockfile's image, from the stack's own region's EKS registry (behaviour.ecr, amazon-eks-ami get-ecr-uri.sh).
    pinned = lock.image("aws-efa-k8s-device-plugin")
    assert release["values"]["image"] == {"repository": f"{ecr.registry(str(spec.region))}/eks/aws-efa-k8s-device-plugin", "tag": pinned.tag}
    assert pinned.repository.endswith("/eks/aws-efa-k8s-device-plugin")
    (rel,) = [r for r in charts.releases(plan) if r.resource == "efa-device-plugin-release"]
    rendered = charts.template(rel, lock.kubernetes.version, ())
    (daemonset,) = [o for o in rendered.objects if o.get("kind") == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    for pool in spec.node_pools:
        labels, taints, _ = _node_of(plan, pool.name) if pool.efa else _plain_node(plan, pool.name)
        schedules = scheduler.affinity_matches(pod, labels) and scheduler.untolerated_taint(taints, pod.get("tolerations") or []) is None
        assert schedules == pool.efa, pool.name


def _plain_node(plan: Plan, pool: str) -> tuple[dict[str, str], list[dict[str, str]], dict[str, Decimal]]:
    ng = plan.named(f"pool-{pool}-ng").inputs
    effect = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
    labels = {**ng["labels"], "node.kubernetes.io/instance-type": ng["instanceTypes"][0]}
    return labels, [{"key": t["key"], "value": t["value"], "effect": effect[t["effect"]]} for t in ng["taints"]], {}


def test_stacks_without_efa_pools_install_no_device_plugin() -> None:
    assert not [r for r in plan_for("dev").resources if r.name.startswith("efa-device-plugin")]


@pytest.mark.parametrize(
    ("instance", "expected"),
    [
        # EC2 guide: ENA primary, EFA-only on card 0 device 1 and on device 0 of every further card.
        ("p5.48xlarge", [(0, 0, "interface"), (0, 1, "efa-only"), *((c, 0, "efa-only") for c in range(1, 32))]),
        ("p5en.48xlarge", [(0, 0, "interface"), (0, 1, "efa-only"), *((c, 0, "efa-only") for c in range(1, 16))]),
        # Types the catalog does not mark efa_only keep EFA with ENA on every card.
        ("p4d.24xlarge", [(0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa")]),
        ("g6.2xlarge", []),
    ],
)
def test_interface_layout_per_instance_type(instance: str, expected: list[tuple[int, int, str]]) -> None:
    layout = interface_layout(load_catalog().instance(instance))
    assert [(i.network_card_index, i.device_index, i.interface_type) for i in layout] == expected
    assert efa.efa_devices(load_catalog().instance(instance)) == load_catalog().instance(instance).efa_interfaces


def test_hugepages_user_data_is_a_mime_multipart_shell_script() -> None:
    """EKS merges launch-template user data only in MIME multi-part form (EKS user guide, launch templates)."""
    message = email.message_from_string(efa.hugepages_user_data())
    assert message.is_multipart()
    parts = [p for p in message.walk() if p.get_content_type() == "text/x-shellscript"]
    assert len(parts) == 1
    assert f"sysctl -w vm.nr_hugepages={efa.HUGEPAGES_PER_NODE}" in parts[0].get_payload()
    non_efa = plan_for("prod").named("pool-infer-l4-spot-lt").inputs
    assert "userData" not in non_efa and "networkInterfaces" not in non_efa
