"""Kueue admits, Volcano only gang-schedules: the routing rule of gpu_platform.k8s.routing, on concrete objects.

The admission decision reproduces k8s.io/apiserver at the 1.33 tag: a ValidatingAdmissionPolicy
applies when its matchConstraints.resourceRules match the request (pkg/admission/plugin/policy/
matching/matching.go) and the binding's matchResources.namespaceSelector matches the namespace's
labels (pkg/admission/plugin/webhook/predicates/namespace/matcher.go); a validation that evaluates
to false (CEL evaluated as the API server does, tests.k8s.helpers.vap_validation_denial) with
validationActions Deny refuses the request. The Volcano side reproduces the proportion
plugin (pkg/scheduler/plugins/proportion/proportion.go OnSessionOpen at v1.15.1): a queue's listed
capability caps each scalar resource (cpu or memory of 0 mean unlimited).
"""

from __future__ import annotations

import math
from typing import Any

from gpu_platform.behaviour.apimachinery import selector_matches
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.routing import DEFAULT_QUEUE, POLICY, both_schedulers, gpu_resources
from tests.conftest import plan_for, spec_for
from tests.k8s.helpers import objects, vap_validation_denial

VOLCANO_JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "resource": "jobs"}
BATCH_JOB = {"apiVersion": "batch/v1", "kind": "Job", "resource": "jobs"}


def _namespace_labels(stack: str, name: str) -> dict[str, str]:
    found = [o for o in objects(stack, "Namespace") if o["metadata"]["name"] == name]
    return dict(found[0]["metadata"].get("labels") or {}) if found else {}


def admitted(stack: str, request: dict[str, Any], namespace: str, operation: str = "CREATE") -> tuple[bool, str]:
    """(allowed, message) of the stack's ValidatingAdmissionPolicies for one request."""
    policies = {o["metadata"]["name"]: o for o in objects(stack, "ValidatingAdmissionPolicy")}
    group, version = request["apiVersion"].split("/") if "/" in request["apiVersion"] else ("", request["apiVersion"])
    labels = _namespace_labels(stack, namespace) | {"kubernetes.io/metadata.name": namespace}
    for binding in objects(stack, "ValidatingAdmissionPolicyBinding"):
        policy = policies[binding["spec"]["policyName"]]
        rules = policy["spec"]["matchConstraints"]["resourceRules"]
        hit = any(
            ({group, "*"} & set(r["apiGroups"]))
            and ({version, "*"} & set(r["apiVersions"]))
            and ({operation, "*"} & set(r["operations"]))
            and ({request["resource"], "*"} & set(r["resources"]))
            for r in rules
        )
        selector = (binding["spec"].get("matchResources") or {}).get("namespaceSelector") or {}
        if not hit or not selector_matches(selector, labels):
            continue
        kind = {"group": group, "version": version, "kind": request["kind"]}
        obj = {"apiVersion": request["apiVersion"], "kind": request["kind"], "metadata": {"name": "job", "namespace": namespace}, "spec": {}}
        ns = {"metadata": {"name": namespace, "labels": labels}}
        denial = vap_validation_denial(policy, kind, obj, ns, operation)
        if denial is not None and "Deny" in binding["spec"]["validationActions"]:
            return False, denial
    return True, ""


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


def _real_capability(queue: dict[str, Any] | None, total: dict[str, float]) -> dict[str, float]:
    """proportion.go: realCapability = total (no guarantees here) min'd per dimension with the listed capability."""
    capability = (queue or {}).get("spec", {}).get("capability") or {}
    if not capability:
        return dict(total)
    out = {}
    for name, amount in total.items():
        listed = capability.get(name)
        cap = math.inf if listed is None else float(listed)
        if name in ("cpu", "memory") and cap <= 0:
            cap = math.inf  # attr.capability.MilliCPU/Memory <= 0 -> MaxFloat64
        out[name] = min(amount, cap)
    return out


def test_volcano_default_queue_can_hold_no_gpu() -> None:
    spec, catalog = spec_for("prod"), load_catalog()
    queues = [o for o in objects("prod", "Queue") if o["metadata"]["name"] == DEFAULT_QUEUE]
    assert len(queues) == 1
    total = {"cpu": 1000.0, "memory": 1e12, **{r: 64.0 for r in gpu_resources(spec, catalog)}}
    real = _real_capability(queues[0], total)
    assert {r: real[r] for r in gpu_resources(spec, catalog)} == dict.fromkeys(gpu_resources(spec, catalog), 0.0)
    assert real["cpu"] == total["cpu"]  # CPU-only work may still use the default queue
    # The queue the scheduler creates on its own (weight 1, no capability) would hand out every GPU.
    assert _real_capability({"spec": {"weight": 1, "reclaimable": True}}, total)["nvidia.com/gpu"] == 64.0


def test_default_queue_is_patched_after_the_volcano_release() -> None:
    queue = plan_for("prod").named("platform-volcano-default-queue")
    assert "volcano-release" in queue.depends_on
    assert queue.inputs["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"
