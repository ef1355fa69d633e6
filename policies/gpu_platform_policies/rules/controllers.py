"""Controllers' own acceptance logic: what the DCGM exporter, Kueue, Volcano and Helm do with the values we hand them.

Each rule repeats the check the consuming component runs (cited per rule), so the gate fails where the
component would refuse the object or silently ignore a setting.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from gpu_platform.behaviour.admission import Request, denials
from gpu_platform.behaviour.apimachinery import selector_matches
from gpu_platform.behaviour.kueue import KIND_FRAMEWORK, kueue_config_errors, kueue_manages
from gpu_platform.behaviour.rbac import rules_allow
from gpu_platform.behaviour.volcano import queue_errors as volcano_queue_errors
from gpu_platform.k8s.dcgm import CsvError, read_metrics_csv
from gpu_platform.k8s.releases import CRD_GROUPS
from gpu_platform.k8s.tenant_network import LABEL_OWNER, PLATFORM_OWNER
from gpu_platform.k8s.tenants import LABEL_LOAD_BALANCERS
from gpu_platform.versions import OCI
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.view import (
    HELM_RELEASE,
    chart_name,
    cluster_role_rules,
    get,
    helm_releases,
    namespace_of,
    object_name,
    objects,
    tenant_namespaces,
)

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DCGM_METRICS_FILE = "dcgm-metrics.csv"
VOLCANO_QUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"


@rule(
    "dcgm-metrics-parse",
    "The DCGM exporter's metrics CSV parses as the exporter reads it: Go csv, 3 fields, known DCGM fields and Prometheus types.",
    "mandatory",
    "resource",
    category="controllers",
    types=(CONFIG_MAP,),
)
def dcgm_metrics_parse(r: Resource, ctx: Context) -> Iterator[str]:
    """dcgm-exporter exits on a file it cannot read (counter_config.go ReadCSVFile/ExtractCounters), and every GPU alert goes dark."""
    text = (r.inputs.get("data") or {}).get(DCGM_METRICS_FILE)
    if not isinstance(text, str):
        return
    try:
        read_metrics_csv(text)
    except CsvError as exc:
        yield f"data.{DCGM_METRICS_FILE}: dcgm-exporter would exit: {exc}"


@rule(
    "helm-chart-locatable",
    "Helm releases name OCI charts as chart: oci://... with no repositoryOpts, and classic charts with an https repository.",
    "mandatory",
    "resource",
    category="controllers",
    types=(HELM_RELEASE,),
)
def helm_chart_locatable(r: Resource, ctx: Context) -> Iterator[str]:
    """The Pulumi provider (helm_release.go resolveChartName/locateChart) fetches index.yaml from any repo URL: an OCI registry there fails at up."""
    chart = str(r.inputs.get("chart", ""))
    repo = get(r.inputs, "repositoryOpts", "repo")
    if chart.startswith(OCI) and repo:
        yield f"chart {chart} is an OCI reference and also names repositoryOpts.repo {repo!r}; allowed: the OCI reference alone"
    elif isinstance(repo, str) and repo.startswith(OCI):
        yield (
            f"repositoryOpts.repo {repo!r} is an OCI registry, which the provider reads as a classic index.yaml repository; "
            f"allowed: chart: {repo.rstrip('/')}/{chart} with no repositoryOpts"
        )


@rule(
    "volcano-queue-admitted",
    "Volcano Queues pass Volcano's queue admission webhook: valid quantities, guarantee <= deserved <= capability.",
    "mandatory",
    "resource",
    category="controllers",
    types=(VOLCANO_QUEUE,),
)
def volcano_queue_admitted(r: Resource, ctx: Context) -> Iterator[str]:
    """The webhook (validate_queue.go validateQueue) refuses the Queue at `pulumi up`, after other resources changed."""
    for error in volcano_queue_errors(dict(r.inputs)):
        yield f"Volcano's queue webhook refuses it: {error}"


def kueue_manager_config(plan: PlanView) -> dict[str, Any] | None:
    """Kueue's controller configuration as the chart hands it to the manager (None without a Kueue release)."""
    releases = helm_releases(plan, "kueue")
    if not releases:
        return None
    text = get(releases[0].inputs, "values", "managerConfig", "controllerManagerConfigYaml")
    try:
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None
    return config if isinstance(config, dict) else None


def no_kueue(plan: PlanView, ctx: Context) -> str | None:
    """Why the Kueue rules have nothing to judge: no Kueue release."""
    return "the stack does not run Kueue" if kueue_manager_config(plan) is None else None


