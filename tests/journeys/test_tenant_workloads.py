"""Journey: a tenant's typical workloads run, on every stack that offers their kind of pool.

Each test walks one workload through `explain`'s stages in order (namespace, admission policies,
Kueue's queue, priority and flavor, pod admission, node pool, device resources, autoscaler, Volcano,
capacity) over the stack's rendered objects, and fails at the first stage that would stop it.
"""

from __future__ import annotations

from tests.conftest import spec_for
from tests.journeys.journey import assert_runs, efa_training, mig_inference, shared_dev_pod, spot_batch, volcano_gang, walk


def test_a_2_node_16_gpu_efa_training_job_trains(stack: str) -> None:
    e = walk(stack, efa_training(spec_for(stack)))
    assert_runs(e)
    assert e.step("device-resources") is not None, "stage device-resources: never reached"


def test_a_mig_inference_deployment_serves(stack: str) -> None:
    assert_runs(walk(stack, mig_inference(spec_for(stack))))


def test_a_time_sliced_dev_pod_starts(stack: str) -> None:
    assert_runs(walk(stack, shared_dev_pod(spec_for(stack))))


def test_a_volcano_gang_job_lands_in_its_tenants_queue(stack: str) -> None:
    manifest = volcano_gang(spec_for(stack))
    e = walk(stack, manifest)
    assert_runs(e)
    step = e.step("volcano")
    assert step is not None and f"queue {manifest['metadata']['namespace']}" in step.detail, f"stage volcano: {step}"


def test_a_batch_job_on_spot_falls_back_to_on_demand(stack: str) -> None:
    e = walk(stack, spot_batch(spec_for(stack)))
    assert_runs(e)
    fallback = e.step("kueue-fallback")
    spot_flavor = e.flavor
    assert fallback is not None, f"stage kueue-fallback: flavor {spot_flavor} is not Spot"
    assert fallback.result == "ok", f"stage kueue-fallback: {fallback.detail}"
