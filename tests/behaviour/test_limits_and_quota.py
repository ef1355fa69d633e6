"""LimitRanger, the API server's resource validation, the ResourceQuota admission and Kueue's own resource checks.

Each case is one behaviour of the upstream code behaviour.limitrange, behaviour.resourcequota and
behaviour.kueue reproduce (Kubernetes v1.35 limitranger/admission.go, core/validation, quota evaluator
pods.go and persistent_volume_claims.go; Kueue v0.19.2 pkg/workload/resources.go), on the shape GPU pods are
commonly written in: memory requested, only the GPU limited.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpu_platform.behaviour import kueue, limitrange, resourcequota
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.tenants import limit_range, resource_quota
from tests.conftest import spec_for

# The tenant LimitRange main had before issue 30: a 4Gi default memory limit and a max of the tenant's memory.
BEFORE = {"kind": "LimitRange", "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "500m", "memory": "1Gi"},
                                                     "default": {"memory": "4Gi"}, "max": {"memory": "16384Gi"}}]}}  # fmt: skip
GPU_POD = {"containers": [{"name": "vllm", "resources": {"requests": {"cpu": "8", "memory": "256Gi"}, "limits": {"nvidia.com/gpu": "8"}}}]}


def _kueue_errors(spec: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> list[str]:
    """What Kueue says of a Job with this pod spec: AdjustResources, then ValidateAdmissibility on the result."""
    workload = kueue.Workload("Job", "j", "ns", (kueue.PodSet("main", 1, spec),), None)
    return kueue.admissibility_errors(kueue.adjusted_workload(workload, limit_ranges), limit_ranges)


def _tenant_objects(stack: str = "prod", tenant: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = spec_for(stack)
    t = spec.tenants[tenant]
    return limit_range(t), resource_quota(spec, load_catalog(), t)


def test_the_former_default_memory_limit_refused_every_memory_request_above_it() -> None:
    """Kueue: default limit 4Gi merged first, then `requests must not exceed its limits`; the API server: 422."""
    errors = _kueue_errors(GPU_POD, [BEFORE])
    assert errors == [
        "resources validation failed: spec.podSets[0].template.spec.containers[0]: Invalid value: ['memory']: requests must not exceed its limits"
    ]
    _, refused = limitrange.admitted_pod(GPU_POD, [BEFORE])
    assert refused == ["invalid: spec.containers[0].resources.requests: Invalid value: '256Gi': must be less than or equal to memory limit of 4Gi"]


def test_the_stored_max_becomes_the_default_limit() -> None:
    """SetDefaults_LimitRangeItem: an item with only `max` stores it as `default` too, so a max alone caps the same way."""
    only_max = {"spec": {"limits": [{"type": "Container", "max": {"memory": "64Gi"}}]}}
    assert limitrange.container_items([only_max])[0]["default"] == {"memory": "64Gi"}
    assert _kueue_errors(GPU_POD, [only_max])[0].startswith("resources validation failed")


def test_the_tenant_limits_admit_a_memory_request_with_only_a_gpu_limit() -> None:
    lr, quota = _tenant_objects()
    assert _kueue_errors(GPU_POD, [lr]) == []
    pod, refused = limitrange.admitted_pod(GPU_POD, [lr])
    assert refused == []
    assert pod["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "8", "SetDefaults_Pod: the GPU limit is the request"
    assert resourcequota.admit_pod([quota], pod) is None
    usage = resourcequota.pod_usage(pod)
    assert usage["requests.memory"] == Decimal(256 * 2**30) and usage["requests.nvidia.com/gpu"] == 8


def test_a_limit_only_sidecar_below_the_default_request_is_refused_by_kueue_but_not_by_the_api_server() -> None:
    """Kueue applies defaultRequest before it copies limits into missing requests; the API server copies first."""
    sidecar = {"containers": [{"name": "metrics", "resources": {"limits": {"cpu": "100m", "memory": "128Mi"}}}]}
    one_gib = {"spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "500m", "memory": "1Gi"}}]}}
    assert "requests must not exceed its limits" in _kueue_errors(sidecar, [one_gib])[0]
    assert limitrange.admitted_pod(sidecar, [one_gib])[1] == []
    lr, _ = _tenant_objects()
    assert _kueue_errors(sidecar, [lr]) == [], "the platform's default requests sit below such limits"


def test_a_container_without_requests_still_counts_and_passes_the_quota() -> None:
    lr, quota = _tenant_objects()
    bare = {"containers": [{"name": "shell"}]}
    assert resourcequota.missing_container_resources(bare, quota["spec"]["hard"]) == ["requests.cpu", "requests.memory"]
    pod, refused = limitrange.admitted_pod(bare, [lr])
    assert refused == [] and resourcequota.admit_pod([quota], pod) is None
    assert resourcequota.pod_usage(pod)["requests.cpu"] > 0


def test_a_gpu_request_without_its_limit_is_invalid() -> None:
    """validateResourceRequirements: extended resources are not overcommittable; a request needs an equal limit."""
    pod = {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}
    assert limitrange.requirement_errors(pod) == [
        "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources (nvidia.com/gpu)"
    ]


def test_the_quota_refuses_what_would_exceed_it_and_names_the_numbers() -> None:
    lr, quota = _tenant_objects()
    hard = quota["spec"]["hard"]
    big = {"containers": [{"name": "c", "resources": {"requests": {"memory": hard["requests.memory"]}}}]}
    pod, _ = limitrange.admitted_pod(big, [lr])
    assert resourcequota.admit_pod([quota], pod) is None
    used = resourcequota.pod_usage(pod)
    refusal = resourcequota.admit_pod([quota], pod, used)
    assert refusal is not None and refusal.startswith("exceeded quota: gpu-quota, requested: requests.memory=")


def test_limits_memory_in_a_quota_refuses_containers_without_one() -> None:
    """pods.go Constraints: the must-specify rule the tenant quota no longer triggers."""
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"limits.memory": "1Ti"}}}
    assert resourcequota.admit_pod([quota], GPU_POD) == "failed quota: q: must specify limits.memory"


def test_storage_quota_bounds_claims_and_fsx_file_systems() -> None:
    """persistent_volume_claims.go Usage: per claim, per class; prod allows one FSx claim per tenant by default."""
    spec = spec_for("prod")
    _, quota = _tenant_objects()
    fsx = spec.storage.fsx_lustre.class_name
    claim = {"resources": {"requests": {"storage": "2400Gi"}}}
    assert resourcequota.admit_claim([quota], claim, fsx) is None
    used = resourcequota.claim_usage(claim, fsx)
    refusal = resourcequota.admit_claim([quota], claim, fsx, used)
    assert refusal is not None and f"{fsx}.storageclass.storage.k8s.io/persistentvolumeclaims=1" in refusal
    gp3 = {"resources": {"requests": {"storage": "3Ti"}}}
    refusal = resourcequota.admit_claim([quota], gp3, "gp3", used)
    assert refusal is not None and "requests.storage" in refusal, "2400Gi + 3Ti exceeds the 4096Gi default"
