"""The stages a workload passes through, in order, each reproducing one component (gpu_platform.behaviour).

namespace -> api -> admission-policy -> pod-resources (a Pod) -> kueue-managed -> local-queue -> priority ->
kueue-resources -> resource-claims (pods with `resourceClaims`: DRA) ->
kueue-flavor -> kueue-fallback -> pod-admission -> pod-resources (a job's pods) -> node-pool ->
network -> device-resources -> autoscaler -> volcano -> capacity. A blocked stage ends the walk: what follows
it never happens. `network` asks the NetworkPolicy evaluator (gpu_platform.behaviour.networkpolicy) whether
the pods reach DNS, the API server and their data; a path that is closed is a warning (the pods run, and fail at what they cannot reach).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal

from gpu_platform.behaviour import (
    admission,
    core_validation,
    decode,
    dra,
    kueue,
    kueue_tas,
    limitrange,
    multikueue,
    networkpolicy,
    pod_security,
    resourcequota,
    scheduler,
    volcano,
)
from gpu_platform.behaviour.apimachinery import parse_quantity
from gpu_platform.explain.view import PoolView, StackView
from gpu_platform.federation import federated_spec, worker_spec
from gpu_platform.k8s.kueue import CPU_FLAVOR, WHOLE_NODES_QUEUE
from gpu_platform.k8s.tenant_network import cluster_services, destinations
from gpu_platform.pools import gpus_per_node, spot_quota_gpus

Result = Literal["ok", "blocked", "warning"]
Verdict = Literal["runs", "waits", "never"]
FLEETING = ("spot", "capacity-block")


@dataclass(frozen=True)
class Step:
    """One stage's outcome; `capacity` marks a warning that depends on capacity existing now."""

    stage: str
    result: Result
    detail: str
    source: str
    capacity: bool = False

    def to_json(self) -> dict[str, str]:
        """The contract's step: stage, result, detail, source."""
        return {"stage": self.stage, "result": self.result, "detail": self.detail, "source": self.source}


@dataclass
class Explanation:
    """What the platform does with one workload."""

    kind: str
    name: str
    namespace: str
    steps: list[Step] = field(default_factory=list)
    cluster_queue: str | None = None
    flavor: str | None = None
    pool: str | None = None

    @property
    def verdict(self) -> Verdict:
        """never: a stage blocks; waits: admissible but relies on capacity that may not exist now; else runs."""
        if any(s.result == "blocked" for s in self.steps):
            return "never"
        if any(s.capacity for s in self.steps):
            return "waits"
        return "runs"

    def step(self, stage: str) -> Step | None:
        """The step of that stage, if the walk reached it."""
        return next((s for s in self.steps if s.stage == stage), None)

    def to_json(self) -> dict[str, Any]:
        """The JSON contract of `explain --format json`."""
        return {
            "workload": {"kind": self.kind, "name": self.name, "namespace": self.namespace},
            "verdict": self.verdict,
            "clusterQueue": self.cluster_queue,
            "flavor": self.flavor,
            "pool": self.pool,
            "steps": [s.to_json() for s in self.steps],
        }


class Blocked(Exception):
    """Raised by a stage that ends the walk."""


