"""The job APIs tenants submit to Kueue: JobSet, Kubeflow Trainer (TrainJob) and the KubeRay operator.

Each is a pinned Helm release in its own namespace, on the system nodes, installed before Kueue (the
release graph in gpu_platform.k8s.releases orders them: Kueue manages their kinds, Trainer builds every
TrainJob as a JobSet). `queueing.jobApis` switches each off; Kueue's integrations, the tenant role and the
priority policy then leave its kinds out too (`kinds`).

- JobSet (kubernetes-sigs/jobset chart): two controller replicas with a PodDisruptionBudget, because its
  pod webhook (failurePolicy Fail) admits every pod of every JobSet; internal certificates.
- Kubeflow Trainer (kubeflow/trainer chart): `jobset.install: false`, JobSet is the release above (two
  copies collide on the same cluster-scoped names). The chart's runtimes are left off: it installs them
  from a post-install hook Job that runs `apk add kubectl` (egress to the Alpine mirror, which tenant and
  system namespaces do not have); the platform creates the `torch-distributed` ClusterTrainingRuntime
  itself, as upstream's manifests/base/runtimes/torch_distributed.yaml at the pinned tag writes it.
- KubeRay operator (ray-project/kuberay chart): no webhooks; `batchScheduler` stays off (Kueue needs none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.k8s.gpu_operator import controller_node_selector
from gpu_platform.k8s.objects import Manifest, create, metadata, release_in_namespace
from gpu_platform.spec.models import PlatformSpec

JOBSET, TRAINER, KUBERAY = "jobset", "kubeflow-trainer", "kuberay-operator"  # lockfile keys and release names
NAMESPACES = {JOBSET: "jobset-system", TRAINER: "kubeflow-system", KUBERAY: "kuberay-system"}
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
TORCH_RUNTIME = "torch-distributed"
TRAINER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"

# Per job API: (kind, Kueue framework, API group, version, plural) of every kind tenants create.
KINDS: dict[str, tuple[tuple[str, str, str, str, str], ...]] = {
    JOBSET: (("JobSet", "jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "v1alpha2", "jobsets"),),
    TRAINER: (("TrainJob", "trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "v1alpha1", "trainjobs"),),
    KUBERAY: (
        ("RayJob", "ray.io/rayjob", "ray.io", "v1", "rayjobs"),
        ("RayCluster", "ray.io/raycluster", "ray.io", "v1", "rayclusters"),
    ),
}


def installed(spec: PlatformSpec) -> list[str]:
    """The job API charts this stack installs, in install order."""
    apis = spec.queueing.job_apis
    return [chart for chart, on in ((JOBSET, apis.jobset), (TRAINER, apis.trainer), (KUBERAY, apis.ray)) if on]


def kinds(spec: PlatformSpec) -> list[tuple[str, str, str, str, str]]:
    """(kind, framework, group, version, plural) of every job kind the stack's installed job APIs serve."""
    return [k for chart in installed(spec) for k in KINDS[chart]]


def jobset_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of the JobSet chart (keys of its values.yaml at the pinned tag)."""
    return {
        "controller": {
            "replicas": 2,
            "nodeSelector": controller_node_selector(spec),
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
        }
    }


def trainer_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of the Kubeflow Trainer chart: JobSet from its own release, no data cache (LWS), no runtime hook."""
    return {
        "jobset": {"install": False},
        "dataCache": {"enabled": False},
        "manager": {"nodeSelector": controller_node_selector(spec)},
    }


def kuberay_values(spec: PlatformSpec) -> dict[str, Any]:
    """Helm values of the KubeRay operator chart."""
    return {"nodeSelector": controller_node_selector(spec)}


VALUES = {JOBSET: jobset_values, TRAINER: trainer_values, KUBERAY: kuberay_values}


def release_values(spec: PlatformSpec) -> dict[str, dict[str, Any]]:
    """Chart -> Helm values of each job API release this stack installs."""
    return {chart: VALUES[chart](spec) for chart in installed(spec)}


def torch_runtime(spec: PlatformSpec) -> Manifest:
    """The `torch-distributed` ClusterTrainingRuntime, as kubeflow/trainer manifests/base/runtimes/torch_distributed.yaml has it.

    One replicated job `node` whose container `node` each TrainJob's `trainer` (image, numNodes,
    resourcesPerNode) fills in (trainer pkg/runtime/core/trainingruntime.go `newRuntimeInfo`); the image is the
    lockfile's, so a TrainJob that names none runs a pinned one.
    """
    image = spec.lock.image("trainer-torch-runtime")
    node = {
        "metadata": {"labels": {TRAINER_STEP_LABEL: "trainer"}},
        "spec": {"template": {"spec": {"containers": [{"name": "node", "image": f"{image.repository}:{image.tag}"}]}}},
    }
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": metadata(TORCH_RUNTIME, labels={"trainer.kubeflow.org/framework": "torch"}),
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [{"name": "node", "template": node}]}}},
    }


def runtimes(spec: PlatformSpec) -> list[Manifest]:
    """The ClusterTrainingRuntimes the platform creates (none without Trainer)."""
    return [torch_runtime(spec)] if spec.queueing.job_apis.trainer else []


@dataclass(frozen=True)
class JobApisArgs:
    """Inputs of the JobApis component."""

    spec: PlatformSpec
    provider: k8s.Provider
    dependencies: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """The release graph (gpu_platform.k8s.releases): chart -> charts to install first (Trainer after JobSet)."""
    built: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    """Releases of the stack built before this component, by chart."""


class JobApis(pulumi.ComponentResource):
    """The JobSet, Kubeflow Trainer and KubeRay releases (as the stack enables them) and Trainer's runtime."""

    def __init__(self, name: str, args: JobApisArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:JobApis", name, None, opts)
        spec, provider = args.spec, args.provider
        self.releases: dict[str, pulumi.Resource] = {}
        for chart, values in release_values(spec).items():  # install order: a chart's dependencies come first
            done = {**args.built, **self.releases}
            after = tuple(done[dep] for dep in args.dependencies.get(chart, ()))
            ns = NAMESPACES[chart]
            self.releases[chart] = release_in_namespace(self, f"{name}-{chart}", chart, spec.lock.chart(chart), ns, values, provider, after)
        for runtime in runtimes(spec):
            opts_runtime = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.releases[TRAINER]])
            create(f"{name}-runtime-{runtime['metadata']['name']}", runtime, opts_runtime)
        self.register_outputs({})
