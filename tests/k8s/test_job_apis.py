"""The job APIs tenants are promised (JobSet, Kubeflow Trainer's TrainJob, KubeRay's RayJob/RayCluster) are installed.

Kueue manages a kind only once its CRD is served (jobframework setup.go defers the rest); the tenant role and the
priority policy name it; `kubectl apply` of a kind with no CRD answers "no matches for kind". Every kind named in
one of those three places must be served by a release of the stack, installed before Kueue, and no other kind named.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.explain.stages import explain
from gpu_platform.explain.view import StackView
from gpu_platform.k8s import job_apis, kueue
from gpu_platform.k8s.isolation import priority_policy, tenant_cluster_role
from gpu_platform.k8s.platform import installed_releases, release_graph
from gpu_platform.spec.models import JobApis, PlatformSpec
from tests.conftest import plan_for, spec_for
from tests.foundation.bad_stack import assert_one_clear_line
from tests.journeys.journey import assert_refused
from tests.k8s.charts import crd_groups, dependencies
from tests.k8s.test_charts import rendered

# Groups tenants reach that are no job API: built-in kinds, Kueue's and Volcano's own, and DRA claims (resource.k8s.io, read-only)
BUILT_IN_GROUPS = (
    "",
    "batch",
    "apps",
    "kueue.x-k8s.io",
    "batch.volcano.sh",
    "networking.k8s.io",
    "policy",
    "scheduling.volcano.sh",
    "resource.k8s.io",
)


def _kueue_config(stack: str) -> dict[str, Any]:
    (release,) = [r for r in plan_for(stack).of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kueue"]
    return yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])


def _job_groups(spec: PlatformSpec) -> dict[str, set[str]]:
    """Per place (kueue, role, policy): the API groups of job kinds it names beyond the built-in ones."""
    frameworks = kueue.frameworks(spec)
    role = {g for rule in tenant_cluster_role(spec)["rules"] for g in rule["apiGroups"]}
    rules = priority_policy(spec)["spec"]["matchConstraints"]["resourceRules"]
    policy = {g for rule in rules for g in rule["apiGroups"]}
    return {
        "kueue": {f.split("/")[0] for f in frameworks if "/" in f and "." in f.split("/")[0]},
        "role": role - set(BUILT_IN_GROUPS),
        "policy": policy - set(BUILT_IN_GROUPS),
    }


def test_every_job_kind_kueue_manages_is_served_by_a_release_installed_before_kueue(stack: str) -> None:
    spec = spec_for(stack)
    config = _kueue_config(stack)
    assert config["integrations"]["frameworks"] == kueue.frameworks(spec)
    assert "kubeflow.org/pytorchjob" not in kueue.frameworks(spec) and "kubeflow.org/mpijob" not in kueue.frameworks(spec)
    out = rendered(stack)
    served = {g.split("/")[0]: o.release.chart for o in out.values() for g in crd_groups(o.objects)}
    plan = plan_for(stack)
    kueue_release = next(name for name, o in out.items() if o.release.chart == "kueue")
    deps = dependencies(plan, kueue_release)
    chart_resource = {o.release.chart: name for name, o in out.items()}
    places = _job_groups(spec)
    assert places["kueue"] == places["role"] == places["policy"] == {"jobset.x-k8s.io", "trainer.kubeflow.org", "ray.io"}
    for group in places["kueue"]:
        assert group in served, f"Kueue manages {group} kinds but no release of {stack} serves their CRD"
        assert chart_resource[served[group]] in deps, f"{served[group]} (CRDs of {group}) is not installed before Kueue"


def test_jobset_is_installed_once(stack: str) -> None:
    """Kubeflow Trainer's own JobSet subchart is off (`jobset.install: false`): one CRD, one controller in the cluster."""
    out = rendered(stack)
    crds = [o for r in out.values() for o in r.objects if o.get("kind") == "CustomResourceDefinition" and o["spec"]["group"] == "jobset.x-k8s.io"]
    controllers = [
        o
        for r in out.values()
        for o in r.objects
        if o.get("kind") == "Deployment" and any("jobset/jobset:" in c["image"] for c in o["spec"]["template"]["spec"]["containers"])
    ]
    assert len(crds) == 1 and len(controllers) == 1, (len(crds), [c["metadata"]["name"] for c in controllers])
    trainer = next(r for r in out.values() if r.release.chart == "kubeflow-trainer")
    assert not any(o.get("kind") == "Deployment" and "jobset" in o["metadata"]["name"] for o in trainer.objects)


def test_every_trainjob_runtime_the_platform_creates_needs_no_hook_and_is_pinned(stack: str) -> None:
    """The chart's runtime installer is a hook Job that `apk add`s kubectl from the internet; the platform creates the runtime itself."""
    out = rendered(stack)
    trainer = next(r for r in out.values() if r.release.chart == "kubeflow-trainer")
    assert not [o for o in trainer.objects if o.get("kind") == "Job"], "no helm hook Job (runtimes installer) renders"
    runtimes = [r for r in plan_for(stack).resources if r.type == "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"]
    assert [r.inputs["metadata"]["name"] for r in runtimes] == ["torch-distributed"]
    image = runtimes[0].inputs["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"]
    lock = spec_for(stack).lock.image("trainer-torch-runtime")
    assert image == f"{lock.repository}:{lock.tag}"
    trainer_release = next(r for r in plan_for(stack).resources if r.type.endswith("helm.sh/v3:Release") and r.inputs["name"] == "kubeflow-trainer")
    assert trainer_release.name in plan_for(stack).named(runtimes[0].name).depends_on


@pytest.mark.parametrize("off", ["ray", "trainer"])
def test_a_job_api_switched_off_is_named_nowhere_and_explain_says_so(off: str) -> None:
    spec = spec_for("prod")
    variant = spec.model_copy(update={"queueing": spec.queueing.model_copy(update={"job_apis": JobApis(**{off: False})})})
    group = {"ray": "ray.io", "trainer": "trainer.kubeflow.org"}[off]
    places = _job_groups(variant)
    assert all(group not in groups for groups in places.values()), places
    charts = set(installed_releases(variant, load_catalog()))
    assert {"ray": "kuberay-operator", "trainer": "kubeflow-trainer"}[off] not in charts
    assert release_graph(variant, load_catalog())["kueue"] == sorted([*job_apis.installed(variant), "kube-prometheus-stack"])
    kind, api = {"ray": ("RayJob", "ray.io/v1"), "trainer": ("TrainJob", "trainer.kubeflow.org/v1alpha1")}[off]
    job = {"apiVersion": api, "kind": kind, "metadata": {"name": "j", "namespace": spec.tenants[0].ns}, "spec": {}}
    assert_refused(explain(StackView(variant, load_catalog()), job), "api", f'no matches for kind "{kind}"')


def test_trainer_without_jobset_is_one_clear_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def mutate(doc: Any) -> None:
        doc["config"].setdefault("gpu-platform:queueing", {})["jobApis"] = {"jobset": False}

    assert_one_clear_line(tmp_path, capsys, "trainer-no-jobset", "prod", mutate, "gpu-platform:queueing.jobApis.trainer", "jobset is off")