@rule(
    "kueue-preemption-enforced",
    "ClusterQueues set no borrowWithinCohort while Kueue fair sharing is on (Kueue ignores it there).",
    "mandatory",
    "stack",
    category="controllers",
    not_applicable=no_kueue,
)
def kueue_preemption_enforced(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Kueue's getTargets runs fairPreemptions when `fairSharing` is configured, which never reads borrowWithinCohort."""
    config = kueue_manager_config(plan)
    if config is None or config.get("fairSharing") is None:
        return
    for r in objects(plan, "ClusterQueue", "kueue.x-k8s.io"):
        borrow = get(r.inputs, "spec", "preemption", "borrowWithinCohort")
        if isinstance(borrow, dict) and borrow.get("policy", "Never") != "Never":
            yield Finding(
                r.name,
                f"ClusterQueue {object_name(r)} sets borrowWithinCohort {borrow.get('policy')!r}, which Kueue ignores under fair sharing; "
                "allowed: no borrowWithinCohort, or Kueue without fairSharing",
            )


def _namespace_labels(plan: PlanView) -> dict[str, tuple[str, dict[str, str]]]:
    """Tenant namespace -> (resource name, labels)."""
    out = {}
    for ns, res_name in tenant_namespaces(plan).items():
        r = next(x for x in plan.resources if x.name == res_name)
        out[ns] = (res_name, dict(get(r.inputs, "metadata", "labels", default={}) or {}))
    return out


@rule(
    "tenant-workloads-managed",
    "Kueue manages every tenant workload: valid config, jobs without a queue name, pod-based kinds, every tenant namespace.",
    "mandatory",
    "stack",
    category="controllers",
    not_applicable=no_kueue,
)
def tenant_workloads_managed(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A kind Kueue does not manage (or a job without a queue name) runs outside every quota Kueue keeps (jobframework WorkloadShouldBeSuspended)."""
    config = kueue_manager_config(plan)
    if config is None:
        return
    release = helm_releases(plan, "kueue")[0].name
    for error in kueue_config_errors(config):
        yield Finding(release, f"Kueue refuses its configuration and does not start: {error}")
    if not config.get("manageJobsWithoutQueueName"):
        yield Finding(release, "manageJobsWithoutQueueName is off: a tenant job without a queue-name label runs unmanaged; allowed: true")
    frameworks = set(get(config, "integrations", "frameworks", default=[]) or [])
    # Built-in kinds only: CRD-based kinds (JobSet, Kubeflow, Ray) exist only where their operator runs.
    missing = sorted({f for f in KIND_FRAMEWORK.values() if "." not in f.split("/")[0]} - frameworks)
    if missing:
        yield Finding(release, f"integrations.frameworks lacks {', '.join(missing)}: those kinds run unmanaged in tenant namespaces")
    for ns, (res_name, labels) in _namespace_labels(plan).items():
        if not kueue_manages(config, "Pod", labels):
            yield Finding(res_name, f"tenant namespace {ns} is outside Kueue's managedJobsNamespaceSelector: its pods run unmanaged")


# API groups of the job kinds a platform may promise tenants (gpu_platform.k8s.job_apis), and kubeflow.org's
# legacy training-operator kinds, which no release of the platform serves.
JOB_GROUPS = frozenset({"jobset.x-k8s.io", "trainer.kubeflow.org", "ray.io", "kubeflow.org"})


def _served_groups(plan: PlanView) -> set[str]:
    """API groups whose CRDs the stack's Helm releases install (gpu_platform.k8s.releases CRD_GROUPS per chart)."""
    return {g for r in plan.of_type(HELM_RELEASE) for g in CRD_GROUPS.get(chart_name(r), ())}


@rule(
    "job-apis-served",
    "Every job kind Kueue manages, the tenant role grants or the priority policy checks is served by a release of the stack.",
    "mandatory",
    "stack",
    category="controllers",
    not_applicable=no_kueue,
)
def job_apis_served(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A kind promised but not installed: `kubectl apply` answers "no matches for kind" and Kueue defers the integration forever.

    kueue pkg/controller/jobframework/setup.go: a framework whose CRD is missing is not set up, only polled for;
    apimachinery restmapper.go NoKindMatchError is what a tenant sees.
    """
    config = kueue_manager_config(plan)
    if config is None:
        return
    served = _served_groups(plan)
    release = helm_releases(plan, "kueue")[0].name
    for framework in get(config, "integrations", "frameworks", default=[]) or []:
        group = str(framework).split("/")[0]
        if "/" in str(framework) and group in JOB_GROUPS and group not in served:
            yield Finding(
                release,
                f"Kueue manages {framework} but no release of the stack installs the {group} CRDs: tenants get "
                f"'no matches for kind'; allowed: install it (queueing.jobApis) or drop the framework",
            )
    for r in objects(plan, "ClusterRole") + objects(plan, "ValidatingAdmissionPolicy"):
        rules = r.inputs.get("rules") or get(r.inputs, "spec", "matchConstraints", "resourceRules", default=[]) or []
        named = {g for rule_ in rules for g in rule_.get("apiGroups") or [] if g in JOB_GROUPS}
        for group in sorted(named - served):
            yield Finding(r.name, f"names {group} kinds, which no release of the stack serves; allowed: only installed job APIs")


@rule(
    "tenant-priority-restricted",
    "A ValidatingAdmissionPolicy, bound with Deny, checks the priority of every pod and every Kueue Workload in each tenant namespace.",
    "mandatory",
    "stack",
    category="controllers",
)
def tenant_priority_restricted(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Without it any tenant may run at the highest PriorityClass and preempt production training.

    Pods alone are not enough: Kueue takes a Workload's priority from the job's pod template
    (jobframework reconciler.go ExtractPriority) and admits it, preempting others, before any pod
    exists; a policy on kueue.x-k8s.io workloads checking spec.priorityClassRef covers every integration.
    """
    namespaces = _namespace_labels(plan)
    if not namespaces:
        return
    bound = {
        str(get(b.inputs, "spec", "policyName"))
        for b in objects(plan, "ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io")
        if "Deny" in (get(b.inputs, "spec", "validationActions", default=[]) or [])
    }
    policies = []
    for p in objects(plan, "ValidatingAdmissionPolicy", "admissionregistration.k8s.io"):
        rules = get(p.inputs, "spec", "matchConstraints", "resourceRules", default=[]) or []
        on_pods = any("" in r.get("apiGroups", []) and "pods" in r.get("resources", []) and "CREATE" in r.get("operations", []) for r in rules)
        on_workloads = any(
            "kueue.x-k8s.io" in r.get("apiGroups", []) and "workloads" in r.get("resources", []) and "CREATE" in r.get("operations", [])
            for r in rules
        )
        expressions = " ".join(str(v.get("expression", "")) for v in get(p.inputs, "spec", "validations", default=[]) or [])
        checks_priority = "priorityClassName" in expressions and "priorityClassRef" in expressions
        if on_pods and on_workloads and checks_priority and object_name(p) in bound:
            policies.append(get(p.inputs, "spec", "matchConstraints", "namespaceSelector"))
    for ns, (res_name, labels) in namespaces.items():
        if not any(selector_matches(sel, labels) for sel in policies):
            yield Finding(
                res_name,
                f"no ValidatingAdmissionPolicy bound with Deny checks pod priorityClassName and Kueue Workload priorityClassRef in tenant "
                f"namespace {ns}; any PriorityClass is usable there",
            )


# What a tenant must not get by writing a Service or an Ingress: (resource, what it is, the object).
_LOAD_BALANCER_PROBES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("services", "a NodePort Service (a port on every node)", {"apiVersion": "v1", "kind": "Service", "spec": {"type": "NodePort"}}),
    (
        "services",
        "a `type: LoadBalancer` Service without the controller's class (an internet-facing Classic ELB by the in-tree provider)",
        {"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"}},
    ),
)
_UNDECLARED_PROBE = (
    "ingresses",
    "an internet-facing ALB Ingress although the stack declares no network.ingress.loadBalancers for the tenant",
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"annotations": {"alb.ingress.kubernetes.io/scheme": "internet-facing"}},
        "spec": {"ingressClassName": "alb"},
    },
)


