"""Journey helpers: a stack's view, workloads a tenant of that stack would submit, and stage-by-stage assertions.

Workloads are derived from each stack's own tenants and pools (the tenant, the pool it has quota on,
what that pool's nodes advertise), so a journey means the same thing on every stack that offers it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.efa import node_resources as efa_node_resources
from gpu_platform.explain.stages import Explanation, explain
from gpu_platform.explain.view import StackView
from gpu_platform.k8s.kueue import WHOLE_NODES_QUEUE
from gpu_platform.pools import LABEL_GPU_MODEL, gpu_of, gpus_per_node, resources_per_gpu, whole_nodes
from gpu_platform.spec.models import NodePool, PlatformSpec, Tenant
from tests.conftest import spec_for


@cache
def view(stack: str) -> StackView:
    """The stack as explain sees it (built once per stack)."""
    return StackView(spec_for(stack), load_catalog())


def walk(stack: str, manifest: dict[str, Any]) -> Explanation:
    """explain's walk of one manifest over one stack."""
    return explain(view(stack), manifest)


def assert_runs(e: Explanation) -> None:
    """Every stage passes, in order; the first blocked stage fails the journey with its name."""
    for step in e.steps:
        assert step.result != "blocked", f"stage {step.stage}: {step.detail}"
    assert e.verdict == "runs", f"verdict {e.verdict}: " + "; ".join(f"{s.stage}: {s.detail}" for s in e.steps if s.capacity)


def assert_refused(e: Explanation, stage: str, *reasons: str) -> None:
    """The walk stops at `stage` (not earlier, not later) and its detail gives every reason."""
    blocked = [s for s in e.steps if s.result == "blocked"]
    reached = " -> ".join(f"{s.stage}:{s.result}" for s in e.steps)
    assert blocked, f"stage {stage}: expected a refusal, but every stage passed ({reached})"
    assert blocked[0].stage == stage, f"stage {stage}: refused at {blocked[0].stage} instead ({blocked[0].detail}); walk: {reached}"
    for reason in reasons:
        assert reason in blocked[0].detail, f"stage {stage}: {reason!r} not in {blocked[0].detail!r}"
    assert e.verdict == "never"


def find(spec: PlatformSpec, want: Any) -> tuple[Tenant, NodePool]:
    """The first (tenant, pool) with quota on a pool satisfying `want(pool)`, or skip: the stack offers no such pool."""
    for t in spec.tenants:
        for q in t.quotas:
            pool = spec.pool(q.pool)
            if want(pool, q.gpus):
                return t, pool
    pytest.skip(f"stack {spec.stack} has no tenant with quota on such a pool")


def queue_for(pool: NodePool) -> dict[str, str]:
    """The queue label a job names to reach the pool: a whole-node pool's quota is the `whole-nodes` queue's."""
    return {"kueue.x-k8s.io/queue-name": WHOLE_NODES_QUEUE} if whole_nodes(pool) else {}


def container(limits: dict[str, Any], requests: dict[str, Any] | None = None) -> dict[str, Any]:
    """One container with these resources."""
    return {"name": "main", "image": "registry.example.com/app:1.0", "resources": {"limits": limits, "requests": requests or {}}}


def pod_spec(pool: NodePool, limits: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A pod spec selecting the pool's GPU model, as tenants are told to (docs/workload-flow.md)."""
    catalog = load_catalog()
    return {"nodeSelector": {LABEL_GPU_MODEL: gpu_of(pool, catalog).name}, "containers": [container(limits, {"cpu": "2", "memory": "8Gi"})], **extra}


def efa_training(spec: PlatformSpec) -> dict[str, Any]:
    """A 2-node, 16-GPU TrainJob (torch-distributed) on an EFA pool: all GPUs, EFA devices and hugepages of each node."""
    catalog = load_catalog()
    tenant, pool = find(spec, lambda p, gpus: p.efa and gpus_per_node(p, catalog) == 8 and gpus >= 16)
    limits = {"nvidia.com/gpu": "8", **efa_node_resources(pool, catalog)}
    limits["hugepages-2Mi"] = "5120Mi"
    node = pod_spec(pool, limits)
    patch = {"manager": "example.com/ml-team", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": node["nodeSelector"]}}}}}
    ]}}}}  # fmt: skip
    resources = node["containers"][0]["resources"]
    resources["requests"]["ephemeral-storage"] = "100Gi"
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "pretrain", "namespace": tenant.ns, "labels": {"kueue.x-k8s.io/priority-class": tenant.priority, **queue_for(pool)}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "image": "registry.example.com/llm/train:2026.11", "resourcesPerNode": resources},
            "runtimePatches": [patch],
        },
    }


def mig_inference(spec: PlatformSpec) -> dict[str, Any]:
    """A 3-replica Deployment, each replica one MIG slice of the tenant's MIG pool."""
    tenant, pool = find(spec, lambda p, gpus: p.sharing.mode == "mig")
    profile = sorted(resources_per_gpu(pool, load_catalog()))[0]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "server", "namespace": tenant.ns},
        "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "server"}}, "spec": pod_spec(pool, {profile: "1"})}},
    }


def shared_dev_pod(spec: PlatformSpec) -> dict[str, Any]:
    """A notebook pod on one time-sliced (or MPS) share of a GPU."""
    tenant, pool = find(spec, lambda p, gpus: p.sharing.mode in ("time-slicing", "mps"))
    body = pod_spec(pool, {"nvidia.com/gpu.shared": "1"})
    body["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "10Gi"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "notebook", "namespace": tenant.ns}, "spec": body}


def volcano_gang(spec: PlatformSpec) -> dict[str, Any]:
    """A 2-pod gang Job placed by Volcano after Kueue admits it, on whole GPUs."""
    if not spec.queueing.volcano.enabled:
        pytest.skip(f"stack {spec.stack} does not run Volcano")
    tenant, pool = find(spec, lambda p, gpus: p.sharing.mode == "none" and gpus >= 2)
    body = pod_spec(pool, {"nvidia.com/gpu": "1"}, schedulerName="volcano", restartPolicy="Never")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "gang",
            "namespace": tenant.ns,
            "labels": queue_for(pool),
            "annotations": {"scheduling.volcano.sh/group-min-member": "2"},
        },
        "spec": {"parallelism": 2, "completions": 2, "template": {"spec": body}},
    }


def spot_batch(spec: PlatformSpec) -> dict[str, Any]:
    """A batch Job of 2 pods whose tenant has quota on a Spot pool (Kueue tries Spot first)."""
    tenant, pool = find(spec, lambda p, gpus: p.capacity == "spot")
    resource = sorted(resources_per_gpu(pool, load_catalog()))[0]
    body = pod_spec(pool, {resource: "1"}, restartPolicy="OnFailure")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "backfill", "namespace": tenant.ns},
        "spec": {"parallelism": 2, "template": {"spec": body}},
    }
