"""MultiKueue federations: the manager reaches its workers, and the workers mirror what the manager admits.

These rules see the whole stack (`federation=True`); `PlanView.clusters()` splits it into the manager (first) and
one view per worker (gpu_platform.federation). Kueue's behaviour is in gpu_platform.behaviour.multikueue.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpu_platform.behaviour import rbac
from gpu_platform.behaviour.apimachinery import parse_quantity
from gpu_platform.behaviour.multikueue import kubeconfig_errors, kubeconfig_server, manager_config, step_size
from gpu_platform.behaviour.wiring import UNKNOWN
from gpu_platform.federation import WORKER_COMPONENT
from gpu_platform.k8s.alerts import MULTIKUEUE_CLUSTER_METRIC
from gpu_platform.k8s.multikueue import DISPATCHER_INCREMENTAL, QUOTA_MULTIPLIER_ANNOTATION, SERVICE_ACCOUNT, STEP_SIZE, access_needed
from gpu_platform.k8s.objects import KUEUE_NAMESPACE
from gpu_platform.spec.models import MAX_QUOTA_MULTIPLIER
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.view import (
    MULTIKUEUE_CONTROLLER,
    NODE_GROUP,
    cluster_role_rules,
    dispatched,
    get,
    helm_releases,
    metadata,
    namespace_of,
    object_name,
    objects,
    pools,
    queue_quotas,
)

KUEUE = "kueue.x-k8s.io"
# The job APIs' charts: what the manager's integrations need on every worker (kueue#3582: a framework the manager
# enables whose CRD a worker lacks fails that worker's connection).
JOB_API_CHARTS = ("kueue", "jobset", "kubeflow-trainer", "kuberay-operator")
WHERE = "gpu-platform:workers"


def _no_federation(plan: PlanView, ctx: Context) -> str | None:
    if not objects(plan, "MultiKueueCluster", KUEUE):
        return "the stack declares no MultiKueue workers"
    return None


@dataclass(frozen=True)
class _Worker:
    """One worker as the rules see it: its view, the resource findings name, and its entry in the stack file."""

    view: PlanView
    anchor: str  # its WorkerScope's logical name (`east-worker`)
    key: str  # `gpu-platform:workers[0]` (from the scope's recorded source); WHERE under CrossGuard, which has none


def _parts(plan: PlanView) -> tuple[PlanView, dict[str, _Worker]]:
    """The manager's view and each worker's, by the stack's worker name (`east`: its WorkerScope is `east-worker`)."""
    views = plan.clusters()
    workers = {}
    for view in views[1:]:
        scope = view.of_type(WORKER_COMPONENT)
        anchor = (scope or view.resources)[0]
        entry = re.match(r"gpu-platform:workers\[\d+\]", anchor.source or "")
        workers[anchor.name.removesuffix("-worker")] = _Worker(view, anchor.name, entry.group(0) if entry else WHERE)
    return views[0], workers


def _secret(view: PlanView, name: str, namespace: str) -> Resource | None:
    return next((r for r in objects(view, "Secret") if object_name(r) == name and namespace_of(r) == namespace), None)


def _kubeconfig_of(secret: Resource) -> Any:
    text = get(secret.inputs, "stringData", "kubeconfig")
    return text if text is not None else get(secret.inputs, "data", "kubeconfig")


