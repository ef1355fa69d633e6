"""MultiKueue across clusters (stacks/Pulumi.multi.yaml): what the manager and each worker get, checked against Kueue's
own CRDs and chart at the pinned version, its kubeconfig validation and its incremental dispatcher (behaviour.multikueue).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml

from gpu_platform.behaviour.multikueue import ROUND_TIMEOUT_S, dispatch, kubeconfig_errors, manager_config, step_size
from gpu_platform.catalog import load_catalog
from gpu_platform.change.base import lock_facts
from gpu_platform.change.diff import by_key, diff_plans
from gpu_platform.cli import main
from gpu_platform.commands.plan import plan_stack
from gpu_platform.engine import Plan
from gpu_platform.federation import federated_spec, worker_spec
from gpu_platform.plan_ids import planned_ip
from gpu_platform.spec.loader import read_stack_config
from gpu_platform_policies import Resource
from gpu_platform_policies.changeview import ChangeView, evaluate_change
from gpu_platform_policies.model import PlanView
from tests.conftest import plan_for, require_shared_crds, spec_for, stack_path
from tests.k8s import test_charts as chart_tests
from tests.k8s import test_render as render_tests
from tests.k8s.charts import releases, template
from tests.k8s.helpers import crd_schemas, is_builtin, objects, strict_schema

STACK = "multi"


@cache
def plan() -> Plan:
    return plan_for(STACK)


def inputs(name: str) -> dict[str, Any]:
    return plan().named(name).inputs


def gpu_quota(cq: dict[str, Any]) -> dict[str, float]:
    """flavor -> nvidia.com/gpu nominal quota of a ClusterQueue's inputs."""
    return {
        f["name"]: r["nominalQuota"]
        for g in cq["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    }


@cache
def kueue_chart_crds() -> dict[str, dict[str, Any]]:
    """Kind -> strict v1beta2 schema of the CRDs the pinned Kueue chart renders (templates/crd, with MultiKueue's)."""
    release = next(r for r in releases(plan()) if r.resource == "kueue-release")
    rendered = template(release, spec_for(STACK).lock.kubernetes.version, ())
    out = {}
    for doc in rendered.objects:
        if doc.get("kind") == "CustomResourceDefinition" and doc["spec"]["group"] == "kueue.x-k8s.io":
            for v in doc["spec"]["versions"]:
                if v["name"] == "v1beta2":
                    out[doc["spec"]["names"]["kind"]] = strict_schema(v["schema"]["openAPIV3Schema"])
    return out


def test_the_stack_plans_and_passes_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--stack", STACK]) == 0
    out = capsys.readouterr().out
    assert "0 mandatory" in out
    for rule in ("multikueue-kubeconfigs-static", "multikueue-workers-mirror-manager", "multikueue-quota-sums"):
        assert f"not applicable: {rule}" not in out


def test_manager_objects_validate_against_the_kueue_charts_crds() -> None:
    schemas = kueue_chart_crds()
    kinds = {"MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck", "ClusterQueue"}
    seen = set()
    for r in plan().resources:
        kind = r.type.rsplit(":", 1)[-1]
        if r.type.startswith("kubernetes:kueue.x-k8s.io/v1beta2:") and kind in kinds:
            body = {k: v for k, v in r.inputs.items() if k != "metadata"}
            jsonschema.Draft7Validator(schemas[kind]).validate(body | {"metadata": {}})
            seen.add(kind)
    assert seen == kinds
    # The CRD's CEL rule on clusterSource: exactly one of kubeConfig and clusterProfileRef.
    for name in ("multikueue-cluster-east", "multikueue-cluster-west"):
        source = inputs(name)["spec"]["clusterSource"]
        assert [k in source for k in ("kubeConfig", "clusterProfileRef")].count(True) == 1


def test_the_managers_kueue_configuration_runs_the_incremental_dispatcher_one_worker_at_a_time() -> None:
    release = next(r for r in releases(plan()) if r.resource == "kueue-release")
    rendered = template(release, spec_for(STACK).lock.kubernetes.version, ())
    config_map = next(o for o in rendered.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("manager-config"))
    config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert step_size(config) == 1
    # Workers run no dispatcher: a worker's Configuration has no multiKueue section.
    assert step_size(manager_config(inputs("east-kueue-release")["values"])) is None


def test_the_kubeconfigs_are_pulumi_secrets_in_the_plan() -> None:
    """The worker's token in each kubeconfig is secret (it comes from the token Secret's `data`, which pulumi-kubernetes
    marks secret, and the program wraps it again): the engine records the inputs Pulumi would encrypt in the state."""
    secret = {r.name: r.secrets for r in plan().resources if r.secrets}
    assert secret == {"multikueue-kubeconfig-east": ("stringData",), "multikueue-kubeconfig-west": ("stringData",)}


def test_kubeconfigs_are_static_and_kueue_accepts_them() -> None:
    for worker in ("east", "west"):
        text = inputs(f"multikueue-kubeconfig-{worker}")["stringData"]["kubeconfig"]
        doc = json.loads(text)
        assert kubeconfig_errors(text) == []
        assert doc["clusters"][0]["cluster"]["server"] == f"https://{worker}-cluster-eks.eks.mock"  # the worker's own endpoint
        assert doc["users"][0]["user"] == {"token": f"planned-token-{worker}-multikueue-token"}  # its long-lived token
        assert inputs(f"multikueue-cluster-{worker}")["spec"]["clusterSource"]["kubeConfig"]["location"] == f"multikueue-{worker}"
        token = inputs(f"{worker}-multikueue-token")
        assert token["type"] == "kubernetes.io/service-account-token"
        assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "multikueue-sa"}


@pytest.mark.parametrize(
    ("user", "cluster", "refusal"),
    [
        ({"exec": {"command": "aws"}}, {}, "exec plugins are not allowed"),
        ({"tokenFile": "/t"}, {}, "tokenFile is not allowed"),
        ({"token": "t"}, {"insecure-skip-tls-verify": True}, "insecure TLS verification is not allowed"),
        ({"token": "t"}, {"certificate-authority": "/ca.crt"}, "certificate-authority file paths are not allowed"),
        ({"username": "admin", "password": "x"}, {}, "basic auth is not allowed"),
        ({"token": "t"}, {"server": "https://bad_host:443"}, "untrusted server endpoint"),
        ({"token": "t"}, {"server": ""}, "server URL is required"),
    ],
)
def test_kueue_refuses_what_its_validate_kubeconfig_refuses(user: dict[str, Any], cluster: dict[str, Any], refusal: str) -> None:
    doc = {
        "clusters": [{"name": "w", "cluster": {"server": "https://w.example", "certificate-authority-data": "Zm9v"} | cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "w", "context": {"cluster": "w", "user": "u"}}],
        "current-context": "w",
    }
    assert any(refusal in e for e in kubeconfig_errors(yaml.safe_dump(doc)))


def test_manager_quota_is_the_workers_sum_and_every_queue_dispatches() -> None:
    for tenant, flavor, per_worker in (("llm-training", "train-h100", 16), ("research", "infer-l4", 4)):
        manager = inputs(f"kueue-clusterqueue-{tenant}")
        assert gpu_quota(manager) == {flavor: 2 * per_worker}
        assert manager["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}
        for worker in ("east", "west"):
            local = inputs(f"{worker}-kueue-clusterqueue-{tenant}")
            assert gpu_quota(local) == {flavor: per_worker}
            assert "admissionChecksStrategy" not in local["spec"]  # a worker admits for itself
    assert inputs("multikueue-config")["spec"]["clusters"] == ["east", "west"]  # the stack's preference order


def test_workers_admit_the_managers_nat_addresses_in_their_own_regions() -> None:
    manager_ips = {f"{planned_ip(r.name)}/32" for r in plan().of_type("aws:ec2/eip:Eip") if r.parent == "network"}
    assert len(manager_ips) == 2  # one NAT gateway per manager zone
    for worker in ("east", "west"):
        cidrs = inputs(f"{worker}-cluster-eks")["vpcConfig"]["publicAccessCidrs"]
        assert "198.51.100.0/27" in cidrs and manager_ips <= set(cidrs)
    assert inputs("cluster-eks")["vpcConfig"]["publicAccessCidrs"] == ["198.51.100.0/27"]
    regions = {r.name: r.inputs["region"] for r in plan().of_type("pulumi:providers:aws")}
    assert regions == {"east-aws": "us-east-2", "west-aws": "us-west-2"}
    # Pulumi's URN is type and name (under the parent's type chain): the engine refuses a second one (engine.run_program).
    urns = [(r.type, r.name) for r in plan().resources]
    assert len(urns) == len(set(urns))


def test_worker_clusterrole_covers_every_integration_the_manager_watches() -> None:
    config = manager_config(inputs("kueue-release")["values"])
    frameworks = config["integrations"]["frameworks"]
    rules = inputs("east-multikueue-clusterrole")["rules"]
    granted = {(g, res) for r in rules for g in r["apiGroups"] for res in r["resources"] if "watch" in r["verbs"]}
    watched = {"batch/job": ("batch", "jobs"), "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io", "jobsets"), "pod": ("", "pods")}
    watched |= {"statefulset": ("apps", "statefulsets")}
    for framework in frameworks:
        if framework in watched:
            assert watched[framework] in granted, framework
    assert ("kueue.x-k8s.io", "workloads") in granted


def _admits_at(free: dict[str, int], need: int) -> Any:
    """A worker's own Kueue admits at once where its ClusterQueue has `need` GPUs free, else not within the horizon."""
    return lambda worker: 0 if free.get(worker, 0) >= need else None


def test_journey_training_job_is_admitted_on_the_sum_then_dispatched_east_then_west() -> None:
    """A 16-GPU job admitted on the manager (32) goes to east at once, or to west after a round when east is busy; a
    24-GPU job (more than either worker holds for llm-training, 16 each) is admitted on the manager and never dispatched."""
    order = inputs("multikueue-config")["spec"]["clusters"]
    step = step_size(manager_config(inputs("kueue-release")["values"]))
    assert step is not None
    manager_free = gpu_quota(inputs("kueue-clusterqueue-llm-training"))["train-h100"]
    worker_free = {w: gpu_quota(inputs(f"{w}-kueue-clusterqueue-llm-training"))["train-h100"] for w in order}
    # 16 GPUs: the manager admits (32), east admits at once.
    assert manager_free >= 16
    assert dispatch(order, step, _admits_at(worker_free, 16)).worker == "east"
    # East busy (12 of its 16 taken): only east is nominated for the first 5 minutes, then west joins and admits.
    busy = worker_free | {"east": worker_free["east"] - 12}
    walk = dispatch(order, step, _admits_at(busy, 16))
    assert (walk.worker, walk.at_s) == ("west", ROUND_TIMEOUT_S)
    assert [(r.at_s, r.nominated) for r in walk.rounds] == [(0, ("east",)), (ROUND_TIMEOUT_S, ("east", "west"))]
    # Kueue's default step of 3 would have nominated both at once: the stack's stepSize 1 is what keeps east first.
    assert dispatch(order, 3, _admits_at(busy, 16)).at_s == 0
    # 24 GPUs: the manager's summed quota admits it, but no single worker can, so it is never dispatched.
    assert manager_free >= 24 and dispatch(order, step, _admits_at(worker_free, 24)).worker is None


def test_worker_specs_are_the_workers_own_and_the_manager_sees_their_sum() -> None:
    spec = spec_for(STACK)
    east = worker_spec(spec, 0)
    assert (east.region, east.cluster.name, [p.name for p in east.node_pools]) == ("us-east-2", "gpu-east", ["train-h100", "infer-l4"])
    assert all(p.whole_nodes is False for p in east.node_pools)
    fed = federated_spec(spec)
    assert {t.name: [(q.pool, q.gpus) for q in t.quotas] for t in fed.tenants} == {
        "llm-training": [("train-h100", 32)],
        "research": [("infer-l4", 8)],
    }


MANAGER_POOL = (
    "gpu-platform:nodePools: [{name: x, workloadClass: training, capacity: on-demand, instanceTypes: [g6.xlarge],"
    " scaling: {min: 0, desired: 0, max: 1}}]"
)
JOB_APIS = "    jobApis: {jobset: true, trainer: false, ray: false}\n"
WEST_L4 = "          instanceTypes: [g6.xlarge]\n          scaling: {min: 0, desired: 0, max: 4}"
WEST_H100_END = "          rootVolumeGiB: 1000\n        - name: infer-l4\n          workloadClass: inference\n"
BAD_EDITS = [
    (
        "manager GPU pools",
        "gpu-platform:nodePools: []",
        MANAGER_POOL,
        "gpu-platform:nodePools: a MultiKueue manager runs no GPU work",
    ),
    (
        "worker quota on an unknown pool",
        "research: [{pool: infer-l4, gpus: 4}]\n    - name: west",
        "research: [{pool: infer-l40, gpus: 4}]\n    - name: west",
        "gpu-platform:workers[0].quotas.research[0].pool: unknown pool 'infer-l40'",
    ),
    (
        "unknown tenant",
        "        research: [{pool: infer-l4, gpus: 4}]\n    - name: west",
        "        reserch: [{pool: infer-l4, gpus: 4}]\n    - name: west",
        "gpu-platform:workers[0].quotas.reserch: unknown tenant 'reserch'",
    ),
    (
        # The advice names the worker's own key, not the manager's pool of the same index.
        "worker quota above its pool",
        "        llm-training: [{pool: train-h100, gpus: 16}]\n        research: [{pool: infer-l4, gpus: 4}]\n    - name: west",
        "        llm-training: [{pool: train-h100, gpus: 64}]\n        research: [{pool: infer-l4, gpus: 4}]\n    - name: west",
        "lower the quotas or raise gpu-platform:workers[0].nodePools[0].scaling.max",
    ),
    ("duplicate worker", "    - name: west", "    - name: east", "gpu-platform:workers[1].name: duplicate worker name 'east'"),
    (
        "quota multiplier above its bound",
        JOB_APIS,
        JOB_APIS + "    kueue: {multiKueueQuotaMultiplier: 5}\n",
        "gpu-platform:queueing.kueue.multiKueueQuotaMultiplier",
    ),
    (
        "worker on the manager's cluster",
        "name: gpu-west",
        "name: gpu-manager",
        "gpu-platform:workers[1].cluster.name: cluster name 'gpu-manager' is already the manager's",
    ),
    ("worker region typo", "region: us-west-2", "region: us-west-9", "gpu-platform:workers[1].region: unknown AWS region 'us-west-9'"),
    (
        "private worker endpoint",
        "        name: gpu-west\n        endpointPublicAccess: true",
        "        name: gpu-west\n        endpointPublicAccess: false",
        "gpu-platform:workers[1].cluster.endpointPublicAccess",
    ),
    (
        "whole nodes on a worker (east)",
        WEST_H100_END,
        WEST_H100_END.replace("1000\n", "1000\n          wholeNodes: true\n", 1),
        "gpu-platform:workers[0].nodePools[0].wholeNodes",
    ),
    (
        "worker endpoint admitting only the manager",
        '        name: gpu-west\n        endpointPublicAccess: true\n        publicAccessCidrs: ["198.51.100.0/27"]',
        "        name: gpu-west\n        endpointPublicAccess: true",
        "gpu-platform:workers[1].cluster.publicAccessCidrs: no publicAccessCidrs",
    ),
    (
        "worker name longer than IAM role names allow",
        "    - name: west",
        "    - name: west-coast-overflow-capacity",
        "gpu-platform:workers[1].name: 'west-coast-overflow-capacity' is 28 characters",
    ),
    (
        "shared setting wrong on a worker only",
        "  gpu-platform:queueing:",
        "  gpu-platform:storage: {fsxLustre: {enabled: true, zone: us-east-1a}}\n  gpu-platform:queueing:",
        "gpu-platform:storage.fsxLustre.zone: on worker 'east': 'us-east-1a' is not a zone of the cluster",
    ),
    (
        "demand on a manager",
        "  gpu-platform:queueing:",
        "  gpu-platform:demand: [{workloadClass: training, p95: 8, sla: training}]\n  gpu-platform:queueing:",
        "gpu-platform:demand: demand is compared with one cluster's pools; a MultiKueue manager has none",
    ),
    (
        "one pool name, two GPU models",
        WEST_L4,
        WEST_L4.replace("g6.xlarge", "g6e.xlarge"),
        "gpu-platform:workers[1].nodePools[1].name: pool 'infer-l4' is L40S",
    ),
]


@pytest.mark.parametrize(("what", "old", "new", "error"), BAD_EDITS, ids=[b[0] for b in BAD_EDITS])
def test_bad_federation_is_one_clear_line(what: str, old: str, new: str, error: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    text = stack_path(STACK).read_text()
    assert text.count(old) >= 1, what
    bad = tmp_path / "Pulumi.multi.yaml"
    bad.write_text(text.replace(old, new, 1) if what != "duplicate worker" else text.replace(old, new))
    assert main(["check", "--stack", str(bad)]) == 2
    err = capsys.readouterr().err
    assert error in err, err
    assert "Traceback" not in err


TRAIN_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: pretrain
  namespace: {namespace}
  labels:
    kueue.x-k8s.io/queue-name: default
spec:
  parallelism: {pods}
  completions: {pods}
  template:
    spec:
      priorityClassName: {priority}
      restartPolicy: Never
      containers:
        - name: trainer
          image: registry.example.com/llm/pretrain:2026.11
          resources:
            requests: {{cpu: "{cpu}", memory: {memory}}}
            limits: {{{resource}: "{gpus}", memory: {memory}}}
"""


def _explain(tmp_path: Any, stack: Any, capsys: pytest.CaptureFixture[str], **job: Any) -> tuple[int, dict[str, Any]]:
    workload = tmp_path / "job.yaml"
    fields = {"namespace": "llm-training", "pods": 2, "priority": "gpu-production-training", "resource": "nvidia.com/gpu", "gpus": 8}
    fields |= {"cpu": 8, "memory": "64Gi"} | job
    workload.write_text(TRAIN_JOB.format(**fields))
    code = main(["explain", "--stack", str(stack), "--workload", str(workload), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_explain_shows_the_managers_admission_then_the_worker_it_is_dispatched_to(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _explain(tmp_path, stack_path(STACK), capsys)
    stages = [s["stage"] for s in out["steps"]]
    assert code == 0 and out["verdict"] == "runs"
    assert stages.index("kueue-flavor") < stages.index("multikueue") < stages.index("dispatch") < stages.index("east/kueue-flavor")
    assert "east/device-resources" in stages and not any(s.startswith("west/") for s in stages)
    assert (out["clusterQueue"], out["flavor"], out["pool"]) == ("llm-training", "train-h100", "train-h100")


def test_explain_moves_to_the_next_worker_after_five_minutes(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """East holds only 2 L4s for research, west 4: a 4-GPU job is admitted on the manager's 6, not by east, then west."""
    text = stack_path(STACK).read_text().replace("research: [{pool: infer-l4, gpus: 4}]", "research: [{pool: infer-l4, gpus: 2}]", 1)
    stack = tmp_path / "Pulumi.multi.yaml"
    stack.write_text(text)
    code, out = _explain(tmp_path, stack, capsys, namespace="research", pods=4, gpus=1, priority="gpu-experiments", cpu=2, memory="8Gi")
    dispatch_step = next(s for s in out["steps"] if s["stage"] == "dispatch")
    assert out["verdict"] == "runs" and code == 0, out["steps"][-1]
    assert dispatch_step["detail"] == "nominated minute 0: east; minute 5: east, west; worker west admits it"
    assert any(s["stage"] == "west/kueue-flavor" for s in out["steps"]) and out["pool"] == "infer-l4"


def test_explain_says_never_for_a_job_no_single_worker_holds(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _explain(tmp_path, stack_path(STACK), capsys, pods=3)  # 24 GPUs: the manager's 32 admit it, no worker's 16
    last = out["steps"][-1]
    assert (code, out["verdict"], last["stage"], last["result"]) == (3, "never", "dispatch", "blocked")
    assert "no worker's own quota admits it (minute 0: east; minute 5: east, west)" in last["detail"]


@pytest.mark.parametrize(
    "check",
    [
        "test_every_release_has_its_upstream_chart",
        "test_every_release_renders_and_validates",
        "test_every_value_key_the_program_sets_is_read_by_the_chart",
        "test_releases_install_after_the_crds_they_use",
        "test_every_chart_pod_is_admitted_by_its_namespace_pod_security",
    ],
)
def test_every_release_of_every_cluster_passes_the_chart_checks(check: str) -> None:
    """The manager's and the workers' Helm releases through the same `helm template` checks every stack gets."""
    getattr(chart_tests, check)(STACK)


def test_every_object_of_every_cluster_validates(tmp_path: Any) -> None:
    """Core objects strictly for the stack's Kubernetes version; custom resources against shared/crds and, for
    MultiKueue's kinds, the Kueue chart's own CRDs."""
    render_tests.test_core_objects_validate_strictly(STACK)
    crds = dict(crd_schemas(require_shared_crds()))
    crds |= {("kueue.x-k8s.io/v1beta2", kind): schema for kind, schema in kueue_chart_crds().items()}
    custom = [o for o in objects(STACK) if not is_builtin(o["apiVersion"])]
    kinds = set()
    for obj in custom:
        body = {k: v for k, v in obj.items() if k != "metadata"}
        jsonschema.Draft7Validator(crds[(obj["apiVersion"], obj["kind"])]).validate(body | {"metadata": {}})
        kinds.add(obj["kind"])
    assert {"MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck", "ClusterQueue", "PrometheusRule"} <= kinds


def test_more_workers_than_a_multikueue_config_lists_is_refused(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(stack_path(STACK).read_text())
    west = doc["config"]["gpu-platform:workers"][1]
    doc["config"]["gpu-platform:workers"] += [west | {"name": f"w{i}", "cluster": west["cluster"] | {"name": f"gpu-w{i}"}} for i in range(19)]
    bad = tmp_path / "Pulumi.many.yaml"
    bad.write_text(yaml.safe_dump(doc))
    assert main(["check", "--stack", str(bad)]) == 2
    assert "gpu-platform:workers: 21 workers; a MultiKueueConfig lists at most 20" in capsys.readouterr().err


def test_a_production_federation_is_judged_at_each_workers_keys(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The manager's NAT /32s the program adds are the engine's placeholders (TEST-NET-3), not a stack's typo; what a
    rule finds on a worker's cluster points at that worker's keys and lines."""
    stack = tmp_path / "Pulumi.multiprod.yaml"
    stack.write_text(stack_path(STACK).read_text() + "  gpu-platform:policy: {production: true}\n")
    main(["check", "--stack", str(stack), "--format", "json"])
    found = json.loads(capsys.readouterr().out)["violations"]
    cidrs = [v for v in found if v["policy"] == "documentation-cidr"]
    assert cidrs and not any("203.0.113." in v["message"] for v in cidrs)
    keys = {v["resource"]: v["keyPath"] for v in cidrs}
    assert keys["east-cluster-eks"] == "gpu-platform:workers[0].cluster.publicAccessCidrs[0]"
    assert keys["cluster-eks"] == "gpu-platform:cluster.publicAccessCidrs[0]"
    assert all(v.get("line") for v in cidrs)


def test_a_declared_quota_multiplier_scales_the_managers_quota_and_the_gate_holds_it(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """`queueing.kueue.multiKueueQuotaMultiplier: 2`: the manager admits twice the workers' sum, GPUs and CPU alike,
    declared on its queues; the gate passes it, and on a stack without workers the setting is refused."""
    stack = tmp_path / "Pulumi.multi.yaml"
    stack.write_text(stack_path(STACK).read_text().replace(JOB_APIS, JOB_APIS + "    kueue: {multiKueueQuotaMultiplier: 2}\n", 1))
    plan = plan_stack(stack, "multi")
    research = next(r for r in plan.resources if r.name == "kueue-clusterqueue-research")
    quotas = {res["name"]: res["nominalQuota"] for g in research.inputs["spec"]["resourceGroups"] for f in g["flavors"] for res in f["resources"]}
    assert quotas == {"cpu": 256, "memory": "1024Gi", "nvidia.com/gpu": 16}  # workers: 64 cpu, 256Gi, 4 GPUs each
    assert research.inputs["metadata"]["annotations"] == {"gpu-platform.io/multikueue-quota-multiplier": "2"}
    assert main(["check", "--stack", str(stack)]) == 0, capsys.readouterr().out
    single = tmp_path / "Pulumi.dev.yaml"
    dev = stack_path("dev").read_text()
    assert "    volcano: {enabled: false}\n" in dev
    single.write_text(dev.replace("    volcano: {enabled: false}\n", "    volcano: {enabled: false}\n    kueue: {multiKueueQuotaMultiplier: 2}\n", 1))
    capsys.readouterr()
    assert main(["check", "--stack", str(single)]) == 2
    assert "gpu-platform:queueing.kueue.multiKueueQuotaMultiplier: a quota multiplier for a MultiKueue manager" in capsys.readouterr().err


def _change(tmp_path: Any, edit: Any) -> list[Any]:
    """Change rules over the multi stack before and after `edit` of its file, as `check --base` builds the view."""
    base = stack_path(STACK)
    changed = tmp_path / "Pulumi.multi.yaml"
    changed.write_text(edit(base.read_text()))

    def items(plan: Plan) -> list[dict[str, Any]]:
        return [{**r.to_json(), "source": r.source} for r in plan.resources]

    def view(rows: list[dict[str, Any]]) -> PlanView:
        return PlanView(Resource(r["type"], r["name"], r["parent"], r["inputs"], r.get("source")) for r in rows)

    before, after = items(plan()), items(plan_stack(changed, STACK))
    facts = lock_facts(spec_for(STACK).lock)
    change = ChangeView(
        before=view(before),
        after=view(after),
        changes=tuple(diff_plans(by_key(before), by_key(after))),
        catalog=load_catalog(),
        before_config=read_stack_config(base),
        after_config=read_stack_config(changed),
        before_lock=facts,
        after_lock=facts,
        production=True,
        stack_file="stacks/Pulumi.multi.yaml",
    )
    return evaluate_change(change)


def test_change_rules_judge_each_worker_on_its_own(tmp_path: Any) -> None:
    """East and west both have a pool train-h100: moving east's reserved one replaces its node group, which the change
    rules catch on east (not hidden behind west's on-demand pool of the same name), at east's keys."""
    found = _change(tmp_path, lambda t: t.replace("availabilityZones: [us-east-2a]", "availabilityZones: [us-east-2b]", 1))
    replaced = [v for v in found if v.policy == "fixed-capacity-replaced"]
    assert replaced and replaced[0].resource == "east-pool-train-h100-ng" and replaced[0].level == "mandatory"
    assert (replaced[0].key or "").startswith("gpu-platform:workers[0].nodePools[0]")


def test_training_quota_moved_onto_spot_on_a_worker_is_caught(tmp_path: Any) -> None:
    spot_pool = (
        "        - name: train-h100-spot\n          workloadClass: training\n          capacity: spot\n"
        "          instanceTypes: [p5.48xlarge]\n          scaling: {min: 0, desired: 0, max: 2}\n      quotas:\n"
        "        llm-training: [{pool: train-h100, gpus: 0}, {pool: train-h100-spot, gpus: 16}]"
    )

    def edit(text: str) -> str:
        head, west = text.split("    - name: west", 1)
        west = west.replace("      quotas:\n        llm-training: [{pool: train-h100, gpus: 16}]", spot_pool, 1)
        return head + "    - name: west" + west

    found = [v for v in _change(tmp_path, edit) if v.policy == "training-quota-on-spot"]
    assert found and found[0].level == "mandatory", found
    assert (found[0].key or "").startswith("gpu-platform:workers[1]")


CLAIM_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: claim-batch
  namespace: research
  labels:
    kueue.x-k8s.io/queue-name: default
spec:
  parallelism: {pods}
  completions: {pods}
  template:
    spec:
      priorityClassName: gpu-experiments
      restartPolicy: Never
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: gpu
      containers:
        - name: main
          image: registry.example.com/batch:2026.11
          resources:
            requests: {{cpu: "2", memory: 8Gi}}
            limits: {{memory: 8Gi}}
            claims: [{{name: gpu}}]
"""


def _with_dra_on_east(tmp_path: Any) -> Any:
    """The multi stack with a DRA pool of two 1-GPU L40S nodes on east only, research holding both GPUs."""
    text = stack_path(STACK).read_text()
    head, west = text.split("    - name: west", 1)
    pool = (
        "        - name: batch-l40s-dra\n          workloadClass: batch\n          capacity: on-demand\n"
        "          instanceTypes: [g6e.xlarge]\n          scaling: {min: 2, desired: 2, max: 2}\n          allocation: dra\n"
    )
    head = head.replace("      quotas:\n", pool + "      quotas:\n", 1)
    head = head.replace("research: [{pool: infer-l4, gpus: 4}]", "research: [{pool: infer-l4, gpus: 4}, {pool: batch-l40s-dra, gpus: 2}]", 1)
    stack = tmp_path / "Pulumi.multi.yaml"
    stack.write_text(head + "    - name: west" + west)
    return stack


def test_dra_pool_on_a_worker_claims_counted_on_the_manager_and_placed_there(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    stack = _with_dra_on_east(tmp_path)
    planned = plan_stack(stack, STACK)
    templates = sorted(r.name for r in planned.resources if r.type.endswith(":ResourceClaimTemplate"))
    # The manager's Kueue counts a workload's claims from the templates in its namespace; east places them.
    assert templates == ["east-tenant-research-claim-template-gpu", "tenant-research-claim-template-gpu"]
    for release in ("kueue-release", "east-kueue-release"):
        config = manager_config(planned.named(release).inputs["values"])
        assert config["resources"]["deviceClassMappings"] == [{"name": "dra.gpu-platform.io/gpu", "deviceClassNames": ["gpu.nvidia.com"]}]
    assert gpu_quota(planned.named("kueue-clusterqueue-research").inputs) == {"infer-l4": 8}
    workload = tmp_path / "claim.yaml"
    workload.write_text(CLAIM_JOB.format(pods=2))
    assert main(["explain", "--stack", str(stack), "--workload", str(workload), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    stages = {s["stage"]: s for s in out["steps"]}
    assert "1 gpu.nvidia.com device(s)" in stages["resource-claims"]["detail"]
    assert stages["dispatch"]["detail"] == "nominated minute 0: east; worker east admits it"
    assert out["pool"] == "batch-l40s-dra" and "east/device-resources" in stages
    # Three claimed GPUs: the manager's quota (2) refuses them before any dispatch; west has no DRA pool at all.
    workload.write_text(CLAIM_JOB.format(pods=3))
    assert main(["explain", "--stack", str(stack), "--workload", str(workload), "--format", "json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["steps"][-1]["stage"] == "kueue-flavor" and out["steps"][-1]["result"] == "blocked"


DC1 = """    - name: dc1
      endpoint: https://dc1-gpu.example.internal:6443
      caData: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
      storageClass: ceph-rbd
      cluster:
        provider: existing
        name: dc1-gpu
        kubeconfig: ~/.kube/dc1-gpu.yaml
        context: dc1-gpu-admin
        apiServerCidrs: ["10.10.0.10/32", "10.10.0.11/32", "10.10.0.12/32"]
        apiServerPort: 6443
        inventory: ansible/inventories/dc1
      nodePools:
        - name: hgx-h100-train
          workloadClass: training
          capacity: reserved
          gpuModel: H100-80GB
          gpusPerNode: 8
          nodes: [dgx-h100-01, dgx-h100-02, dgx-h100-03, dgx-h100-04]
      quotas:
        llm-training: [{pool: hgx-h100-train, gpus: 32}]
"""


def _with_dc1(tmp_path: Any, worker: str = DC1) -> Any:
    """The multi stack with west replaced by an existing on-prem cluster (the onprem stack's dc1)."""
    head, _ = stack_path(STACK).read_text().split("    - name: west", 1)
    stack = tmp_path / "Pulumi.multi.yaml"
    stack.write_text(head + worker)
    return stack


def test_an_existing_cluster_is_a_worker_through_its_stated_endpoint(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    stack = _with_dc1(tmp_path)
    assert main(["check", "--stack", str(stack)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    planned = plan_stack(stack, STACK)
    config = json.loads(planned.named("multikueue-kubeconfig-dc1").inputs["stringData"]["kubeconfig"])
    assert config["clusters"][0]["cluster"] == {
        "server": "https://dc1-gpu.example.internal:6443",
        "certificate-authority-data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
    }
    assert kubeconfig_errors(json.dumps(config)) == []
    provider = planned.named("dc1-k8s")
    assert (provider.parent, provider.inputs["context"]) == ("dc1-worker", "dc1-gpu-admin")
    patches = [r for r in planned.resources if r.type == "kubernetes:core/v1:NodePatch" and r.name.startswith("dc1-pool-hgx-h100-train-")]
    assert len(patches) == 4
    assert not [r for r in planned.resources if r.type.startswith("aws:") and planned.clusters().get(r.name) == "dc1-worker"]
    # EKS access entries are the EKS clusters'; the existing worker's claims name its own class.
    assert inputs_of(planned, "dc1-tenant-llm-training-namespace")["metadata"]["name"] == "llm-training"
    assert gpu_quota(planned.named("kueue-clusterqueue-llm-training").inputs) == {"train-h100": 16, "hgx-h100-train": 32}
    assert planned.named("multikueue-config").inputs["spec"]["clusters"] == ["east", "dc1"]


def inputs_of(planned: Plan, name: str) -> dict[str, Any]:
    return planned.named(name).inputs


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        (
            "      endpoint: https://dc1-gpu.example.internal:6443\n",
            "",
            "gpu-platform:workers[1].endpoint: an existing worker needs its API server's endpoint",
        ),
        ("    - name: dc1\n", "    - name: dc1\n      region: us-west-2\n", "gpu-platform:workers[1].region: an existing worker has no AWS region"),
        ("      storageClass: ceph-rbd\n", "", "gpu-platform:storage.className: on worker 'dc1': required where the stack installs Prometheus"),
    ],
)
def test_bad_existing_worker_is_one_clear_line(tmp_path: Any, capsys: pytest.CaptureFixture[str], old: str, new: str, error: str) -> None:
    assert old in DC1
    stack = _with_dc1(tmp_path, DC1.replace(old, new, 1))
    assert main(["check", "--stack", str(stack)]) == 2
    assert error in capsys.readouterr().err