class Walk:
    """One workload's walk through the stages over one stack's objects."""

    def __init__(self, view: StackView, obj: Mapping[str, Any]):
        self.view = view
        self.obj = obj
        meta = obj.get("metadata") or {}
        self.out = Explanation(str(obj.get("kind")), str(meta.get("name", "")), str(meta.get("namespace") or "default"))
        self.ns: Mapping[str, Any] = {}
        self.workload: kueue.Workload | None = None
        self.submitted: kueue.Workload | None = None  # the Workload as built from the object, before Kueue adjusts it
        self.choices: list[kueue.FlavorChoice] = []
        self.cq: Mapping[str, Any] = {}
        self.devices: dict[str, dict[str, int]] = {}  # pod set -> DeviceClass -> devices one pod claims (DRA)

    def add(self, stage: str, result: Result, detail: str, source: str, capacity: bool = False) -> None:
        """Record a step; a blocked one ends the walk."""
        self.out.steps.append(Step(stage, result, detail, source, capacity))
        if result == "blocked":
            raise Blocked(stage)

    def run(self, quota_only: bool = False) -> Explanation:
        """Every stage in order, until one blocks; `quota_only`: up to Kueue's quota reservation (a MultiKueue manager)."""
        try:
            self.namespace()
            self.api()
            self.admission_policy()
            if self.out.kind == "Pod":
                self.pod_resources("pod-resources", [("main", 1, dict(self.obj.get("spec") or {}))])
            self.kueue_managed()
            self.local_queue()
            self.priority()
            self.kueue_resources()
            self.resource_claims()
            self.flavor()
            if quota_only:
                return self.out
            self.topology()
            self.fallback()
            self.pod_admission()
            pools = self.node_pool()
            self.network()
            fitting = self.device_resources(pools)
            self.autoscaler(fitting)
            self.volcano()
            self.capacity(fitting)
        except Blocked:
            pass
        return self.out

    # --- admission -----------------------------------------------------------------------------
    def namespace(self) -> None:
        """The namespace must be a tenant's: elsewhere tenants have no rights and no quota."""
        ns = self.view.find("Namespace", self.out.namespace)
        tenants = sorted(t.ns for t in self.view.spec.tenants)
        if ns is None:
            self.add(
                "namespace",
                "blocked",
                f"{self.out.namespace} is not a tenant namespace of this stack; tenants: {', '.join(tenants)}",
                "gpu_platform.k8s.tenants.namespace",
            )
        self.ns = ns or {}
        self.add("namespace", "ok", f"tenant namespace {self.out.namespace}", "gpu_platform.k8s.tenants.namespace")

    def api(self) -> None:
        """The API server serves the object's kind: built-in kinds always, others only where a release brought their CRD."""
        api = str(self.obj.get("apiVersion", ""))
        served = self.view.served_versions(self.out.kind)
        src = "apimachinery pkg/api/meta restmapper.go NoKindMatchError (kubectl: ensure CRDs are installed first)"
        if api not in served:
            have = f"; this stack serves {self.out.kind} as {', '.join(served)}" if served else ""
            self.add("api", "blocked", f'no matches for kind "{self.out.kind}" in version "{api}"{have}', src)
        refused = core_validation.object_errors(self.obj)
        if refused:
            src = (
                "apimachinery serializer (decoding); pkg/api/validation objectmeta.go ValidateObjectMeta; "
                "pkg/apis/core/validation validation.go validatePodResourceClaim, validateResourceClaimNames"
            )
            self.add("api", "blocked", f"the API server refuses the {self.out.kind}: {'; '.join(refused)}", src)
        self.add("api", "ok", f"{self.out.kind} {api} is served", src)

    def admission_policy(self) -> None:
        """ValidatingAdmissionPolicies on the object itself (priority, Volcano job kinds)."""
        req = admission.request_for(self.obj, self.ns)
        refused = admission.denials(self.view.objects, req)
        src = "apiserver plugin/policy/validating validator.go Validate (gpu_platform.behaviour.admission)"
        if refused:
            self.add("admission-policy", "blocked", "; ".join(f"{d.policy} refuses the {self.out.kind}: {d.message}" for d in refused), src)
        self.add("admission-policy", "ok", f"the {self.out.kind} passes every Deny-bound ValidatingAdmissionPolicy", src)

    def kueue_managed(self) -> None:
        """Kueue gates the object (suspends it until a ClusterQueue admits it)."""
        config = self.view.kueue_config
        src = "kueue jobframework utils.go WorkloadShouldBeSuspended"
        if config is None:
            self.add("kueue-managed", "warning", "Kueue is not enabled on this stack: nothing gates GPU quota", src)
            return
        if self.out.kind not in kueue.KIND_FRAMEWORK:
            self.add(
                "kueue-managed", "blocked", f"Kueue has no integration for {self.out.kind}; allowed: {', '.join(sorted(kueue.KIND_FRAMEWORK))}", src
            )
        try:
            workload = kueue.workload_for(self.obj, self.view.runtimes)
        except ValueError as e:  # a TrainJob naming a runtime that does not exist
            self.add("kueue-managed", "blocked", f"Kueue cannot build the Workload: {e}", src + "; trainjob_controller.go getRuntimeSpec")
            return
        self.workload = self.submitted = workload
        labels = ((self.ns.get("metadata") or {}).get("labels")) or {}
        if not kueue.kueue_manages(config, self.out.kind, labels, workload.queue_name):
            self.add("kueue-managed", "warning", f"Kueue does not manage this {self.out.kind} here: it runs outside every quota", src)
            return
        notes = "; ".join(workload.notes)
        self.add(
            "kueue-managed",
            "ok",
            f"Kueue manages it as a Workload of {len(workload.pod_sets)} pod set(s)" + (f"; {notes}" if notes else ""),
            src,
        )

    def local_queue(self) -> None:
        """LocalQueue (queue-name label, else the namespace's `default`) and its ClusterQueue."""
        if self.workload is None:
            return
        name = self.workload.queue_name or kueue.DEFAULT_LOCAL_QUEUE
        src = "kueue jobframework ApplyDefaultLocalQueue; queue manager.go AddOrUpdateWorkload"
        lq = self.view.find("LocalQueue", name, self.out.namespace)
        if lq is None:
            self.add("local-queue", "blocked", f"LocalQueue {self.out.namespace}/{name} does not exist: the Workload stays pending", src)
        cq_name = str(lq["spec"]["clusterQueue"])  # type: ignore[index]
        cq = self.view.find("ClusterQueue", cq_name)
        if cq is None:
            self.add("local-queue", "blocked", f"ClusterQueue {cq_name} does not exist", src)
        self.cq = cq or {}
        self.out.cluster_queue = cq_name
        self.add("local-queue", "ok", f"LocalQueue {self.out.namespace}/{name} -> ClusterQueue {cq_name}", src)

    def priority(self) -> None:
        """Kueue's priority for the Workload, and the admission policies on the Workload it creates."""
        if self.workload is None:
            return
        src = "kueue jobframework reconciler.go ExtractPriority; util/priority GetPriorityFromPriorityClass"
        ref = self.workload.priority_class
        value = 0
        if ref is not None:
            kind, name = ref
            found = self.view.find(kind, name)
            if found is None:
                self.add("priority", "blocked", f"{kind} {name} does not exist: Kueue cannot create the Workload", src)
            value = int(found["value"])  # type: ignore[index]
        wl: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": self.out.name, "namespace": self.out.namespace},
            "spec": {
                "podSets": [{"name": p.name, "count": p.count, "template": {"spec": dict(p.spec)}} for p in self.workload.pod_sets],
                "priority": value,
            },
        }
        if ref is not None:
            group = "kueue.x-k8s.io" if ref[0] == "WorkloadPriorityClass" else "scheduling.k8s.io"
            wl["spec"]["priorityClassRef"] = {"group": group, "kind": ref[0], "name": ref[1]}
        refused = admission.denials(self.view.objects, admission.request_for(wl, self.ns))
        if refused:
            detail = "; ".join(f"{d.policy} refuses the Workload Kueue creates: {d.message}" for d in refused)
            self.add("priority", "blocked", detail, src + "; apiserver validating admission policy on kueue.x-k8s.io workloads")
        what = f"{ref[0]} {ref[1]} (value {value})" if ref else "no priority class: priority 0"
        self.add("priority", "ok", f"Workload priority {what}", src)

    def pod_resources(self, stage: str, sets: list[tuple[str, int, dict[str, Any]]]) -> None:
        """The API server on each pod created: defaults, LimitRanger, request/limit validation, then the ResourceQuota.

        behaviour.limitrange `admitted_pod` (SetDefaults_Pod, LimitRanger, validateResourceRequirements) and
        behaviour.resourcequota `admit_pod` over an otherwise idle namespace: every pod of every set counts.
        """
        src = (
            "kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Pod; plugin/pkg/admission/limitranger/admission.go; "
            "pkg/apis/core/validation validateResourceRequirements; resourcequota controller.go checkRequest, evaluator/core/pods.go"
        )
        ns = self.out.namespace
        ranges, quotas = self.view.of_kind("LimitRange", ns), self.view.of_kind("ResourceQuota", ns)
        level = ((self.ns.get("metadata") or {}).get("labels") or {}).get(pod_security.LABEL, "privileged")
        used: dict[str, Decimal] = {}
        for name, count, spec in sets:
            self._priority_admission(stage, name, spec)
            refused_psa = pod_security.violations({"kind": "Pod", "metadata": {}, "spec": spec}, level)
            if refused_psa:
                detail = f"pod set {name}: Pod Security {level} of namespace {ns} refuses the pods: " + "; ".join(refused_psa)
                self.add(stage, "blocked", detail, "k8s.io/pod-security-admission policy checks (gpu_platform.behaviour.pod_security)")
            pod, refused = limitrange.admitted_pod(spec, ranges)
            if refused:
                self.add(stage, "blocked", f"pod set {name}: the API server refuses its pods: " + "; ".join(refused), src)
            for _ in range(count):
                refusal = resourcequota.admit_pod(quotas, pod, used)
                if refusal:
                    self.add(stage, "blocked", f'pod set {name}: pods "{self.out.name}" is forbidden: {refusal}', src)
                used = resourcequota.add(used, resourcequota.pod_usage(pod))
        counted = {k.removeprefix("requests."): v for k, v in used.items() if k.startswith("requests.")}
        self.add(stage, "ok", f"the pods pass LimitRange defaults and the namespace's ResourceQuota, together requesting {_fmt(counted)}", src)

    def _priority_admission(self, stage: str, name: str, spec: Mapping[str, Any]) -> None:
        """The API server's Priority admission (kubernetes plugin/pkg/admission/priority/admission.go `admitPod`).

        The class must exist, and a given `spec.priority` must equal the value computed from it (no class and no
        global default: 0).
        """
        src = "kubernetes plugin/pkg/admission/priority/admission.go admitPod"
        computed = 0
        if spec.get("priorityClassName"):
            found = self.view.find("PriorityClass", str(spec["priorityClassName"]))
            if found is None:
                self.add(stage, "blocked", f"pod set {name}: no PriorityClass with name {spec['priorityClassName']} was found", src)
            computed = int((found or {}).get("value", 0))
        given = spec.get("priority")
        if given is not None and int(given) != computed:
            detail = (
                f"pod set {name}: the integer value of priority ({given}) must not be provided in pod spec; "
                f"priority admission controller computed {computed} from the given PriorityClass name"
            )
            self.add(stage, "blocked", detail, src)

    def kueue_resources(self) -> None:
        """Kueue's own view of the pods' resources: LimitRange defaults, limits as missing requests, then its admissibility checks."""
        if self.workload is None:
            return
        src = "kueue pkg/workload/resources.go AdjustResources, ValidateAdmissibility (ValidateResources, ValidateLimitRange)"
        ranges = self.view.of_kind("LimitRange", self.out.namespace)
        self.workload = kueue.adjusted_workload(self.workload, ranges)
        errors = kueue.admissibility_errors(self.workload, ranges)
        if errors:
            self.add("kueue-resources", "blocked", f"the Workload stays pending (QuotaReserved=False): {'; '.join(errors)}", src)
        self.add("kueue-resources", "ok", "requests after LimitRange defaults are within the containers' limits", src)

    def resource_claims(self) -> None:
        """Pods that claim devices through DRA: the templates, Kueue's count of them, and the namespace's device quota.

        gpu_platform.behaviour.dra `kueue_claim_requests` (kueue pkg/dra/claims.go; a named ResourceClaim is
        inadmissible); the resourceclaim controller creates each pod's claims from the templates (a missing template:
        no claim, the pod stays pending), and the ResourceQuota admission counts their devices per DeviceClass
        (kubernetes pkg/quota/v1/evaluator/core/resource_claims.go). Kueue adds the mapped counts to the pod sets'
        requests, so flavor assignment below charges them to quota.
        """
        sets = list(self.workload.pod_sets) if self.workload is not None else kueue.pod_sets(self.obj, self.view.runtimes)
        if not any(ps.spec.get("resourceClaims") for ps in sets):
            return
        src = (
            "kueue pkg/dra/claims.go GetResourceRequestsForResourceClaimTemplates, countDevicesPerClass; pkg/workload/workload.go "
            "HasResourceClaim; kubernetes pkg/controller/resourceclaim, pkg/quota/v1/evaluator/core/resource_claims.go"
        )
        ns = self.out.namespace
        templates = {str(t["metadata"]["name"]): t for t in self.view.of_kind("ResourceClaimTemplate", ns)}
        mappings = ((self.view.kueue_config or {}).get("resources") or {}).get("deviceClassMappings") or []
        quotas = self.view.of_kind("ResourceQuota", ns)
        lines: list[str] = []
        unseen: list[str] = []
        adjusted: list[kueue.PodSet] = []
        for ps in sets:
            if not ps.spec.get("resourceClaims"):
                adjusted.append(ps)
                continue
            claims = dra.kueue_claim_requests(ps.spec, templates, mappings if self.workload is not None else None)
            if claims.missing_template is not None:
                have = ", ".join(sorted(templates)) or "none"
                detail = (
                    f"pod set {ps.name}: ResourceClaimTemplate {ns}/{claims.missing_template} does not exist, so no claim is made for the "
                    f"pods and they stay pending; this namespace's templates: {have}"
                )
                self.add("resource-claims", "blocked", detail, src)
            if claims.error is not None and self.workload is not None:
                self.add("resource-claims", "blocked", f"pod set {ps.name}: the Workload is inadmissible (QuotaReserved=False): {claims.error}", src)
            self.devices[ps.name] = dict(claims.devices)
            containers = list(ps.spec.get("containers") or []) + list(ps.spec.get("initContainers") or [])
            seen = {str(c.get("name")) for ctr in containers for c in ((ctr.get("resources") or {}).get("claims") or [])}
            unseen += [f"pod set {ps.name}: {rc.get('name')}" for rc in ps.spec.get("resourceClaims") or [] if str(rc.get("name")) not in seen]
            adjusted.append(replace(ps, claimed=claims.requests))
            counted = ", ".join(f"{n} {k}" for k, n in sorted(claims.requests.items()))
            lines.append(
                f"pod set {ps.name}: each pod claims "
                + ", ".join(f"{n} {c} device(s)" for c, n in sorted(claims.devices.items()))
                + (f"; Kueue counts them as {counted}" if self.workload is not None else "")
            )
        if self.out.kind == "Pod":
            # A Pod exists at once, so the resourceclaim controller creates its claims one by one, each judged by the
            # quota admission against the claims before it. A job's pods (and claims) exist only once Kueue admits the
            # job, which the flavor stage below judges against the ClusterQueue's quota.
            self._claims_quota(quotas, templates, sets, src)
        if self.workload is not None:
            self.workload = replace(self.workload, pod_sets=tuple(adjusted))
        within = "; within the namespace's device quota" if self.out.kind == "Pod" else ""
        self.add("resource-claims", "ok", "; ".join(lines) + within, src)
        if unseen:
            # kubelet cm/dra manager: a container gets the CDI devices of the claims its resources.claims lists, only those.
            detail = (
                f"claims no container lists in resources.claims ({', '.join(unseen)}): the devices are allocated and charged, "
                "but no container sees them"
            )
            self.add("resource-claims", "warning", detail, "kubernetes pkg/kubelet/cm/dra manager.go GetResources (container claims only)")

    def _claims_quota(self, quotas: Sequence[Mapping[str, Any]], templates: Mapping[str, Any], sets: list[kueue.PodSet], src: str) -> None:
        """Each claim of the pod, created in order, through the ResourceQuota admission (behaviour.resourcequota)."""
        used: dict[str, Decimal] = {}
        for ps in sets:
            for rc in ps.spec.get("resourceClaims") or []:
                template = templates.get(str(rc.get("resourceClaimTemplateName")))
                if template is None:
                    continue
                counted, _ = dra.count_devices(((template.get("spec") or {}).get("spec")) or {})
                usage = resourcequota.resource_claim_usage(counted)
                for q in quotas:
                    refusal = resourcequota.exceeded(q, usage, used)
                    if refusal:
                        claim = f"{self.out.name}-{rc.get('name')}"
                        detail = f'resourceclaims "{claim}" is forbidden: {refusal} (the claim is refused at creation and the pod stays pending)'
                        self.add("resource-claims", "blocked", detail, src)
                used = resourcequota.add(used, usage)

    # --- Kueue flavor assignment ---------------------------------------------------------------
    def flavor(self) -> None:
        """Kueue's flavor assignment with the quota idle."""
        if self.workload is None:
            return
        config = self.view.kueue_config or {}
        excluded = tuple((config.get("resources") or {}).get("excludeResourcePrefixes") or ())
        flavors = {f["metadata"]["name"]: f for f in self.view.of_kind("ResourceFlavor")}
        self.choices = kueue.assign_flavors(self.workload, self.cq, flavors, self.view.of_kind("ClusterQueue"), excluded)
        src = "kueue scheduler/flavorassigner/flavorassigner.go findFlavorForPodSets, checkFlavorForPodSets, fitsResourceQuota"
        failed = [c for c in self.choices if c.flavor is None]
        if failed:
            detail = "; ".join(f"pod set {c.pod_set} ({', '.join(c.resources)}): " + "; ".join(c.tried) for c in failed)
            whole = self.view.find("LocalQueue", WHOLE_NODES_QUEUE, self.out.namespace)
            if whole is not None and self.out.cluster_queue != whole["spec"]["clusterQueue"]:
                detail += f"; this tenant's whole-node pools' quota is in another queue: label the job kueue.x-k8s.io/queue-name: {WHOLE_NODES_QUEUE}"
            self.add("kueue-flavor", "blocked", f"{self._no_flavor_summary(failed)}no flavor admits it: {detail}", src)
        gpu = [c for c in self.choices if c.flavor != CPU_FLAVOR]
        self.out.flavor = (gpu or self.choices)[0].flavor if self.choices else None
        detail = "; ".join(f"pod set {c.pod_set} {'/'.join(c.resources)} -> {c.flavor}" + (" (borrowing)" if c.borrows else "") for c in self.choices)
        self.add("kueue-flavor", "ok", detail or "requests nothing Kueue counts", src)

    def _no_flavor_summary(self, failed: list[kueue.FlavorChoice]) -> str:
        """A plain reason first when every flavor was skipped for the pod's node selector: no quota for what it selects."""
        if not all(c.tried and all("doesn't match node affinity" in t for t in c.tried) for c in failed):
            return ""
        wl = self.workload
        selector = dict(wl.pod_sets[0].spec.get("nodeSelector") or {}) if wl and wl.pod_sets else {}
        picked = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
        return f"ClusterQueue {self.out.cluster_queue} has no quota for {picked or 'the node affinity asked'}: "

    def topology(self) -> None:
        """Per-node placement on a topology-aware flavor, replayed on the pool's nodes with nothing else running.

        kueue pkg/cache/scheduler/tas_flavor_snapshot.go FindTopologyAssignment (gpu_platform.behaviour.kueue_tas): the
        pod sets are placed one after another as Kueue's `whole-nodes` queue places them (implied, unconstrained at the
        hostname); a pod set that does not fit the empty pool is never admitted.
        """
        if self.workload is None:
            return
        src = "kueue pkg/cache/scheduler/tas_flavor_snapshot.go FindTopologyAssignment, findLevelWithFitDomains (TASProfileMixed)"
        placed: dict[str, list[kueue_tas.Node]] = {}
        details = []
        for c in self.choices:
            flavor = self.view.find("ResourceFlavor", str(c.flavor)) or {}
            pool = self._pool_of_flavor(c.flavor)
            if "topologyName" not in (flavor.get("spec") or {}) or pool is None:
                continue
            ps = next(p for p in self.workload.pod_sets if p.name == c.pod_set)
            topology = self.view.find("Topology", str(flavor["spec"]["topologyName"])) or {}
            levels = [str(lv.get("nodeLabel")) for lv in (topology.get("spec") or {}).get("levels") or []]
            mode, level = _topology_request(ps.annotations)
            if level is not None and level not in levels:
                # tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS: HasLevel (the flavor is skipped)
                self.add("kueue-topology", "blocked", f'pod set {ps.name}: flavor "{c.flavor}" does not contain the requested level {level}', src)
            nodes = placed.setdefault(pool.pool.name, _empty_nodes(pool))
            # What the view cannot know of the nodes (on-prem cpu and memory) is left out, as _checkable does.
            request = {k: v for k, v in _tas_request(kueue.pod_requests(ps.spec)).items() if k in nodes[0].free} if nodes else {}
            # Nodes' network layers are not known offline: every node counts in one domain per layer above the hostname.
            for n in nodes:
                n.path = tuple("any" for _ in levels[:-1])
            depth = levels.index(level) + 1 if level is not None else None
            where = kueue_tas.place(nodes, ps.count, request, mode, depth)
            if where is None:
                empty = _empty_nodes(pool)
                whole = kueue_tas.fits(empty[0], request) if empty else 0
                short = [
                    f"{k} {_unit(k, v)} > {_unit(k, empty[0].free.get(k, 0))}"
                    for k, v in sorted(request.items())
                    if empty and v > empty[0].free.get(k, 0)
                ]
                limit = f"; a pod asks more than a node has: {', '.join(short)}" if short else ""
                if mode == "required" and not short:
                    limit = f"; podset-required-topology {level} puts every pod in one such domain"
                self.add(
                    "kueue-topology",
                    "blocked",
                    f"pod set {ps.name}: {ps.count} pods of {_brief(request)} do not fit {pool.pool.name}'s {len(empty)} nodes "
                    f"({whole} such pods per node{limit}): Kueue never admits it",
                    src,
                )
                return
            kueue_tas.admit(nodes, where, request)
            per = ", ".join(f"{n} x{k}" for n, k in sorted(where.items()))
            details.append(f"pod set {ps.name}: {ps.count} pods on {len(where)} of {pool.pool.name}'s {len(nodes)} nodes ({per})")
        if details:
            self.add("kueue-topology", "ok", "; ".join(details) + "; admitted only when these nodes have room", src)

    def fallback(self) -> None:
        """Where pods admitted to a Spot or Capacity Block flavor go when that capacity does not come."""
        for c in self.choices:
            pool = self._pool_of_flavor(c.flavor)
            if pool is None or pool.pool.capacity not in FLEETING:
                continue
            flavor = self.view.find("ResourceFlavor", str(c.flavor)) or {}
            labels = (flavor.get("spec") or {}).get("nodeLabels") or {}
            tolerations = (flavor.get("spec") or {}).get("tolerations") or []
            reach = [
                p.pool.name
                for p in self.view.pools
                if p.pool.capacity not in FLEETING
                and all(p.labels.get(k) == v for k, v in labels.items())
                and scheduler.untolerated_taint(p.taints, tolerations) is None
            ]
            src = (
                "kueue ResourceFlavor nodeLabels (podset.go Merge into nodeSelector); cluster-autoscaler expander/priority, "
                "aws auto_scaling_groups.go isNodeGroupAvailable"
            )
            if reach:
                # The fallback's real size against what the flavor admits (every tenant's quota on it).
                gpus = sum(p.max_nodes * gpus_per_node(p.pool, self.view.catalog) for p in self.view.pools if p.pool.name in reach)
                quota = spot_quota_gpus(self.view.spec, pool.pool, self.view.catalog)
                size = f"{gpus} GPUs on demand for the flavor's {quota} GPUs of quota"
                detail = (
                    f"{c.flavor} ({pool.pool.capacity}) pods may also land on {', '.join(reach)} ({size}): "
                    f"the autoscaler scales those when {pool.pool.name} cannot"
                )
                self.add("kueue-fallback", "ok" if gpus >= quota else "warning", detail, src, capacity=gpus < quota)
            else:
                detail = (
                    f"{c.flavor} pins the pods to {pool.pool.capacity} pool {pool.pool.name}; "
                    "no pool outside Spot/Capacity Blocks matches the flavor, so the pods wait for that capacity"
                )
                self.add("kueue-fallback", "warning", detail, src, capacity=True)

    def pod_admission(self) -> None:
        """The controller's pods meet the ValidatingAdmissionPolicies on pods."""
        if self.workload is None or self.submitted is None or self.out.kind == "Pod":
            return
        src = "apiserver plugin/policy/validating validator.go Validate on the pods the job controller creates"
        for ps in self.workload.pod_sets:
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{self.out.name}-{ps.name}", "namespace": self.out.namespace},
                "spec": self.admitted_spec(ps),  # the template as Kueue left it on admission: flavor labels and tolerations
            }
            refused = admission.denials(self.view.objects, admission.request_for(pod, self.ns))
            if refused:
                detail = "; ".join(f"{d.policy} refuses pod set {ps.name}'s pods: {d.message}" for d in refused)
                self.add("pod-admission", "blocked", detail + " (the Workload is admitted and holds quota with nothing running)", src)
        self.add("pod-admission", "ok", "the pods pass every Deny-bound ValidatingAdmissionPolicy", src)
        # The controller creates the pods from the job's own templates (not Kueue's adjusted copy).
        self.pod_resources("pod-resources", [(p.name, p.count, dict(p.spec)) for p in self.submitted.pod_sets])

    # --- placement ------------------------------------------------------------------------------
    def admitted_spec(self, ps: kueue.PodSet) -> dict[str, Any]:
        """The pod spec after admission: flavors' nodeLabels merged into nodeSelector, their tolerations appended.

        kueue pkg/podset/podset.go `FromAssignment` + `Merge` (what RunWithPodSetsInfo injects).
        """
        spec = dict(ps.spec)
        selector = dict(spec.get("nodeSelector") or {})
        tolerations = list(spec.get("tolerations") or [])
        for c in self.choices:
            if c.pod_set != ps.name or c.flavor is None:
                continue
            flavor = (self.view.find("ResourceFlavor", c.flavor) or {}).get("spec") or {}
            selector |= flavor.get("nodeLabels") or {}
            tolerations += flavor.get("tolerations") or []
        spec["nodeSelector"] = selector
        spec["tolerations"] = tolerations
        return spec

    def pod_sets(self) -> list[tuple[str, int, dict[str, Any]]]:
        """(name, count, admitted pod spec) per pod set (the object's own spec without Kueue)."""
        if self.workload is None:
            sets = kueue.pod_sets(self.obj, self.view.runtimes)
            return [(p.name, p.count, dict(p.spec)) for p in sets]
        return [(p.name, p.count, self.admitted_spec(p)) for p in self.workload.pod_sets]

    def node_pool(self) -> dict[str, list[PoolView]]:
        """Pools whose nodes pass NodeAffinity and TaintToleration for each pod set."""
        out: dict[str, list[PoolView]] = {}
        src = "kube-scheduler plugins nodeaffinity Filter, tainttoleration Filter (gpu_platform.behaviour.scheduler)"
        for name, _, spec in self.pod_sets():
            ok, why = [], []
            for p in self.view.pools:
                taint = scheduler.untolerated_taint(p.taints, spec.get("tolerations") or [])
                if taint is not None:
                    why.append(f"{p.pool.name}: untolerated taint {taint['key']}={taint.get('value', '')}:{taint['effect']}")
                elif not scheduler.affinity_matches(spec, p.labels):
                    why.append(f"{p.pool.name}: node selector/affinity does not match")
                else:
                    ok.append(p)
            if not ok and _asks_gpu(spec):
                self.add("node-pool", "blocked", self._no_pool(name, spec, why), src)
            out[name] = ok
        detail = "; ".join(f"pod set {n}: {', '.join(p.pool.name for p in ps) or 'system nodes only'}" for n, ps in out.items())
        self.add("node-pool", "ok", detail, src)
        return out

    def _no_pool(self, name: str, spec: Mapping[str, Any], why: list[str]) -> str:
        """Why no pool takes the pod set, naming the pools the tenant's own selector picked and what they advertise."""
        own = next((dict(p.spec) for p in (self.workload.pod_sets if self.workload else ()) if p.name == name), dict(spec))
        wanted = [p for p in self.view.pools if scheduler.affinity_matches(own, p.labels)]
        asks = sorted(k for k, v in kueue.pod_requests(spec).items() if v > 0 and "/" in k)
        if wanted and len(wanted) < len(self.view.pools):
            picked = "; ".join(f"pool {p.pool.name}, which {_offers(p)}" for p in wanted)
            flavors = ", ".join(sorted({str(c.flavor) for c in self.choices if c.pod_set == name and c.flavor}))
            held = f"; Kueue admitted it on flavor {flavors}, whose node labels exclude those pools: the pods stay pending" if flavors else ""
            return f"pod set {name} asks {', '.join(asks)}; the pods select {picked}{held}"
        return f"pod set {name}: no GPU pool's nodes pass the filters: " + "; ".join(why)

    def network(self) -> None:
        """NetworkPolicy reach from the workload's pods to DNS, the API server and its data paths."""
        tenant = next((t for t in self.view.spec.tenants if t.ns == self.out.namespace), None)
        if tenant is None:
            return
        src = (
            'gpu_platform.behaviour.networkpolicy.connection (Kubernetes docs "Network Policies"; networking/v1 types.go); '
            "EKS Services: vpc_cni_service_connection (aws-network-policy-agent tc.v4egress.bpf.c handle_egress)"
        )
        labels = self._pod_labels()
        pod = networkpolicy.Endpoint(self.out.namespace, labels, None)
        reached: list[str] = []
        closed: list[str] = []
        for name, service in cluster_services(self.view.spec):
            # EKS: the VPC CNI's policy agent judges a Service call at its ClusterIP, before kube-proxy's DNAT.
            port, protocol = service.ports[0].port, service.ports[0].protocol
            decision = networkpolicy.vpc_cni_service_connection(self.view.objects, pod, service, port, protocol)
            (reached if decision.allowed else closed).append(
                f"{name} {service.cluster_ip}:{port}/{protocol}" + ("" if decision.allowed else f" ({decision.reason})")
            )
        for name, namespace, pod_labels, address, port, protocol in destinations(self.view.spec, tenant):
            dst = networkpolicy.Endpoint(namespace, pod_labels, address)
            decision = networkpolicy.connection(self.view.objects, pod, dst, port, protocol)
            (reached if decision.allowed else closed).append(
                f"{name} {address}:{port}/{protocol}" + ("" if decision.allowed else f" ({decision.reason})")
            )
        if closed:
            self.add(
                "network", "warning", "the pods cannot reach " + "; ".join(closed) + (f"; they reach {', '.join(reached)}" if reached else ""), src
            )
        else:
            self.add("network", "ok", "the pods reach " + ", ".join(reached), src)

    def _pod_labels(self) -> dict[str, str]:
        """The labels of the workload's pods: a Pod's own, else its (first) pod template's."""
        if self.out.kind == "Pod":
            return dict((self.obj.get("metadata") or {}).get("labels") or {})
        stack: list[Any] = [self.obj.get("spec") or {}]
        while stack:
            node = stack.pop(0)
            if isinstance(node, Mapping):
                template = node.get("template")
                if isinstance(template, Mapping) and isinstance(template.get("spec"), Mapping) and "containers" in template["spec"]:
                    return dict((template.get("metadata") or {}).get("labels") or {})
                stack.extend(v for v in node.values() if isinstance(v, Mapping | list))
            elif isinstance(node, list):
                stack.extend(node)
        return {}

    def device_resources(self, pools: dict[str, list[PoolView]]) -> dict[str, list[PoolView]]:
        """NodeResourcesFit of each pod against what one node of each pool advertises, and room for the pod set."""
        src = (
            "kube-scheduler noderesources/fit.go fitsRequest; NVIDIA device plugin resources per pool (gpu_platform.pools.resources_per_gpu); "
            "dynamicresources Filter (claims' devices from the node's ResourceSlices, gpu_platform.behaviour.dra.node_fits)"
        )
        fitting: dict[str, list[PoolView]] = {}
        lines = []
        for name, count, spec in self.pod_sets():
            requests = kueue.pod_requests(spec)
            if not _asks_gpu(spec):
                fitting[name] = pools.get(name, [])
                continue
            ok, why = [], []
            claimed = self.devices.get(name, {})
            for p in pools.get(name, []):
                short = scheduler.insufficient(_checkable(requests, p.allocatable), p.allocatable)
                if short:
                    why.append(f"{p.pool.name}: " + ", ".join(short))
                    continue
                refused = dra.node_fits(claimed, p.devices)
                if refused:
                    kind = "a device-plugin pool" if not p.devices else "a DRA pool"
                    why.append(f"{p.pool.name} ({kind}): {refused}")
                    continue
                per_node = _pods_per_node(requests, p.allocatable)
                if claimed:
                    per_node = min([per_node, *(p.devices[c] // n for c, n in claimed.items() if n > 0)])
                if per_node * p.max_nodes < count:
                    why.append(f"{p.pool.name}: {count} pods need {-(-count // per_node)} nodes, the pool has at most {p.max_nodes}")
                    continue
                ok.append(p)
            if not ok:
                self.add("device-resources", "blocked", f"pod set {name}: " + "; ".join(why), src)
            fitting[name] = ok
            lines.append(f"pod set {name} ({count} x {_fmt(requests)}) fits {', '.join(p.pool.name for p in ok)}")
        if fitting and not self.out.pool:
            first = next((ps[0] for ps in fitting.values() if ps), None)
            self.out.pool = first.pool.name if first else None
        self.add("device-resources", "ok", "; ".join(lines) or "asks no GPU resources", src)
        return fitting

    def autoscaler(self, fitting: dict[str, list[PoolView]]) -> None:
        """Whether the pool has nodes up, or the autoscaler can scale it from zero for these pods."""
        src = "cluster-autoscaler cloudprovider/aws/aws_manager.go buildNodeFromTemplate + scheduler filters on the template node"
        lines: list[str] = []
        for name, _, spec in self.pod_sets():
            if not _asks_gpu(spec):
                continue
            requests = kueue.pod_requests(spec)
            found, scalable = [], False
            for p in fitting.get(name, []):
                if p.template is None:
                    found.append(f"{p.pool.name}: on-prem, {p.max_nodes} fixed nodes")
                    scalable = True
                    continue
                t = p.template
                short = scheduler.insufficient(_checkable(requests, t.allocatable), t.allocatable)
                tainted = scheduler.untolerated_taint(t.taints, spec.get("tolerations") or []) is not None
                if tainted or short or not scheduler.affinity_matches(spec, t.labels):
                    why = ", ".join(short) or "labels/taints"
                    found.append(f"{p.pool.name}: the autoscaler's template node does not fit ({why}), it never scales this group for these pods")
                    scalable = scalable or p.min_nodes > 0
                    continue
                found.append(f"{p.pool.name}: {p.min_nodes} nodes always up, scales to {p.max_nodes} from the node-template tags")
                scalable = True
            if not scalable:
                self.add("autoscaler", "blocked", f"pod set {name}: " + "; ".join(found), src)
            lines.append(f"pod set {name}: " + "; ".join(found))
        if lines:
            self.add("autoscaler", "ok", " | ".join(lines), src)

    def volcano(self) -> None:
        """For pods scheduled by Volcano: the PodGroup's queue and its capability."""
        sets = [(n, c, s) for n, c, s in self.pod_sets() if s.get("schedulerName") == volcano.SCHEDULER_NAME]
        if not sets:
            return
        src = "volcano pg_controller_handler.go buildPodGroupFromPod; webhooks podgroups/mutate createPodGroupPatch; proportion/capacity plugin"
        if not self.view.spec.queueing.volcano.enabled:
            self.add("volcano", "blocked", "schedulerName volcano on a stack without Volcano: no scheduler binds the pods", src)
        template = ((self.obj.get("spec") or {}).get("template") or {}).get("metadata") or (self.obj.get("metadata") or {})
        ns_annotations = ((self.ns.get("metadata") or {}).get("annotations")) or {}
        queue_name, why = volcano.podgroup_queue(template.get("annotations") or {}, ns_annotations, self.view.volcano_admissions)
        queue = self.view.find("Queue", queue_name)
        if queue is None:
            self.add("volcano", "blocked", f"PodGroup queue {queue_name} ({why}) does not exist: the pods are never scheduled", src)
        total: dict[str, Decimal] = {}
        for _, count, spec in sets:
            for k, v in kueue.pod_requests(spec).items():
                total[k] = total.get(k, Decimal(0)) + v * count
        capped = volcano.capability_blocks(queue or {}, total)
        if capped:
            self.add("volcano", "blocked", f"PodGroup lands in queue {queue_name} ({why}), which caps it: " + "; ".join(capped), src)
        self.add("volcano", "ok", f"PodGroup lands in queue {queue_name} ({why})", src)

    def capacity(self, fitting: dict[str, list[PoolView]]) -> None:
        """Capacity that may not exist now: Spot, a Capacity Block outside its dates."""
        fleeting = {p.pool.name: p.pool.capacity for ps in fitting.values() for p in ps if p.pool.capacity in FLEETING}
        stable = {p.pool.name for ps in fitting.values() for p in ps if p.pool.capacity not in FLEETING}
        if not fleeting:
            return
        src = "EC2 Spot / Capacity Blocks; cluster-autoscaler expander/priority (Spot first, on-demand next)"
        names = ", ".join(f"{n} ({c})" for n, c in sorted(fleeting.items()))
        if stable:
            self.add("capacity", "warning", f"{names} may have no capacity now; the pods can also use {', '.join(sorted(stable))}", src)
        else:
            self.add("capacity", "warning", f"only {names} can take the pods, and that capacity may not exist now", src, capacity=True)

    def _pool_of_flavor(self, flavor: str | None) -> PoolView | None:
        for p in self.view.pools:
            if p.pool.name == flavor:
                return p
        return None


def _topology_request(annotations: Mapping[str, str]) -> tuple[kueue_tas.Mode, str | None]:
    """(mode, requested level) of a pod set, as jobframework tas.go podSetTopologyRequestBuilder reads them.

    Required wins over preferred over unconstrained; no annotation in a TAS-only queue is `unconstrained` at the lowest
    level (isTASImplied).
    """
    if "kueue.x-k8s.io/podset-required-topology" in annotations:
        return "required", annotations["kueue.x-k8s.io/podset-required-topology"]
    if "kueue.x-k8s.io/podset-preferred-topology" in annotations:
        return "preferred", annotations["kueue.x-k8s.io/podset-preferred-topology"]
    return "unconstrained", None


def _tas_request(requests: Mapping[str, Decimal]) -> dict[str, int]:
    """A pod's requests in TAS's integer units: millicores, MiB, and whole units of everything else."""
    out = {}
    for name, v in requests.items():
        if name == "cpu":
            out[name] = int(v * 1000)
        elif name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
            out[name] = int(v / (1 << 20))
        else:
            out[name] = int(v)
    return {k: v for k, v in out.items() if v > 0}


def _empty_nodes(pool: PoolView) -> list[kueue_tas.Node]:
    """The pool's nodes at full size with nothing on them, in TAS's units (what explain can know of them)."""
    free = _tas_request({k: parse_quantity(v) for k, v in pool.allocatable.items()})
    free["pods"] = 110
    return [kueue_tas.Node(f"{pool.pool.name}-{i}", dict(free)) for i in range(pool.max_nodes)]


def _unit(name: str, value: int) -> str:
    """A TAS quantity as a user writes it: cores, GiB, or the count."""
    if name == "cpu":
        return f"{value / 1000:g}"
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return f"{value / 1024:g}Gi"
    return str(value)


def _brief(request: Mapping[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(request.items()) if "/" in k) or "no GPUs"


def _checkable(requests: Mapping[str, Decimal], allocatable: Mapping[str, Any]) -> dict[str, Decimal]:
    """The requests whose node amount the view knows.

    Extended resources and hugepages always (absent means 0); cpu, memory and scratch disk where the
    instance type says (on-prem nodes' are unknown).
    """
    return {k: v for k, v in requests.items() if k in allocatable or "/" in k or k.startswith("hugepages-")}


def _offers(pool: PoolView) -> str:
    """What a pool's nodes give pods: extended resources, or (DRA) devices by ResourceClaim only."""
    if pool.devices:
        return f"gives GPUs only by ResourceClaim (DRA devices of class {', '.join(sorted(pool.devices))}, no extended resource)"
    return f"advertises {', '.join(sorted(k for k in pool.allocatable if '/' in k))}"


def _asks_gpu(spec: Mapping[str, Any]) -> bool:
    """A GPU by extended resource (the device plugin) or by ResourceClaim (DRA)."""
    return bool(spec.get("resourceClaims")) or any(k.startswith("nvidia.com/") and v > 0 for k, v in kueue.pod_requests(spec).items())


def _pods_per_node(requests: Mapping[str, Decimal], allocatable: Mapping[str, Any]) -> int:
    fits = [int(parse_quantity(allocatable[k]) // v) for k, v in requests.items() if v > 0 and k in allocatable]
    return max(1, min(fits)) if fits else 1


def _fmt(requests: Mapping[str, Decimal]) -> str:
    def one(v: Decimal) -> str:
        gib = v / 2**30
        return f"{gib.normalize():f}Gi" if v >= 2**30 and gib == gib.to_integral_value() else f"{v.normalize():f}"

    return "{" + ", ".join(f"{k}: {one(v)}" for k, v in sorted(requests.items())) + "}"


def job_from_cronjob(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Job a CronJob creates at each run (kubernetes pkg/controller/cronjob/utils.go `getJobFromTemplate2`).

    The jobTemplate's labels, annotations and spec; the name is the CronJob's plus the scheduled time.
    """
    meta = obj.get("metadata") or {}
    template = (obj.get("spec") or {}).get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    job_meta = {"name": f"{meta.get('name', '')}-29000000", "namespace": meta.get("namespace") or "default"}
    for key in ("labels", "annotations"):
        if tmeta.get(key):
            job_meta[key] = dict(tmeta[key])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": dict(template.get("spec") or {})}


def explain(view: StackView, obj: Mapping[str, Any]) -> Explanation:
    """Walk one workload manifest through every stage over a stack's objects (a MultiKueue manager's: `federation`).

    A CronJob runs nothing itself: each run's Job is what Kueue manages (its Job integration does not ask who
    created the Job), so the walk follows the Job its jobTemplate makes.
    """
    if view.spec.workers:
        return federation(view, obj)
    return _explain_one(view, obj)


def federation(view: StackView, obj: Mapping[str, Any]) -> Explanation:
    """A workload submitted to a MultiKueue manager: its admission there, then the workers in dispatch order.

    The manager's Kueue reserves quota against the workers' summed quota (federation.federated_spec); the incremental
    dispatcher then nominates the workers in the MultiKueueConfig's order, `stepSize` a round, a round every five
    minutes, and the first worker whose own Kueue admits the workload runs it (behaviour.multikueue.dispatch). A
    worker admits when its walk gets past Kueue's flavor assignment; its stages follow, prefixed with its name.
    """
    spec = view.spec
    manager = Walk(StackView(federated_spec(spec), view.catalog), obj).run(quota_only=True)
    src = "kueue pkg/controller/workloaddispatcher/incrementaldispatcher.go nominateWorkers (gpu_platform.behaviour.multikueue)"
    if manager.verdict == "never":
        return manager
    manager.steps.append(Step("multikueue", "ok", "quota reserved on the manager against the workers' summed quota; MultiKueue dispatches it", src))
    walks = {w.name: _explain_one(StackView(worker_spec(spec, i), view.catalog), obj) for i, w in enumerate(spec.workers)}
    admitted = {name for name, e in walks.items() if _admits(e)}
    step = multikueue.step_size(view.kueue_config or {}) or multikueue.DEFAULT_STEP_SIZE
    walk = multikueue.dispatch(list(walks), step, lambda w: 0 if w in admitted else None)
    rounds = "; ".join(f"minute {r.at_s // 60}: {', '.join(r.nominated)}" for r in walk.rounds)
    if walk.worker is None:
        why = "; ".join(f"{name}: {(e.step('kueue-flavor') or e.steps[-1]).detail}" for name, e in walks.items())
        manager.steps.append(Step("dispatch", "blocked", f"no worker's own quota admits it ({rounds}): {why}", src))
        return manager
    chosen = walks[walk.worker]
    manager.steps.append(Step("dispatch", "ok", f"nominated {rounds}; worker {walk.worker} admits it", src))
    manager.steps += [replace(s, stage=f"{walk.worker}/{s.stage}") for s in chosen.steps]
    manager.cluster_queue, manager.flavor, manager.pool = chosen.cluster_queue, chosen.flavor, chosen.pool
    return manager


def _admits(e: Explanation) -> bool:
    """A worker's own Kueue admits the workload: its walk got through flavor assignment (quota reserved there)."""
    flavor = e.step("kueue-flavor")
    return flavor is not None and flavor.result != "blocked"


def _explain_one(view: StackView, obj: Mapping[str, Any]) -> Explanation:
    """Walk one workload manifest through every stage over one cluster's objects."""
    obj, refused = decode.decoded(obj, view.spec.lock.kubernetes.version)
    if refused:
        # The body is decoded into the kind's Go type before any other check (namespace lifecycle included).
        raw = obj.get("metadata")
        meta: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        name, namespace = meta.get("name"), meta.get("namespace")
        e = Explanation(str(obj.get("kind")), name if isinstance(name, str) else "", namespace if isinstance(namespace, str) else "default")
        why = f"the API server refuses the {e.kind}: {'; '.join(refused)}"
        src = "apimachinery runtime/serializer/json (encoding/json into the kind's Go type; gpu_platform.behaviour.decode)"
        e.steps.append(Step("api", "blocked", why, src))
        return e
    if obj.get("kind") == "CronJob" and str(obj.get("apiVersion")) == "batch/v1":
        e = Walk(view, job_from_cronjob(obj)).run()
        meta = obj.get("metadata") or {}
        e.kind, e.name = "CronJob", str(meta.get("name", ""))
        first = Step(
            "cronjob",
            "ok",
            "each scheduled run creates a Job from spec.jobTemplate; Kueue manages that Job, walked below",
            "kubernetes pkg/controller/cronjob/cronjob_controllerv2.go syncCronJob, utils.go getJobFromTemplate2",
        )
        e.steps.insert(0, first)
        return e
    return Walk(view, obj).run()