@rule(
    "tenant-load-balancers-guarded",
    "Where tenants may write Services or Ingresses, admission refuses NodePorts, Classic ELBs and load balancers the stack does not declare.",
    "mandatory",
    "stack",
    category="controllers",
)
def tenant_load_balancers_guarded(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A tenant who may write Services could open a port on every node, or buy an internet-facing Classic ELB.

    Judged as the API server judges it: the tenant's bound role (RBAC RuleAllows) may create the object, and
    every Deny-bound ValidatingAdmissionPolicy of the plan is evaluated on it (gpu_platform.behaviour.admission,
    CEL); a probe nothing refuses is a finding. With the AWS Load Balancer Controller's Service webhook off, a
    LoadBalancer Service without `loadBalancerClass` goes to the in-tree cloud provider (Classic ELB,
    internet-facing unless annotated internal).
    """
    roles = cluster_role_rules(plan)
    admission = [
        dict(r.inputs)
        for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
        for r in objects(plan, kind, "admissionregistration.k8s.io")
    ]
    namespaces = _namespace_labels(plan)
    for rb in objects(plan, "RoleBinding", "rbac.authorization.k8s.io"):
        ns = namespace_of(rb)
        if ns not in namespaces:
            continue
        rules = roles.get(str(get(rb.inputs, "roleRef", "name")), [])
        groups = [str(s.get("name")) for s in get(rb.inputs, "subjects", default=[]) or [] if s.get("kind") == "Group"]
        user = {"username": "tenant-probe", "groups": groups}
        labels = namespaces[ns][1]
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        probes = list(_LOAD_BALANCER_PROBES)
        if LABEL_LOAD_BALANCERS not in labels:
            probes.append(_UNDECLARED_PROBE)
        for resource, what, shape in probes:
            group, _, version = str(shape["apiVersion"]).rpartition("/")
            if not rules_allow(rules, "create", group, resource):
                continue
            obj = {**shape, "metadata": {**shape.get("metadata", {}), "name": "probe", "namespace": ns}}
            req = Request(obj, group, version, resource, str(shape["kind"]), namespace, "CREATE", None, user)
            if not denials(admission, req):
                yield Finding(
                    rb.name,
                    f"RoleBinding {object_name(rb)} lets tenants create Services/Ingresses in {ns}, "
                    f"and no Deny-bound admission policy refuses {what}",
                )
                break


# Built-in ClusterRoles that write NetworkPolicies (kubernetes bootstrappolicy policy.go: admin, edit; cluster-admin: *).
NETPOL_WRITERS = frozenset({"edit", "admin", "cluster-admin"})
NETPOL_WRITE_VERBS = ("create", "delete", "deletecollection", "patch", "update")


def _netpol_guards(plan: PlanView) -> list[Any]:
    """The namespace selectors of Deny-bound admission policies that check the owner label on NetworkPolicy writes.

    UPDATE and DELETE must both be covered: an UPDATE could drop the label, a DELETE the default deny.
    """
    bound = {
        str(get(b.inputs, "spec", "policyName"))
        for b in objects(plan, "ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io")
        if "Deny" in (get(b.inputs, "spec", "validationActions", default=[]) or [])
    }
    out = []
    for p in objects(plan, "ValidatingAdmissionPolicy", "admissionregistration.k8s.io"):
        rules = get(p.inputs, "spec", "matchConstraints", "resourceRules", default=[]) or []
        ops = {
            op
            for r in rules
            if "networking.k8s.io" in r.get("apiGroups", []) and "networkpolicies" in r.get("resources", [])
            for op in r.get("operations", [])
        }
        checks_label = LABEL_OWNER in str(get(p.inputs, "spec", "variables", default=[])) + str(get(p.inputs, "spec", "validations", default=[]))
        if ({"UPDATE", "DELETE"} <= ops or "*" in ops) and checks_label and object_name(p) in bound:
            out.append(get(p.inputs, "spec", "matchConstraints", "namespaceSelector"))
    return out


@rule(
    "platform-netpols-protected",
    "Where tenants may write NetworkPolicies, the platform's carry the owner label and a Deny-bound admission policy guards them.",
    "mandatory",
    "stack",
    category="controllers",
)
def platform_netpols_protected(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A tenant who may write NetworkPolicies could delete its own default deny, unless admission refuses it.

    RBAC RuleAllows (rbac/v1 evaluation_helpers.go) over the bound role's rules, for write verbs on networkpolicies.
    """
    roles = cluster_role_rules(plan)
    namespaces = _namespace_labels(plan)
    guards = _netpol_guards(plan)
    guarded = {ns for ns, (_, labels) in namespaces.items() if any(selector_matches(sel, labels) for sel in guards)}
    for rb in objects(plan, "RoleBinding", "rbac.authorization.k8s.io"):
        ns = namespace_of(rb)
        if ns not in namespaces or ns in guarded:
            continue
        role = str(get(rb.inputs, "roleRef", "name"))
        rules = roles.get(role)
        writes = role in NETPOL_WRITERS or any(rules_allow(rules or [], v, "networking.k8s.io", "networkpolicies") for v in NETPOL_WRITE_VERBS)
        if writes:
            yield Finding(
                rb.name,
                f"RoleBinding {object_name(rb)} grants {role!r}, which writes NetworkPolicies, and no ValidatingAdmissionPolicy bound with Deny "
                f"guards the platform's ({LABEL_OWNER}={PLATFORM_OWNER}) in {ns}; a tenant could delete its default deny",
            )
    for np in objects(plan, "NetworkPolicy", "networking.k8s.io"):
        labels = get(np.inputs, "metadata", "labels", default={}) or {}
        if namespace_of(np) in namespaces and labels.get(LABEL_OWNER) != PLATFORM_OWNER:
            yield Finding(np.name, f"NetworkPolicy {object_name(np)} lacks {LABEL_OWNER}={PLATFORM_OWNER}: the admission policy does not guard it")
