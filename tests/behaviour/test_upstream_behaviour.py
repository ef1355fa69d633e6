"""gpu_platform.behaviour against the upstream semantics each function cites (cases taken from the upstream tests' shapes)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpu_platform.aws.nodepools import node_template_tags
from gpu_platform.behaviour import admission, autoscaler, kueue, scheduler, volcano
from gpu_platform.catalog import load_catalog
from tests.conftest import spec_for

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"operator": "Exists"}, True),  # empty key + Exists tolerates everything
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"key": "nvidia.com/gpu", "value": "present"}, True),  # operator defaults to Equal
        ({"key": "nvidia.com/gpu", "value": "absent"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_toleration_semantics(toleration: dict, tolerated: bool) -> None:
    assert scheduler.tolerates(toleration, TAINT) is tolerated
    assert (scheduler.untolerated_taint([TAINT], [toleration]) is None) is tolerated


def test_prefer_no_schedule_does_not_filter() -> None:
    assert scheduler.untolerated_taint([{**TAINT, "effect": "PreferNoSchedule"}], []) is None


def test_node_affinity_terms_are_ored_and_expressions_anded() -> None:
    labels = {"zone": "a", "gpus": "8"}
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                        {"matchExpressions": [{"key": "zone", "operator": "Exists"}, {"key": "gpus", "operator": "Gt", "values": ["4"]}]},
                    ]
                }
            }
        }
    }
    assert scheduler.affinity_matches(spec, labels)
    assert not scheduler.affinity_matches({**spec, "nodeSelector": {"zone": "b"}}, labels)
    # Kueue's flavorSelector: only the flavor's own keys count.
    assert scheduler.affinity_matches({"nodeSelector": {"zone": "b", "gpu": "x"}}, {"gpu": "x"}, only_keys={"gpu"})


def test_insufficient_names_missing_extended_resources() -> None:
    short = scheduler.insufficient({"nvidia.com/gpu": Decimal(1), "cpu": Decimal(2)}, {"nvidia.com/mig-3g.40gb": "14", "cpu": "192"})
    assert short == ["Insufficient nvidia.com/gpu (asks 1, a node offers 0)"]


def test_template_node_of_a_mig_pool_offers_no_whole_gpus() -> None:
    """aws_manager.go buildNodeFromTemplate starts from the instance's 8 GPUs; the pool's tag must bring that to 0."""
    spec, catalog = spec_for("prod"), load_catalog()
    pool = spec.pool("infer-h100-mig")
    node = autoscaler.template_node(192, 2048 * 1024, 8, node_template_tags(pool, catalog))
    assert node.allocatable["nvidia.com/gpu"] == "0"
    assert node.allocatable["nvidia.com/mig-3g.40gb"] == "16"
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node.taints
    whole = {"nvidia.com/gpu": Decimal(1)}
    assert scheduler.insufficient(whole, node.allocatable), "the autoscaler would scale a MIG pool for a whole-GPU pod"


def test_template_taint_needs_value_and_effect() -> None:
    node = autoscaler.template_node(4, 1024, 0, {f"{autoscaler.PREFIX}taint/a": "x:NoSchedule", f"{autoscaler.PREFIX}taint/b": "no-effect"})
    assert [t["key"] for t in node.taints] == ["a"]


def _job(parallelism: int | None, completions: int | None) -> dict:
    spec: dict = {"template": {"spec": {"containers": []}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"kind": "Job", "metadata": {"name": "j"}, "spec": spec}


@pytest.mark.parametrize(("parallelism", "completions", "count"), [(None, None, 1), (4, 16, 4), (8, 2, 2)])
def test_job_pod_count(parallelism: int | None, completions: int | None, count: int) -> None:
    assert [p.count for p in kueue.pod_sets(_job(parallelism, completions))] == [count]


def test_pod_sets_of_jobset_pytorchjob_and_rayjob() -> None:
    t = {"spec": {"containers": []}}
    jobset = {"kind": "JobSet", "spec": {"replicatedJobs": [{"name": "w", "replicas": 3, "template": {"spec": {"parallelism": 2, "template": t}}}]}}
    assert [(p.name, p.count) for p in kueue.pod_sets(jobset)] == [("w", 6)]
    ptj = {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3, "template": t}, "Master": {"template": t}}}}
    assert [(p.name, p.count) for p in kueue.pod_sets(ptj)] == [("master", 1), ("worker", 3)]
    ray = {
        "kind": "RayJob",
        "spec": {"rayClusterSpec": {"headGroupSpec": {"template": t}, "workerGroupSpecs": [{"groupName": "g", "replicas": 2, "template": t}]}},
    }
    assert [(p.name, p.count) for p in kueue.pod_sets(ray)] == [("head", 1), ("g", 2)]


def test_priority_label_wins_over_templates() -> None:
    job = _job(1, 1)
    job["spec"]["template"]["spec"]["priorityClassName"] = "gpu-batch"
    assert kueue.workload_for(job).priority_class == ("PriorityClass", "gpu-batch")
    job["metadata"]["labels"] = {kueue.PRIORITY_LABEL: "inference"}
    assert kueue.workload_for(job).priority_class == ("WorkloadPriorityClass", "inference")


def test_requests_limits_init_containers_and_exclusions() -> None:
    spec = {
        "containers": [
            {"resources": {"limits": {"nvidia.com/gpu": "1", "memory": "2Gi"}, "requests": {"memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "1"}}},
        ],
        "initContainers": [{"resources": {"requests": {"cpu": "4", "ephemeral-storage": "1Gi"}}}],
    }
    assert kueue.pod_requests(spec) == {"nvidia.com/gpu": 1, "memory": 2**30, "cpu": 4, "ephemeral-storage": 2**30}
    assert "ephemeral-storage" not in kueue.pod_requests(spec, ("ephemeral-storage",))


def test_podgroup_queue_order() -> None:
    on = volcano.CHART_DEFAULT_ADMISSIONS + "," + volcano.PODGROUP_MUTATE
    ns = {volcano.QUEUE_ANNOTATION: "tenant"}
    assert volcano.podgroup_queue({volcano.QUEUE_ANNOTATION: "own"}, ns, on)[0] == "own"
    assert volcano.podgroup_queue({}, ns, on)[0] == "tenant"
    assert volcano.podgroup_queue({}, ns, volcano.CHART_DEFAULT_ADMISSIONS)[0] == "default"  # webhook off: the CRD default
    assert volcano.podgroup_queue({}, {}, on)[0] == "default"


def _req(ns_labels: dict, obj_labels: dict | None = None) -> admission.Request:
    obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": obj_labels or {}}}
    return admission.request_for(obj, {"metadata": {"labels": ns_labels}})


def test_match_constraints() -> None:
    rules = [{"apiGroups": ["batch"], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["jobs"]}]
    match = {"resourceRules": rules, "namespaceSelector": {"matchLabels": {"t": "x"}}}
    assert admission.resources_match(match, _req({"t": "x"}))
    assert not admission.resources_match(match, _req({"t": "y"}))
    assert not admission.resources_match({**match, "excludeResourceRules": rules}, _req({"t": "x"}))
    assert not admission.resources_match({**match, "objectSelector": {"matchLabels": {"a": "b"}}}, _req({"t": "x"}))


def test_param_ref_is_refused_clearly() -> None:
    policy = {"kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"}, "spec": {"validations": [{"expression": "true"}]}}
    binding = {
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"},
        "spec": {"policyName": "p", "validationActions": ["Deny"], "paramRef": {"name": "x"}},
    }
    with pytest.raises(ValueError, match="paramRef is not evaluated"):
        admission.denials([policy, binding], _req({}))


def test_match_conditions_skip_the_policy() -> None:
    policy = {
        "metadata": {"name": "p"},
        "spec": {"matchConditions": [{"name": "c", "expression": "false"}], "validations": [{"expression": "false", "message": "no"}]},
    }
    assert admission.vap_validation_denial(policy, {"group": "", "version": "v1", "kind": "Pod"}, {}, {}) is None
    policy["spec"]["matchConditions"][0]["expression"] = "true"
    assert admission.vap_validation_denial(policy, {"group": "", "version": "v1", "kind": "Pod"}, {}, {}) == "no"