@rule(
    "multikueue-kubeconfigs-static",
    "Each MultiKueueCluster reads a static https kubeconfig from a Secret in Kueue's namespace that Kueue accepts.",
    "mandatory",
    "stack",
    category="security",
    not_applicable=_no_federation,
    federation=True,
)
def multikueue_kubeconfigs_static(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A kubeconfig Kueue refuses leaves the worker inactive, and every workload that would go there waits.

    Kueue refuses exec plugins, token files and insecure TLS (behaviour.multikueue.kubeconfig_errors).
    """
    manager, workers = _parts(plan)
    servers: dict[str, str] = {}
    for mkc in objects(manager, "MultiKueueCluster", KUEUE):
        where = workers[object_name(mkc)].key if object_name(mkc) in workers else WHERE  # the worker's entry in the stack file
        source = get(mkc.inputs, "spec", "clusterSource", "kubeConfig", default={}) or {}
        if source.get("locationType", "Secret") != "Secret":
            yield Finding(
                mkc.name, "kubeConfig.locationType Path reads a file inside the manager's Kueue pod, which nothing here provides", key=where
            )
            continue
        secret = _secret(manager, str(source.get("location")), KUEUE_NAMESPACE)
        if secret is None:
            why = f"its kubeconfig Secret {KUEUE_NAMESPACE}/{source.get('location')} is not created by this stack"
            yield Finding(mkc.name, why, key=where)
            continue
        if secret.secrets is not None and not {"stringData", "data"} & set(secret.secrets):
            why = "its kubeconfig (the worker's token) is not a Pulumi secret: the state would keep it in plain text and previews show it"
            yield Finding(secret.name, why, key=where)
        text = _kubeconfig_of(secret)
        if text == UNKNOWN or text is None:
            continue  # a preview that has not read the worker's token yet: judged when it has
        for err in kubeconfig_errors(str(text)):
            yield Finding(secret.name, f"Kueue refuses this kubeconfig: {err}", key=where)
        server = kubeconfig_server(str(text)) or ""
        if server and not server.startswith("https://"):
            yield Finding(secret.name, f"server {server} is not https", key=where)
        if server in servers:
            yield Finding(secret.name, f"server {server} is also worker {servers[server]}'s: one cluster counted twice", key=where)
        servers.setdefault(server, object_name(mkc))


def _frameworks(view: PlanView) -> list[str] | None:
    releases = helm_releases(view, "kueue")
    if not releases:
        return None
    config = manager_config(get(releases[0].inputs, "values", default={}) or {})
    return list(get(config, "integrations", "frameworks", default=[]) or [])


def _charts(view: PlanView) -> dict[str, str]:
    return {c: str(r.inputs.get("version")) for c in JOB_API_CHARTS for r in helm_releases(view, c)[:1]}


def _local_queues(view: PlanView) -> set[tuple[str | None, str]]:
    return {(namespace_of(r), object_name(r)) for r in objects(view, "LocalQueue", KUEUE)}


@rule(
    "multikueue-workers-mirror-manager",
    "Every worker runs the manager's Kueue and job API versions, its integration list and its namespaces' LocalQueues.",
    "mandatory",
    "stack",
    category="controllers",
    not_applicable=_no_federation,
    federation=True,
)
def multikueue_workers_mirror_manager(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A worker missing what the manager dispatches to it never admits.

    The manager opens a watch on each worker for every integration it enables (kueue#3582) and creates each workload
    in the same namespace and LocalQueue there (Kueue docs, setup_multikueue.md: workers mirror the manager's
    namespaces and LocalQueues).
    """
    manager, workers = _parts(plan)
    want_charts, want_frameworks, want_queues = _charts(manager), _frameworks(manager), _local_queues(manager)
    for worker, w in workers.items():
        view, anchor = w.view, w.anchor
        charts = _charts(view)
        for chart, version in want_charts.items():
            if charts.get(chart) != version:
                got = charts.get(chart, "not installed")
                yield Finding(anchor, f"worker {worker}: chart {chart} is {got}, the manager runs {version}", key=w.key)
        frameworks = _frameworks(view)
        if want_frameworks is not None and frameworks is not None and sorted(frameworks) != sorted(want_frameworks):
            yield Finding(
                anchor, f"worker {worker}: Kueue integrations {sorted(frameworks)} differ from the manager's {sorted(want_frameworks)}", key=w.key
            )
        for ns, name in sorted(want_queues - _local_queues(view), key=str):
            yield Finding(anchor, f"worker {worker}: no LocalQueue {ns}/{name}, which the manager's workloads are dispatched to", key=w.key)


def _quotas(view: PlanView) -> dict[tuple[str, str, str], Any]:
    """(ClusterQueue, flavor, resource) -> nominal quota as written, for every resource the queue covers."""
    return {(object_name(cq), flavor, resource): n for cq in objects(view, "ClusterQueue", KUEUE) for flavor, resource, n in queue_quotas(cq)}


def _amount(value: Any) -> Decimal | None:
    """A quota as Kueue reads it (a Kubernetes quantity, k8s.io/apimachinery `ParseQuantity`); None if it is not one."""
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def _shown(amount: Decimal | None, written: Any) -> str:
    return f"{written!r} (not a quantity)" if amount is None else f"{amount.normalize():f}"


@rule(
    "multikueue-quota-sums",
    "A manager ClusterQueue's quota per flavor and resource (GPUs, DRA devices, CPU, memory) is the workers' sum (times a declared multiplier).",
    "mandatory",
    "stack",
    category="capacity",
    not_applicable=_no_federation,
    federation=True,
)
def multikueue_quota_sums(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """More on the manager admits work no worker can take (it waits dispatched, holding quota); less strands workers' capacity.

    Every covered resource counts: Kueue admits a workload only when each resource it requests fits its flavor's
    quota (pkg/scheduler/flavorassigner), so a manager CPU or memory quota above the workers' sum over-admits as
    surely as a GPU one. Quantities are compared as numbers (`512Gi` equals two workers' `256Gi`). A stack may declare
    a multiplier (`queueing.kueue.multiKueueQuotaMultiplier`, on the queue as QUOTA_MULTIPLIER_ANNOTATION): the
    manager then admits that many times the sum, on purpose.
    """
    manager, workers = _parts(plan)
    summed: dict[tuple[str, str, str], Decimal | None] = {}
    bad: dict[tuple[str, str, str], Any] = {}
    for w in workers.values():
        for k, n in _quotas(w.view).items():
            amount, before = _amount(n), summed.get(k, Decimal(0))
            if amount is None:
                bad[k] = n
            summed[k] = None if amount is None or before is None else before + amount
    names = {object_name(cq): cq.name for cq in objects(manager, "ClusterQueue", KUEUE) if dispatched(manager, cq)}
    times: dict[str, int] = {}  # queue -> its declared multiplier, read once per queue
    for cq in objects(manager, "ClusterQueue", KUEUE):
        if object_name(cq) not in names:
            continue
        declared = (metadata(cq).get("annotations") or {}).get(QUOTA_MULTIPLIER_ANNOTATION, "1")
        if isinstance(declared, str) and declared.isdigit() and 1 <= int(declared) <= MAX_QUOTA_MULTIPLIER:
            times[object_name(cq)] = int(declared)
        else:
            yield Finding(cq.name, f"quota multiplier {declared!r} is not a whole number from 1 to {MAX_QUOTA_MULTIPLIER}", key=WHERE)
    written = {k: n for k, n in _quotas(manager).items() if k[0] in times}
    for key in sorted(set(written) | {k for k in summed if k[0] in times}):
        queue, flavor, resource = key
        have = _amount(written[key]) if key in written else Decimal(0)
        hold = summed.get(key, Decimal(0))
        if have is None or hold is None or have != hold * times[queue]:
            admits = _shown(have, written.get(key))
            holds = _shown(hold, bad.get(key)) + (f", times the declared multiplier {times[queue]}" if times[queue] != 1 else "")
            why = f"{resource} on flavor {flavor}: the manager admits {admits}, the workers hold {holds}"
            yield Finding(names[queue], why, key=WHERE)


@rule(
    "multikueue-dispatch-complete",
    "The manager's ClusterQueues all dispatch through MultiKueue, one worker at a time in the listed order, and it runs no GPU nodes.",
    "mandatory",
    "stack",
    category="controllers",
    not_applicable=_no_federation,
    federation=True,
)
def multikueue_dispatch_complete(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Work must leave the manager for a worker it lists.

    A manager queue without the check admits work onto the manager, which has no GPUs; a MultiKueueConfig naming no
    MultiKueueCluster dispatches nowhere; a manager with GPU node groups is also a worker nobody dispatches to. Without
    the incremental dispatcher with stepSize 1 (incrementaldispatcher.go; the default is all workers at once) the
    workload is created on every worker and the first to admit it wins, whatever the preference order.
    """
    manager, _ = _parts(plan)
    for release in helm_releases(manager, "kueue")[:1]:
        step = step_size(manager_config(get(release.inputs, "values", default={}) or {}))
        if step is None:
            why = f"the manager's Kueue dispatches to every worker at once (multiKueue.dispatcherName is not {DISPATCHER_INCREMENTAL})"
            yield Finding(release.name, why + ": the MultiKueueConfig's preference order is not kept", key=WHERE)
        elif step != STEP_SIZE:
            why = f"the incremental dispatcher nominates {step} workers per round (stepSize), not {STEP_SIZE}"
            yield Finding(release.name, why + ": workers further down the preference order are tried alongside the first", key=WHERE)
    clusters = {object_name(r) for r in objects(manager, "MultiKueueCluster", KUEUE)}
    configs = {object_name(r): r for r in objects(manager, "MultiKueueConfig", KUEUE)}
    for check in objects(manager, "AdmissionCheck", KUEUE):
        if get(check.inputs, "spec", "controllerName") != MULTIKUEUE_CONTROLLER:
            continue
        config = configs.get(str(get(check.inputs, "spec", "parameters", "name")))
        if config is None:
            yield Finding(check.name, "its parameters name no MultiKueueConfig of this stack", key=WHERE)
            continue
        listed = get(config.inputs, "spec", "clusters", default=[]) or []
        for name in listed:
            if name not in clusters:
                yield Finding(config.name, f"lists worker {name}, which has no MultiKueueCluster", key=WHERE)
        for name in sorted(clusters - set(listed)):
            yield Finding(config.name, f"does not list worker {name}: nothing is dispatched to it", key=WHERE)
    for cq in objects(manager, "ClusterQueue", KUEUE):
        if not dispatched(manager, cq):
            yield Finding(cq.name, "has no MultiKueue admission check: it would admit work onto the manager, which has no GPU nodes", key=WHERE)
    for ng in manager.of_type(NODE_GROUP):
        if (ng.inputs.get("labels") or {}).get("gpu-platform.io/pool"):
            yield Finding(ng.name, "the manager runs a GPU node group: a manager is not also a worker", key="gpu-platform:nodePools")


@rule(
    "multikueue-workers-alerted",
    "The manager exports each MultiKueueCluster's Active condition and alerts when a worker is not connected.",
    "mandatory",
    "stack",
    category="observability",
    not_applicable=_no_federation,
    federation=True,
)
def multikueue_workers_alerted(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """An inactive worker silently takes no work; its capacity is gone until someone looks."""
    manager, _ = _parts(plan)
    exprs = [
        str(r.get("expr", ""))
        for rules_ in objects(manager, "PrometheusRule", "monitoring.coreos.com")
        for g in get(rules_.inputs, "spec", "groups", default=[]) or []
        for r in (g.get("rules", []) if isinstance(g, Mapping) else [])
        if isinstance(r, Mapping) and r.get("alert")
    ]
    if not any(MULTIKUEUE_CLUSTER_METRIC in e and "Active" in e for e in exprs):
        yield Finding("stack", f'no alert on {MULTIKUEUE_CLUSTER_METRIC}{{condition="Active"}}', key="gpu-platform:monitoring")
    stack = helm_releases(manager, "kube-prometheus-stack")
    if not stack:
        why = "the manager's Prometheus is an existing one: nothing of this stack exports MultiKueueCluster conditions for the alert"
        yield Finding(
            "stack",
            why + " (export them with kube-state-metrics' customResourceState: docs/multi-cluster.md)",
            key="gpu-platform:monitoring.prometheus",
        )
    else:
        resources = get(stack[0].inputs, "values", "kube-state-metrics", "customResourceState", "config", "spec", "resources", default=[]) or []
        kinds = {get(r, "groupVersionKind", "kind") for r in resources if isinstance(r, Mapping)}
        if "MultiKueueCluster" not in kinds:
            yield Finding(
                stack[0].name, "kube-state-metrics exports no MultiKueueCluster conditions, so the alert never fires", key="gpu-platform:monitoring"
            )


TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_ANNOTATION = "kubernetes.io/service-account.name"


def _granted(view: PlanView, user: rbac.UserInfo) -> list[Mapping[str, Any]]:
    """The rules of every ClusterRole a ClusterRoleBinding of this worker gives `user` (rbac.go `VisitRulesFor`)."""
    roles = cluster_role_rules(view)
    bindings = [{**r.inputs, "metadata": {}} for r in objects(view, "ClusterRoleBinding")]
    out: list[Mapping[str, Any]] = []
    for binding in rbac.bindings_for(user, bindings):
        ref = binding.get("roleRef") or {}
        rules = roles.get(str(ref.get("name")), []) if ref.get("kind") == "ClusterRole" else []
        out += [r for r in rules if isinstance(r, Mapping)]
    return out


@rule(
    "multikueue-worker-access",
    "Each worker grants the manager's multikueue-sa what Kueue does there, through a non-expiring token Secret.",
    "mandatory",
    "stack",
    category="security",
    not_applicable=_no_federation,
    federation=True,
)
def multikueue_worker_access(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A worker whose service account cannot do what the manager asks drops out of the federation.

    The manager mirrors Workloads and each enabled integration's objects onto the worker and watches them
    (multikueuecluster.go `updateConfigAndRefreshWatchers`): a request the worker's RBAC refuses (rbac.go
    `RulesAllow` over the ClusterRoles bound to `system:serviceaccount:kueue-system:multikueue-sa`) leaves the
    MultiKueueCluster inactive. The kubeconfig's token is a service-account-token Secret's, which lasts as long as
    the Secret; a TokenRequest token would expire under the manager (kueue#9280).
    """
    manager, workers = _parts(plan)
    frameworks = _frameworks(manager) or []
    user = rbac.UserInfo(rbac.service_account_username(KUEUE_NAMESPACE, SERVICE_ACCOUNT), ())
    for worker, w in workers.items():
        view, anchor = w.view, w.anchor
        accounts = [r for r in objects(view, "ServiceAccount") if object_name(r) == SERVICE_ACCOUNT and namespace_of(r) == KUEUE_NAMESPACE]
        if not accounts:
            yield Finding(anchor, f"worker {worker}: no ServiceAccount {KUEUE_NAMESPACE}/{SERVICE_ACCOUNT} for the manager", key=w.key)
        tokens = [
            r
            for r in objects(view, "Secret")
            if namespace_of(r) == KUEUE_NAMESPACE
            and r.inputs.get("type") == TOKEN_TYPE
            and (metadata(r).get("annotations") or {}).get(SA_ANNOTATION) == SERVICE_ACCOUNT
        ]
        if not tokens:
            why = f"worker {worker}: no {TOKEN_TYPE} Secret for {SERVICE_ACCOUNT} in {KUEUE_NAMESPACE}: the manager's token would expire"
            yield Finding(anchor, why, key=w.key)
        rules = _granted(view, user)
        missing = [a for a in access_needed(frameworks) if not rbac.rules_allow(rules, a[0], a[1], a[2], a[3])]
        if missing:
            shown = ", ".join(f"{verb} {group or 'core'}/{resource}{'/' + sub if sub else ''}" for verb, group, resource, sub in missing[:4])
            more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
            yield Finding(anchor, f"worker {worker}: {SERVICE_ACCOUNT} may not {shown}{more}, which the manager's Kueue does there", key=w.key)


COMMITTED = ("reserved", "capacity-block")


@rule(
    "multikueue-committed-first",
    "Workers with committed capacity (reserved, Capacity Block) come before workers without it in the MultiKueueConfig.",
    "advisory",
    "stack",
    category="capacity",
    not_applicable=_no_federation,
    federation=True,
)
def multikueue_committed_first(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """The dispatcher nominates workers in the list's order; capacity paid for whether used or not should fill first.

    Kueue's incremental dispatcher (behaviour.multikueue.dispatch) gives the first worker five minutes before the
    next is nominated, so a pay-as-you-go worker listed first takes work the reserved one was bought for.
    """
    manager, workers = _parts(plan)
    committed = {name: any(p.tier in COMMITTED for p in pools(w.view, ctx.catalog)) for name, w in workers.items()}
    for config in objects(manager, "MultiKueueConfig", KUEUE):
        order = [str(c) for c in get(config.inputs, "spec", "clusters", default=[]) or []]
        for i, name in enumerate(order):
            later = [w for w in order[i + 1 :] if committed.get(w)]
            if not committed.get(name) and later:
                why = f"worker {name} has no reserved or Capacity Block pool but comes before {', '.join(later)}, which do"
                yield Finding(config.name, why + ": list committed workers first", key=WHERE)
                break
