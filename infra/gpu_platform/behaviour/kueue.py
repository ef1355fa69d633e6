"""Kueue (the lockfile's release): which objects it manages, the Workload it builds from them, and flavor assignment.

Sources (kubernetes-sigs/kueue at the lockfile's tag) are cited per function. Flavor assignment is evaluated
against idle quota (no other workload admitted): it answers whether the workload can be admitted
at all and to which flavor first, not when.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from gpu_platform.behaviour import kueue_tas
from gpu_platform.behaviour.apimachinery import parse_quantity, selector_matches
from gpu_platform.behaviour.limitrange import container_items
from gpu_platform.behaviour.scheduler import affinity_matches, untolerated_taint

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_LOCAL_QUEUE = "default"
KUEUE_SYSTEM_NAMESPACE = "kueue-system"

# Kueue's built-in integrations (jobframework.GetIntegrationsList: every FrameworkName under pkg/controller/jobs).
KUEUE_FRAMEWORKS = frozenset(
    {
        "batch/job",
        "deployment",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/jaxjob",
        "kubeflow.org/mpijob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "pod",
        "ray.io/raycluster",
        "ray.io/rayjob",
        "ray.io/rayservice",
        "sparkoperator.k8s.io/sparkapplication",
        "statefulset",
        "trainer.kubeflow.org/trainjob",
        "workload.codeflare.dev/appwrapper",
    }
)
# Kinds a tenant creates -> the integration that manages them (pod-based kinds need `pod` too).
KIND_FRAMEWORK = {
    "Job": "batch/job",
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "Pod": "pod",
    "JobSet": "jobset.x-k8s.io/jobset",
    "TrainJob": "trainer.kubeflow.org/trainjob",
    "PyTorchJob": "kubeflow.org/pytorchjob",
    "MPIJob": "kubeflow.org/mpijob",
    "RayJob": "ray.io/rayjob",
    "RayCluster": "ray.io/raycluster",
}
POD_BASED = ("Pod", "Deployment", "StatefulSet")


def kueue_config_errors(config: Mapping[str, Any]) -> list[str]:
    """What Kueue's manager refuses at start-up in its Configuration (it exits, so nothing is admitted).

    kueue pkg/config/validation.go `validateIntegrations` (frameworks required and known) and
    `validatePodIntegrationOptions` / `validateManagedJobsNamespaceSelector` (with the pod integration a
    managedJobsNamespaceSelector is required, and it must not match kube-system or Kueue's namespace).
    """
    errors = []
    frameworks = (config.get("integrations") or {}).get("frameworks")
    if not frameworks:
        return ["integrations.frameworks: cannot be empty"]
    errors += [f"integrations.frameworks: unsupported value {f!r}" for f in frameworks if f not in KUEUE_FRAMEWORKS]
    selector = config.get("managedJobsNamespaceSelector")
    if "pod" in frameworks and selector is None:
        errors.append("managedJobsNamespaceSelector: cannot be empty when pod integration is enabled")
    if selector is not None:
        for ns in ("kube-system", config.get("namespace") or KUEUE_SYSTEM_NAMESPACE):
            if selector_matches(selector, {"kubernetes.io/metadata.name": ns}):
                errors.append(f"managedJobsNamespaceSelector: should not match the {ns!r} namespace")
    return errors


def kueue_manages(config: Mapping[str, Any], kind: str, namespace_labels: Mapping[str, str], queue_name: str | None = None) -> bool:
    """True when Kueue gates this new object (suspends it until a ClusterQueue admits it).

    jobframework utils.go `WorkloadShouldBeSuspended`: with a queue-name label always (given its
    integration is on; for pod-based kinds only in namespaces matching managedJobsNamespaceSelector,
    pod_webhook.go); without one only with manageJobsWithoutQueueName and a matching namespace.
    """
    frameworks = set((config.get("integrations") or {}).get("frameworks") or [])
    framework = KIND_FRAMEWORK[kind]
    if framework not in frameworks or (kind in ("Deployment", "StatefulSet") and "pod" not in frameworks):
        return False
    in_scope = selector_matches(config.get("managedJobsNamespaceSelector"), namespace_labels)
    if queue_name:
        return in_scope if kind in POD_BASED else True
    return bool(config.get("manageJobsWithoutQueueName")) and in_scope


@dataclass(frozen=True)
class PodSet:
    """One pod set of a Workload: name, pod count, the pod spec of its template and the template's annotations."""

    name: str
    count: int
    spec: Mapping[str, Any]
    annotations: Mapping[str, str] = field(default_factory=dict)
    """Where Kueue reads a pod set's topology request (jobframework tas.go podSetTopologyRequestBuilder: Template.Annotations)."""
    claimed: Mapping[str, int] = field(default_factory=dict)
    """Per pod, the devices its ResourceClaimTemplates claim under their mapped names (behaviour.dra.kueue_claim_requests)."""


def _template(holder: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    """(pod spec, pod template annotations) of a `template` holder."""
    template = holder.get("template") or {}
    return template.get("spec") or {}, (template.get("metadata") or {}).get("annotations") or {}


@dataclass(frozen=True)
class Workload:
    """What Kueue builds from a job: pod sets, the queue it names, its priority class reference."""

    kind: str
    name: str
    namespace: str
    pod_sets: tuple[PodSet, ...]
    queue_name: str | None
    priority_class: tuple[str, str] | None = None
    """(kind, name): ("WorkloadPriorityClass", x) from the label, ("PriorityClass", x) from a template."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _job_pods(job_spec: Mapping[str, Any]) -> int:
    """Kueue pkg/controller/jobs/job/job_controller.go `podsCount`: parallelism (default 1), at most completions."""
    n = _int(job_spec.get("parallelism"), 1)
    completions = job_spec.get("completions")
    return min(n, int(completions)) if completions is not None else n


def pod_sets(obj: Mapping[str, Any], runtimes: Sequence[Mapping[str, Any]] = ()) -> list[PodSet]:
    """The Workload's pod sets, per integration's `PodSets` (kueue pkg/controller/jobs/...).

    `runtimes`: the Kubeflow Trainer (Cluster)TrainingRuntimes a TrainJob may name.

    - Pod: pod/pod_controller.go `constructPodSets`, one pod set `main` of 1.
    - Job: job/job_controller.go `PodSets`, `main` x podsCount.
    - Deployment: deployment_webhook.go labels the template; every pod is its own single-pod Workload.
    - StatefulSet: statefulset_webhook.go `Default` groups the pods: one pod set x replicas.
    - JobSet: jobset/jobset_controller.go `PodSets`, one per replicatedJob x replicas x podsCount.
    - TrainJob: trainjob/trainjob_controller.go `PodSets` -> `getChildJobSet`: the JobSet Trainer builds from
      the runtime (`trainjob_pod_sets`), then the JobSet's pod sets.
    - PyTorchJob / MPIJob: kubeflowjob_controller.go `PodSets`, one per replica type in order.
    - RayJob / RayCluster: raycluster `BuildPodSets`, head (1) then each worker group x replicas.
    """
    kind = str(obj.get("kind"))
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return [PodSet("main", 1, spec, (obj.get("metadata") or {}).get("annotations") or {})]
    if kind == "Job":
        return [PodSet("main", _job_pods(spec), *_template(spec))]
    if kind == "Deployment":
        return [PodSet("main", 1, *_template(spec))]
    if kind == "StatefulSet":
        return [PodSet("main", _int(spec.get("replicas"), 1), *_template(spec))]
    if kind == "JobSet":
        out = []
        for rj in spec.get("replicatedJobs") or []:
            job = (rj.get("template") or {}).get("spec") or {}
            out.append(PodSet(str(rj.get("name")), _int(rj.get("replicas"), 1) * _job_pods(job), *_template(job)))
        return out
    if kind == "TrainJob":
        return trainjob_pod_sets(obj, runtimes)
    if kind in ("PyTorchJob", "MPIJob"):
        key = "pytorchReplicaSpecs" if kind == "PyTorchJob" else "mpiReplicaSpecs"
        order = ("Master", "Worker") if kind == "PyTorchJob" else ("Launcher", "Worker")
        replicas = spec.get(key) or {}
        names = [n for n in order if n in replicas] + sorted(n for n in replicas if n not in order)
        return [PodSet(n.lower(), _int(replicas[n].get("replicas"), 1), *_template(replicas[n])) for n in names]
    if kind in ("RayJob", "RayCluster"):
        cluster = spec.get("rayClusterSpec") if kind == "RayJob" else spec
        cluster = cluster or {}
        out = [PodSet("head", 1, *_template(cluster.get("headGroupSpec") or {}))]
        for g in cluster.get("workerGroupSpecs") or []:
            out.append(PodSet(str(g.get("groupName")), _int(g.get("replicas"), 1), *_template(g)))
        return out
    raise ValueError(f"kind {kind!r} has no Kueue integration here; allowed: {', '.join(sorted(KIND_FRAMEWORK))}")


TRAINER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def find_runtime(obj: Mapping[str, Any], runtimes: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The runtime a TrainJob's `spec.runtimeRef` names (kind defaults to ClusterTrainingRuntime; a TrainingRuntime is namespaced).

    kueue trainjob_controller.go `getRuntimeSpec`; no such runtime: "runtime '<name>' not found" and no Workload.
    """
    ref = (obj.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    namespace = None if kind == "ClusterTrainingRuntime" else (obj.get("metadata") or {}).get("namespace")
    for r in runtimes:
        meta = r.get("metadata") or {}
        if r.get("kind") == kind and meta.get("name") == ref.get("name") and meta.get("namespace") == namespace:
            return r
    return None


def trainjob_pod_sets(obj: Mapping[str, Any], runtimes: Sequence[Mapping[str, Any]]) -> list[PodSet]:
    """The pod sets of the JobSet Kubeflow Trainer builds for a TrainJob, as Kueue's TrainJob integration counts them.

    trainer (the release the lockfile's Kueue vendors; unchanged at the lockfile's Trainer tag) pkg/runtime/core/trainingruntime.go `newRuntimeInfo`:
    the replicated job labelled `trainjob-ancestor-step: trainer` runs `mlPolicy.numNodes` pods, which the
    TrainJob's `trainer.numNodes` replaces (plugins/torch `EnforceMLPolicy`); its container `node` takes the
    TrainJob's `trainer.image`, `command`, `args` and `resourcesPerNode`; plugins/jobset/builder.go `Trainer`
    forces that job's replicas to 1. `runtimePatches` add nodeSelector, tolerations and the like per
    replicated job. Then jobset_controller.go `PodSets`: one pod set per replicated job, replicas x pods.
    """
    runtime = find_runtime(obj, runtimes)
    ref = (obj.get("spec") or {}).get("runtimeRef") or {}
    if runtime is None:
        raise ValueError(f"runtime {ref.get('name')!r} not found")
    spec = obj.get("spec") or {}
    trainer = spec.get("trainer") or {}
    rspec = runtime.get("spec") or {}
    nodes = _int(trainer.get("numNodes"), _int((rspec.get("mlPolicy") or {}).get("numNodes"), 1))
    patches: dict[str, dict[str, Any]] = {}
    for patch in spec.get("runtimePatches") or []:
        for rj in ((((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []:
            pod = ((((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")) or {}
            patches.setdefault(str(rj.get("name")), {}).update(pod)
    out = []
    for rj in ((rspec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []:
        job_template = rj.get("template") or {}
        job = dict(job_template.get("spec") or {})
        pod = dict((job.get("template") or {}).get("spec") or {})
        replicas = _int(rj.get("replicas"), 1)
        if ((job_template.get("metadata") or {}).get("labels") or {}).get(TRAINER_STEP_LABEL) == "trainer":
            replicas, job["parallelism"], job["completions"] = 1, nodes, nodes
            containers = []
            for c in pod.get("containers") or []:
                filled = dict(c)
                if c.get("name") == "node":
                    filled |= {key: trainer[key] for key in ("image", "command", "args") if key in trainer}
                    if "resourcesPerNode" in trainer:
                        filled["resources"] = trainer["resourcesPerNode"]
                containers.append(filled)
            pod["containers"] = containers
        pod |= {k: v for k, v in patches.get(str(rj.get("name")), {}).items() if k != "containers"}
        out.append(PodSet(str(rj.get("name")), replicas * _job_pods(job), pod))
    return out


def priority_class(obj: Mapping[str, Any], sets: Sequence[PodSet]) -> tuple[str, str] | None:
    """The priority class Kueue gives the Workload: the workload priority label, else a pod template's class.

    kueue pkg/controller/jobframework/reconciler.go `ExtractPriority` and `extractPriorityFromPodSets`
    (the first pod set template with a priorityClassName).
    """
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(PRIORITY_LABEL):
        return ("WorkloadPriorityClass", str(labels[PRIORITY_LABEL]))
    for ps in sets:
        if ps.spec.get("priorityClassName"):
            return ("PriorityClass", str(ps.spec["priorityClassName"]))
    return None


def workload_for(obj: Mapping[str, Any], runtimes: Sequence[Mapping[str, Any]] = ()) -> Workload:
    """The Workload Kueue constructs for a job (jobframework reconciler.go `ConstructWorkload`)."""
    meta = obj.get("metadata") or {}
    sets = pod_sets(obj, runtimes)
    labels = meta.get("labels") or {}
    kind = str(obj.get("kind"))
    if kind in POD_BASED and kind != "Pod":
        labels = {**labels, **(((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels", {})}
    notes = []
    if kind == "Deployment":
        notes.append(f"each of the {_int((obj.get('spec') or {}).get('replicas'), 1)} replicas is its own single-pod Workload")
    if kind == "StatefulSet":
        notes.append(
            "Kueue's StatefulSet webhook (statefulset_webhook.go ValidateUpdate) refuses resizing while managed: "
            "scale to 0 and back up, never from N to M"
        )
    return Workload(
        kind,
        str(meta.get("name", "")),
        str(meta.get("namespace", "default")),
        tuple(sets),
        labels.get(QUEUE_LABEL),
        priority_class(obj, sets),
        tuple(notes),
    )


def _summary(limit_ranges: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Kueue pkg/util/limitrange/limitrange.go `Summarize` of the Container items (stored form, limitrange.stored_item).

    default / defaultRequest: the first value seen wins; max: the smallest; min: the largest.
    """
    out: dict[str, dict[str, Any]] = {"default": {}, "defaultRequest": {}, "max": {}, "min": {}}
    for item in container_items(limit_ranges):
        for key in ("default", "defaultRequest"):
            for k, v in (item.get(key) or {}).items():
                out[key].setdefault(k, v)
        for k, v in (item.get("max") or {}).items():
            out["max"][k] = v if k not in out["max"] else min(out["max"][k], v, key=parse_quantity)
        for k, v in (item.get("min") or {}).items():
            out["min"][k] = v if k not in out["min"] else max(out["min"][k], v, key=parse_quantity)
    return out


def _adjusted_pod_spec(spec: Mapping[str, Any], summary: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    out = dict(spec)
    for key in ("initContainers", "containers"):
        if not spec.get(key):
            continue
        containers = []
        for c in spec[key]:
            res = dict(c.get("resources") or {})
            limits = {**summary["default"], **(res.get("limits") or {})}
            requests = {**summary["defaultRequest"], **(res.get("requests") or {})}
            res["limits"], res["requests"] = limits, {**limits, **requests}
            containers.append({**c, "resources": res})
        out[key] = containers
    return out


def adjusted_workload(workload: Workload, limit_ranges: Sequence[Mapping[str, Any]]) -> Workload:
    """The Workload with the pod specs Kueue counts: kueue pkg/workload/resources.go `AdjustResources`.

    `handlePodLimitRange` first (the namespace's Container `default` fills missing limits, `defaultRequest`
    missing requests), then `handleLimitsToRequests` (UseLimitsAsMissingRequestsInPod: a limit fills a request
    still missing). The order matters: a container with only `limits: {memory: 512Mi}` gets a defaultRequest
    above 512Mi if the LimitRange has one, where the API server (limits first, SetDefaults_Pod) would not.
    """
    summary = _summary(limit_ranges)
    return replace(workload, pod_sets=tuple(PodSet(p.name, p.count, _adjusted_pod_spec(p.spec, summary), p.annotations) for p in workload.pod_sets))


def _greater(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """resource.go `GreaterKeys`: names present on both sides whose value in `a` is above `b`'s (sorted)."""
    return sorted(k for k in a if k in b and parse_quantity(a[k]) > parse_quantity(b[k]))


def admissibility_errors(workload: Workload, limit_ranges: Sequence[Mapping[str, Any]]) -> list[str]:
    """Kueue pkg/workload/resources.go `ValidateAdmissibility`: `ValidateResources`, then `ValidateLimitRange`.

    `workload` is as `adjusted_workload` leaves it: the scheduler (pkg/scheduler/scheduler.go `nominate`) validates
    the adjusted Info, and leaves a workload that fails either pending, QuotaReserved=False, with this message;
    Kueue compares only names present on both sides and never checks maxLimitRequestRatio.
    """
    summary = _summary(limit_ranges)
    invalid: list[str] = []
    outside: list[str] = []
    for i, ps in enumerate(workload.pod_sets):
        for key in ("initContainers", "containers"):
            for j, c in enumerate(ps.spec.get(key) or []):
                res = c.get("resources") or {}
                requests, limits = res.get("requests") or {}, res.get("limits") or {}
                at = f"spec.podSets[{i}].template.spec.{key}[{j}]"
                names = _greater(requests, limits)
                if names:
                    invalid.append(f"{at}: Invalid value: {names}: requests must not exceed its limits")
                highest = {k: max(v, limits.get(k, v), key=parse_quantity) for k, v in requests.items()}
                lowest = {k: min(v, limits.get(k, v), key=parse_quantity) for k, v in requests.items()}
                if names := _greater(highest, summary["max"]):
                    outside.append(f"{at}: Invalid value: {names}: requests must not be above the limitRange max")
                if names := _greater(summary["min"], lowest):
                    outside.append(f"{at}: Invalid value: {names}: requests must not be below the limitRange min")
    if invalid:
        return ["resources validation failed: " + "; ".join(invalid)]
    if outside:
        return ["resources didn't satisfy LimitRange constraints: " + "; ".join(outside)]
    return []


def pod_requests(spec: Mapping[str, Any], excluded_prefixes: Sequence[str] = ()) -> dict[str, Decimal]:
    """One pod's requests as Kueue counts them.

    kueue pkg/workload/resources.go `UseLimitsAsMissingRequestsInPod` (a limit stands in for a missing
    request), pkg/util/resource `PodRequests` semantics (sum of containers, at least each init
    container, plus overhead) and pkg/workload/workload.go `dropExcludedResources`.
    """
    total: dict[str, Decimal] = {}

    def container(c: Mapping[str, Any]) -> dict[str, Decimal]:
        res = c.get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {k: parse_quantity(v) for k, v in merged.items()}

    for c in spec.get("containers") or []:
        for k, v in container(c).items():
            total[k] = total.get(k, Decimal(0)) + v
    for c in spec.get("initContainers") or []:
        for k, v in container(c).items():
            total[k] = max(total.get(k, Decimal(0)), v)
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, Decimal(0)) + parse_quantity(v)
    return {k: v for k, v in total.items() if not any(k.startswith(p) for p in excluded_prefixes)}


def podset_requests(ps: PodSet, excluded_prefixes: Sequence[str] = ()) -> dict[str, Decimal]:
    """One pod's requests in Kueue's Workload: its containers' (pod_requests) plus its claims' mapped devices.

    kueue pkg/controller/core/workload_controller.go adds GetResourceRequestsForResourceClaimTemplates' sums to the
    pod set's requests before quota is reserved.
    """
    out = pod_requests(ps.spec, excluded_prefixes)
    for k, v in ps.claimed.items():
        out[k] = out.get(k, Decimal(0)) + Decimal(v)
    return out


@dataclass(frozen=True)
class FlavorChoice:
    """The flavor Kueue assigns one pod set's resource group, or why none fits."""

    pod_set: str
    resources: tuple[str, ...]
    flavor: str | None
    borrows: bool
    tried: tuple[str, ...]
    """One line per flavor considered before (and including) the chosen one, Kueue's reasons."""


def _quota(cq: Mapping[str, Any], flavor: str, resource: str) -> Mapping[str, Any] | None:
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for f in group.get("flavors") or []:
            if f.get("name") == flavor:
                for r in f.get("resources") or []:
                    if r.get("name") == resource:
                        return r
    return None


def cohort_lendable(queues: Sequence[Mapping[str, Any]], cq: Mapping[str, Any], flavor: str, resource: str) -> Decimal:
    """What the other ClusterQueues of the cohort can lend for a flavor/resource: lendingLimit, else nominal.

    kueue pkg/cache/scheduler/resource_node.go `calculateLendable` (a queue lends at most its lendingLimit).
    """
    cohort = (cq.get("spec") or {}).get("cohortName")
    if not cohort:
        return Decimal(0)
    total = Decimal(0)
    for other in queues:
        if other is cq or (other.get("spec") or {}).get("cohortName") != cohort:
            continue
        q = _quota(other, flavor, resource)
        if q is not None:
            total += parse_quantity(q.get("lendingLimit", q.get("nominalQuota", 0)))
    return total


def flavor_mismatch(pod_spec: Mapping[str, Any], name: str, flavor: Mapping[str, Any]) -> str | None:
    """Why a ResourceFlavor cannot serve a pod set whatever the quota, or None.

    kueue pkg/scheduler/flavorassigner/flavorassigner.go `checkFlavorForPodSets`: the flavor's nodeTaints
    must be tolerated by the pod's tolerations plus the flavor's own, and its nodeLabels must not
    contradict the pod's node selector or required affinity (only the flavor's label keys count,
    `flavorSelector`).
    """
    spec = flavor.get("spec") or {}
    taint = untolerated_taint(spec.get("nodeTaints") or [], [*(pod_spec.get("tolerations") or []), *(spec.get("tolerations") or [])])
    if taint is not None:
        return f"untolerated taint {taint['key']}={taint.get('value', '')}:{taint['effect']}"
    labels = spec.get("nodeLabels") or {}
    if not affinity_matches(pod_spec, labels, only_keys=set(labels)):
        return f"flavor {name} doesn't match node affinity"
    return None


def assign_flavors(
    workload: Workload,
    cq: Mapping[str, Any],
    flavors: Mapping[str, Mapping[str, Any]],
    queues: Sequence[Mapping[str, Any]],
    excluded_prefixes: Sequence[str] = (),
) -> list[FlavorChoice]:
    """Per pod set and resource group, the flavor Kueue picks with the quota idle.

    kueue pkg/scheduler/flavorassigner/flavorassigner.go `findFlavorForPodSets`: a resource no group
    covers is "unavailable in ClusterQueue"; flavors are tried in the group's order;
    `checkFlavorForPodSets` skips a flavor (`flavor_mismatch`); `fitsResourceQuota` fits within nominal, or by borrowing up to
    the borrowingLimit from what the cohort lends; `shouldTryNextFlavor` goes on past a flavor that
    needs borrowing when whenCanBorrow is TryNextFlavor, keeping the best (non-borrowing) one found.
    """
    spec = cq.get("spec") or {}
    groups = spec.get("resourceGroups") or []
    when_borrow = (spec.get("flavorFungibility") or {}).get("whenCanBorrow", "MayStopSearch")
    out: list[FlavorChoice] = []
    for ps in workload.pod_sets:
        requests = {k: v * ps.count for k, v in podset_requests(ps, excluded_prefixes).items() if v > 0}
        for name in sorted(requests):
            if not any(name in g.get("coveredResources", []) for g in groups):
                out.append(FlavorChoice(ps.name, (name,), None, False, (f"resource {name} unavailable in ClusterQueue {cq['metadata']['name']}",)))
        for group in groups:
            wanted = {k: v for k, v in requests.items() if k in group.get("coveredResources", [])}
            if not wanted:
                continue
            tried: list[str] = []
            best: tuple[str, bool] | None = None
            for f in group.get("flavors") or []:
                fname = f["name"]
                mismatch = flavor_mismatch(ps.spec, fname, flavors.get(fname) or {})
                if mismatch is None:
                    mismatch = kueue_tas.flavor_refusal(cq, flavors, fname, group.get("coveredResources") or [], ps.annotations, sorted(requests))
                if mismatch is not None:
                    tried.append(f"{fname}: {mismatch}")
                    continue
                borrows, fits, why = False, True, ""
                for res, val in wanted.items():
                    q = _quota(cq, fname, res) or {}
                    nominal = parse_quantity(q.get("nominalQuota", 0))
                    if val <= nominal:
                        continue
                    lend = cohort_lendable(queues, cq, fname, res)
                    limit = q.get("borrowingLimit")
                    borrowable = min(lend, parse_quantity(limit)) if limit is not None else lend
                    if val <= nominal + borrowable:
                        borrows = True
                    else:
                        fits = False
                        why = f"insufficient quota for {res} in flavor {fname}, request > maximum capacity ({val} > {nominal + borrowable})"
                        break
                if not fits:
                    tried.append(f"{fname}: {why}")
                    continue
                tried.append(f"{fname}: fits{' by borrowing from cohort ' + str(spec.get('cohortName')) if borrows else ' in nominal quota'}")
                if not borrows:
                    best = (fname, False)
                    break
                if best is None:
                    best = (fname, True)
                if when_borrow != "TryNextFlavor":
                    break
            out.append(FlavorChoice(ps.name, tuple(sorted(wanted)), best[0] if best else None, bool(best and best[1]), tuple(tried)))
    return out


_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def _go_seconds(text: str) -> float:
    """Seconds of a Go duration as metav1.Duration reads it (time.ParseDuration: "1h30m", "10m", "0s")."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def recovery_timeout_seconds(config: Mapping[str, Any]) -> float | None:
    """How long an admitted, running workload may lack a ready pod before Kueue evicts and requeues it; None: never.

    apis/config/v1beta2/defaults.go `SetDefaults_Configuration`: waitForPodsReady is on even when unset, `timeout`
    defaults to 30m (DefaultWaitForPodsReadyTimeout), `recoveryTimeout` to `timeout`, and "0s" turns it off
    (configuration_types.go `WaitForPodsReady.RecoveryTimeout`); pkg/controller/core/workload_controller.go
    then evicts the workload with reason PodsReadyTimeout once the PodsReady=False (WaitForRecovery) condition
    is older than it, and the requeuing strategy puts it back in its queue after the backoff.
    """
    wait = config.get("waitForPodsReady") or {}
    if not isinstance(wait, Mapping):
        return None
    # `if cfg.WaitForPodsReady.Timeout.Duration == 0`: an unset or zero timeout becomes 30m.
    timeout = (_go_seconds(wait["timeout"]) if wait.get("timeout") else 0.0) or 1800.0
    recovery = _go_seconds(wait["recoveryTimeout"]) if wait.get("recoveryTimeout") is not None else timeout
    return recovery or None
