"""Journey: what the platform cannot keep, it refuses up front, with the reason, at the stage that decides.

A job above the tenant's tier (every kind Kueue reads a priority from), a pod asking for whole GPUs
on a pool whose nodes advertise only shared or MIG resources, and a job for a GPU model the tenant
has no quota for.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.tenants import PRIORITY_VALUES
from gpu_platform.pools import GPU_RESOURCE, LABEL_GPU_MODEL, LABEL_POOL, gpu_of, resources_per_gpu, whole_nodes
from tests.conftest import spec_for
from tests.journeys.journey import assert_refused, container, walk

TOP = "production-training"


def _template(priority: str) -> dict[str, Any]:
    return {"spec": {"priorityClassName": priority, "restartPolicy": "Never", "containers": [container({GPU_RESOURCE: "1"})]}}


def above_tier(kind: str, ns: str) -> dict[str, Any]:
    """A `kind` whose pod template(s) ask for gpu-production-training."""
    t = _template(f"gpu-{TOP}")
    meta = {"name": "sneaky", "namespace": ns}
    specs: dict[str, tuple[str, dict[str, Any]]] = {
        "Job": ("batch/v1", {"template": t}),
        "Deployment": ("apps/v1", {"replicas": 1, "template": t}),
        "StatefulSet": ("apps/v1", {"replicas": 1, "serviceName": "s", "template": t}),
        "JobSet": ("jobset.x-k8s.io/v1alpha2", {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": t}}}]}),
        # A TrainJob has no pod template of its own (its runtime's); Kueue reads its priority from the label.
        "TrainJob": ("trainer.kubeflow.org/v1alpha1", {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}}),
        "RayJob": (
            "ray.io/v1",
            {"rayClusterSpec": {"headGroupSpec": {"template": t}, "workerGroupSpecs": [{"groupName": "g", "replicas": 1, "template": t}]}},
        ),
        "RayCluster": (
            "ray.io/v1",
            {"headGroupSpec": {"template": _template("gpu-experiments")}, "workerGroupSpecs": [{"groupName": "g", "template": t}]},
        ),
    }
    api, spec = specs[kind]
    if kind == "TrainJob":
        meta["labels"] = {"kueue.x-k8s.io/priority-class": TOP}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec}


@pytest.mark.parametrize("kind", ["Job", "Deployment", "StatefulSet", "JobSet", "TrainJob", "RayJob", "RayCluster"])
def test_a_job_above_the_tenants_tier_is_refused_at_submission(stack: str, kind: str) -> None:
    """Kueue takes the Workload's priority from the pod template (jobframework ExtractPriority): the template is checked."""
    low = [t for t in spec_for(stack).tenants if PRIORITY_VALUES[t.priority] < PRIORITY_VALUES[TOP]]
    if not low:
        pytest.skip(f"every tenant of {stack} is {TOP}")
    assert_refused(walk(stack, above_tier(kind, low[0].ns)), "admission-policy", "above this tenant's tier")


def test_the_tenants_own_tier_is_accepted_on_every_kind(stack: str) -> None:
    """The same kinds at the tenant's own tier pass the policy (the check is not a blanket refusal)."""
    tenant = spec_for(stack).tenants[0]
    for kind in ("Job", "JobSet", "TrainJob", "RayJob"):
        manifest = above_tier(kind, tenant.ns)
        text = str(manifest).replace(f"gpu-{TOP}", f"gpu-{tenant.priority}").replace(f"'{TOP}'", f"'{tenant.priority}'")
        e = walk(stack, eval(text))  # the same manifest, its priority lowered to the tenant's own
        step = e.step("admission-policy")
        assert step is not None and step.result == "ok", f"stage admission-policy: {kind}: {step}"


def test_a_kueue_workload_above_the_tier_is_refused_whatever_job_made_it(stack: str) -> None:
    """The policy also holds Kueue's Workload (spec.priorityClassRef), which covers integrations without a template check."""
    low = [t for t in spec_for(stack).tenants if PRIORITY_VALUES[t.priority] < PRIORITY_VALUES[TOP]]
    if not low:
        pytest.skip(f"every tenant of {stack} is {TOP}")
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": low[0].ns},
        "spec": {"podSets": [], "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": TOP}, "priority": 40000},
    }
    from gpu_platform.behaviour.admission import denials, request_for
    from tests.journeys.journey import view

    ns = view(stack).find("Namespace", low[0].ns)
    refused = denials(view(stack).objects, request_for(workload, ns))
    assert refused and "priorityClassRef is above" in refused[0].message, f"stage priority: {refused}"


def test_whole_gpus_on_a_pool_that_advertises_only_slices_are_refused(stack: str) -> None:
    """A pod asking nvidia.com/gpu while selecting a MIG or time-sliced pool: no node of it offers whole GPUs."""
    spec, catalog = spec_for(stack), load_catalog()
    sliced = [(t, spec.pool(q.pool)) for t in spec.tenants for q in t.quotas if GPU_RESOURCE not in resources_per_gpu(spec.pool(q.pool), catalog)]
    if not sliced:
        pytest.skip(f"{stack} has no MIG or shared pool")
    tenant, pool = sliced[0]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "whole", "namespace": tenant.ns},
        "spec": {"nodeSelector": {LABEL_POOL: pool.name}, "containers": [container({GPU_RESOURCE: "1"})]},
    }
    e = walk(stack, pod)
    blocked = next((s for s in e.steps if s.result == "blocked"), None)
    assert blocked is not None, "stage node-pool: the pod was not refused"
    assert blocked.stage in ("kueue-flavor", "node-pool"), f"stage {blocked.stage}: {blocked.detail}"
    # Kueue refuses it when no flavor of the tenant offers whole GPUs there; else the scheduler finds no node.
    reasons = (pool.name, "doesn't match node affinity", "unavailable in ClusterQueue")
    assert GPU_RESOURCE in blocked.detail and any(r in blocked.detail for r in reasons), f"stage {blocked.stage}: {blocked.detail}"
    assert e.verdict == "never"


def test_a_job_for_a_gpu_model_without_quota_is_refused(stack: str) -> None:
    """A tenant's ClusterQueue has no flavor for a GPU model it holds no quota on; Kueue never admits the job."""
    spec, catalog = spec_for(stack), load_catalog()
    models = {gpu_of(p, catalog).name for p in spec.node_pools}
    for tenant in spec.tenants:
        own = {gpu_of(spec.pool(q.pool), catalog).name for q in tenant.quotas}
        others = sorted(models - own)
        if others:
            break
    else:
        pytest.skip(f"every tenant of {stack} has quota on every GPU model")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "elsewhere", "namespace": tenant.ns},
        "spec": {
            "template": {
                "spec": {"nodeSelector": {LABEL_GPU_MODEL: others[0]}, "restartPolicy": "Never", "containers": [container({GPU_RESOURCE: "1"})]}
            }
        },
    }
    e = walk(stack, job)
    if any(GPU_RESOURCE in resources_per_gpu(spec.pool(q.pool), catalog) for q in tenant.quotas if not whole_nodes(spec.pool(q.pool))):
        assert_refused(e, "kueue-flavor", f"has no quota for {LABEL_GPU_MODEL}={others[0]}")
    else:  # all its whole-GPU quota is on whole-node pools: the `default` queue has no GPU at all, and says where it is
        assert_refused(e, "kueue-flavor", "unavailable in ClusterQueue", "queue-name: whole-nodes")
