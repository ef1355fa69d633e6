"""Kueue admits, Volcano only gang-schedules: the routing rule of gpu_platform.k8s.routing, on concrete objects.

The admission decision is gpu_platform.behaviour.admission `denials` (k8s.io/apiserver
plugin/policy: matching, CEL validations, the binding's Deny); the Volcano side is
gpu_platform.behaviour.volcano `real_capability` (the proportion plugin's OnSessionOpen at v1.15.1).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpu_platform.behaviour.admission import denials, request_for
from gpu_platform.behaviour.volcano import real_capability
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.routing import DEFAULT_QUEUE, POLICY, both_schedulers, gpu_resources
from tests.conftest import plan_for, spec_for
from tests.k8s.helpers import objects

VOLCANO_JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}
BATCH_JOB = {"apiVersion": "batch/v1", "kind": "Job"}


def _namespace_labels(stack: str, name: str) -> dict[str, str]:
    found = [o for o in objects(stack, "Namespace") if o["metadata"]["name"] == name]
    return dict(found[0]["metadata"].get("labels") or {}) if found else {}


def admitted(stack: str, request: dict[str, Any], namespace: str) -> tuple[bool, str]:
    """(allowed, message) of the stack's ValidatingAdmissionPolicies for creating this kind in `namespace`."""
    labels = _namespace_labels(stack, namespace) | {"kubernetes.io/metadata.name": namespace}
    ns = {"metadata": {"name": namespace, "labels": labels}}
    obj = {"apiVersion": request["apiVersion"], "kind": request["kind"], "metadata": {"name": "job", "namespace": namespace}, "spec": {}}
    refused = denials(objects(stack), request_for(obj, ns))
    return (False, refused[0].message) if refused else (True, "")


def test_volcano_jobs_are_refused_in_tenant_namespaces_when_kueue_admits() -> None:
    spec = spec_for("prod")
    assert both_schedulers(spec)
    tenant_ns = spec.tenants[0].ns
    allowed, message = admitted("prod", VOLCANO_JOB, tenant_ns)
    assert not allowed and "Kueue" in message and "schedulerName: volcano" in message
    # The way in stays open: a Kueue-managed batch/v1 Job, and Volcano's own namespace is not a tenant's.
    assert admitted("prod", BATCH_JOB, tenant_ns) == (True, "")
    assert admitted("prod", VOLCANO_JOB, "volcano-system") == (True, "")


def test_without_volcano_no_routing_policy_is_installed() -> None:
    spec = spec_for("dev")
    assert not both_schedulers(spec)
    assert not [o for o in objects("dev", "ValidatingAdmissionPolicy") if o["metadata"]["name"] == POLICY]


def test_volcano_default_queue_can_hold_no_gpu() -> None:
    spec, catalog = spec_for("prod"), load_catalog()
    queues = [o for o in objects("prod", "Queue") if o["metadata"]["name"] == DEFAULT_QUEUE]
    assert len(queues) == 1
    total = {"cpu": Decimal(1000), "memory": Decimal(10**12), **{r: Decimal(64) for r in gpu_resources(spec, catalog)}}
    real = real_capability(queues[0], total)
    assert {r: real[r] for r in gpu_resources(spec, catalog)} == dict.fromkeys(gpu_resources(spec, catalog), 0.0)
    assert real["cpu"] == total["cpu"]  # CPU-only work may still use the default queue
    # The queue the scheduler creates on its own (weight 1, no capability) would hand out every GPU.
    assert real_capability({"spec": {"weight": 1, "reclaimable": True}}, total)["nvidia.com/gpu"] == 64


def test_default_queue_is_patched_after_the_volcano_release() -> None:
    queue = plan_for("prod").named("platform-volcano-default-queue")
    assert "volcano-release" in queue.depends_on
    assert queue.inputs["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"
