"""Who admits GPU work when a stack runs both Kueue and Volcano: Kueue admits, Volcano only gang-schedules.

Two admission systems counting the same GPUs would each believe the other's GPUs free. The rule:
every tenant workload is admitted against quota by Kueue (its ClusterQueue); Volcano places the
pods Kueue has admitted (pods with `schedulerName: volcano`, for gang scheduling) and never admits
on its own. Enforced with Kubernetes' and Volcano's own mechanisms:

- in tenant namespaces a ValidatingAdmissionPolicy refuses Volcano's own job kinds (batch.volcano.sh
  Job and CronJob), which Kueue does not manage and which would start without Kueue's admission;
- Volcano's `default` queue (the scheduler creates it at start when absent, pkg/scheduler/cache/cache.go
  newDefaultAndRootQueue) gets a capability of zero for every GPU resource, so nothing that lands in
  it can hold a GPU (proportion plugin: a listed scalar capability of 0 caps the queue at 0).
"""

from __future__ import annotations

from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.k8s.objects import LABEL_TENANT, Manifest, metadata
from gpu_platform.pools import resources_per_gpu
from gpu_platform.spec.models import PlatformSpec

VAP_API = "admissionregistration.k8s.io/v1"
POLICY = "gpu-platform-volcano-jobs-through-kueue"
DEFAULT_QUEUE = "default"
VOLCANO_JOB_RESOURCES = ("jobs", "cronjobs")
DENIAL = (
    "Volcano Jobs bypass Kueue's GPU quota in tenant namespaces: submit a Kueue-managed job "
    "(label kueue.x-k8s.io/queue-name) and set schedulerName: volcano for gang scheduling"
)


def both_schedulers(spec: PlatformSpec) -> bool:
    """True when the stack runs Kueue and Volcano together (the routing rule applies)."""
    return spec.queueing.kueue.enabled and spec.queueing.volcano.enabled


def gpu_resources(spec: PlatformSpec, catalog: Catalog) -> list[str]:
    """Every extended GPU resource the stack's pools advertise (nvidia.com/gpu, .shared, mig-*)."""
    return sorted({name for pool in spec.node_pools for name in resources_per_gpu(pool, catalog)})


def volcano_jobs_policy() -> list[Manifest]:
    """The ValidatingAdmissionPolicy and its binding that refuse Volcano job kinds in tenant namespaces."""
    policy = {
        "apiVersion": VAP_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": metadata(POLICY),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["batch.volcano.sh"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": list(VOLCANO_JOB_RESOURCES),
                    }
                ]
            },
            "validations": [{"expression": "false", "message": DENIAL, "reason": "Forbidden"}],
        },
    }
    binding = {
        "apiVersion": VAP_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": metadata(POLICY),
        "spec": {
            "policyName": POLICY,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]}},
        },
    }
    return [policy, binding]


def default_queue(spec: PlatformSpec, catalog: Catalog) -> Manifest:
    """Volcano's `default` queue, taken over (server-side apply upserts it) with no GPU capability."""
    capability: dict[str, Any] = {name: "0" for name in gpu_resources(spec, catalog)}
    meta = metadata(DEFAULT_QUEUE)
    # The scheduler may have created it already; take over its fields instead of failing on "exists".
    meta["annotations"] = {"pulumi.com/patchForce": "true"}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": meta,
        "spec": {"weight": 1, "reclaimable": True, "capability": capability},
    }
