"""Kueue MultiKueue across the stack's clusters: what each worker grants the manager, and the manager's federation.

Worker side (every worker, through its own provider): the `multikueue-sa` ServiceAccount in `kueue-system`,
the ClusterRole upstream documents for it (RULES), its binding, and a service-account token Secret: a static
token that does not expire, since a TokenRequest token would lapse under the manager (kueue#9280).

Manager side: per worker a Secret holding a static kubeconfig (endpoint, CA data, the worker's token; Kueue
refuses `exec`, token files and insecure TLS: pkg/controller/admissionchecks/multikueue/multikueuecluster.go
`validateKubeconfig`), a MultiKueueCluster naming that Secret, one MultiKueueConfig listing the workers in
preference order, and the AdmissionCheck (controller `kueue.x-k8s.io/multikueue`) every tenant ClusterQueue
names. Kueue's manager Configuration selects the incremental dispatcher (`manager_settings`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.k8s import job_apis
from gpu_platform.k8s.objects import KUEUE_NAMESPACE, Manifest, create, metadata
from gpu_platform.spec.models import PlatformSpec

API = "kueue.x-k8s.io/v1beta2"
CONTROLLER = "kueue.x-k8s.io/multikueue"
ADMISSION_CHECK = "multikueue"
CONFIG = "multikueue"
SERVICE_ACCOUNT = "multikueue-sa"
# On a manager ClusterQueue whose quota is the workers' sum times `queueing.kueue.multiKueueQuotaMultiplier` (not 1).
QUOTA_MULTIPLIER_ANNOTATION = "gpu-platform.io/multikueue-quota-multiplier"
TOKEN_SECRET = "multikueue-sa-token"
CLUSTER_ROLE = "gpu-platform-multikueue"
KUBECONFIG_KEY = "kubeconfig"  # MultiKueueCluster CRD, spec.clusterSource.kubeConfig.location: 'stored in the "kubeconfig" key'
# pkg/controller/admissionchecks/multikueue/dispatcher: the incremental dispatcher nominates `stepSize` more
# workers of the MultiKueueConfig's list each round in which no nominated worker admitted the workload.
DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
STEP_SIZE = 1

_CREATE = ("create", "delete", "get", "list", "watch")
# What the manager does on a worker (Kueue's create-multikueue-kubeconfig.sh, site/static/examples/multikueue/, at the
# pinned tag): Workloads mirrored and their status written back, queues read.
KUEUE_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("kueue.x-k8s.io", ("workloads",), (*_CREATE, "update", "patch")),
    ("kueue.x-k8s.io", ("workloads/status",), ("get", "patch", "update")),
    ("kueue.x-k8s.io", ("clusterqueues", "localqueues"), ("get", "list", "watch")),
)
# Kueue's built-in integrations with a MultiKueue adapter: (group, plural). The manager opens a watch on every worker
# for each integration its Configuration enables (multikueuecluster.go `updateConfigAndRefreshWatchers`, adapters from
# `GetMultiKueueAdapters(cfg.Integrations.Frameworks)`), and a watch it may not open fails the worker's connection
# (Active False, ClientConnectionFailed). Deployments reach workers as their pods (the `pod` integration).
BUILT_IN_ADAPTERS = {"batch/job": ("batch", "jobs"), "statefulset": ("apps", "statefulsets"), "pod": ("", "pods")}


# Every integration with a MultiKueue adapter, by its framework name: (group, plural).
ADAPTERS: dict[str, tuple[str, str]] = {
    **BUILT_IN_ADAPTERS,
    **{framework: (group, plural) for kinds in job_apis.KINDS.values() for _kind, framework, group, _version, plural in kinds},
}


def _grants(frameworks: Iterable[str]) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(group, resources, verbs) the manager needs on a worker for these integrations.

    Kueue's objects (KUEUE_RULES), then for each integration with an adapter its kind (mirrored: created, watched,
    deleted) and its status (read back); `deployment` reaches workers as pods and has no adapter of its own.
    """
    out = list(KUEUE_RULES)
    for framework in frameworks:
        if framework in ADAPTERS:
            group, plural = ADAPTERS[framework]
            out += [(group, (plural,), _CREATE), (group, (f"{plural}/status",), ("get",))]
    return out


def access_needed(frameworks: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """(verb, group, resource, subresource) the manager's Kueue asks of a worker, for the integrations it enables."""
    grants = _grants(frameworks)
    return [(verb, group, *resource.partition("/")[::2]) for group, resources, verbs in grants for resource in resources for verb in verbs]


def worker_rules(spec: PlatformSpec) -> list[dict[str, Any]]:
    """The worker ClusterRole: what `access_needed` asks, for the stack's integrations.

    The integrations are the stack's (gpu_platform.k8s.kueue.frameworks: the built-in kinds and the installed job
    APIs), the same list on the manager and every worker, so each watch the manager opens is allowed.
    """
    frameworks = ["batch/job", *(framework for _kind, framework, _group, _version, _plural in job_apis.kinds(spec)), "statefulset", "pod"]
    return [{"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)} for group, resources, verbs in _grants(frameworks)]


def worker_objects(spec: PlatformSpec) -> list[Manifest]:
    """What a worker grants the manager: ServiceAccount, ClusterRole, binding (the token Secret is `token_secret`)."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(SERVICE_ACCOUNT, KUEUE_NAMESPACE)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": metadata(CLUSTER_ROLE), "rules": worker_rules(spec)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": metadata(CLUSTER_ROLE),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": KUEUE_NAMESPACE}],
        },
    ]


def token_secret() -> Manifest:
    """A long-lived token of `multikueue-sa`, as long-lived as the Secret, unlike a TokenRequest's.

    The token controller fills `data.token` (Kubernetes docs, "Manually create a long-lived API token for a
    ServiceAccount").
    """
    meta = metadata(TOKEN_SECRET, KUEUE_NAMESPACE)
    meta["annotations"] = {"kubernetes.io/service-account.name": SERVICE_ACCOUNT}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "kubernetes.io/service-account-token"}


def kubeconfig(worker: str, endpoint: str, ca_data: str, token: str) -> str:
    """The static kubeconfig the manager reaches a worker with: https endpoint, CA data, bearer token; no exec."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": worker, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
            "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
            "contexts": [{"name": worker, "context": {"cluster": worker, "user": SERVICE_ACCOUNT}}],
            "current-context": worker,
        },
        sort_keys=True,
    )


def kubeconfig_secret_name(worker: str) -> str:
    """The manager's Secret holding one worker's kubeconfig (in Kueue's namespace, as the CRD requires)."""
    return f"multikueue-{worker}"


def kubeconfig_secret(worker: str, config: str) -> Manifest:
    """The Secret a MultiKueueCluster reads (`kubeconfig` key)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(kubeconfig_secret_name(worker), KUEUE_NAMESPACE),
        "stringData": {KUBECONFIG_KEY: config},
    }


def multikueue_cluster(worker: str) -> Manifest:
    """The manager's MultiKueueCluster of one worker."""
    return {
        "apiVersion": API,
        "kind": "MultiKueueCluster",
        "metadata": metadata(worker),
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": kubeconfig_secret_name(worker)}}},
    }


def multikueue_config(workers: tuple[str, ...]) -> Manifest:
    """The workers in preference order: the incremental dispatcher nominates them in this order."""
    return {"apiVersion": API, "kind": "MultiKueueConfig", "metadata": metadata(CONFIG), "spec": {"clusters": list(workers)}}


def admission_check() -> Manifest:
    """The AdmissionCheck every manager ClusterQueue names: MultiKueue's, with the MultiKueueConfig as parameters."""
    return {
        "apiVersion": API,
        "kind": "AdmissionCheck",
        "metadata": metadata(ADMISSION_CHECK),
        "spec": {"controllerName": CONTROLLER, "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CONFIG}},
    }


def manager_settings() -> dict[str, Any]:
    """The `multiKueue` section of the manager's Kueue Configuration: the incremental dispatcher, one worker a round.

    apis/config/v1beta2/configuration_types.go `MultiKueue`: `incrementalDispatcherConfig` is valid only with the
    incremental dispatcher (pkg/config/validation.go `validateMultiKueue`) and its `stepSize` defaults to 3; 1
    nominates the preferred worker alone, the next one after each 5-minute round without admission
    (pkg/controller/workloaddispatcher/incrementaldispatcher.go; behaviour.multikueue reproduces it).
    """
    return {"dispatcherName": DISPATCHER_INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": STEP_SIZE}}


def admission_checks_strategy() -> dict[str, Any]:
    """A manager ClusterQueue's `admissionChecksStrategy`: MultiKueue for every flavor."""
    return {"admissionChecks": [{"name": ADMISSION_CHECK}]}


def decoded_token(data: Any) -> str:
    """The token of a service-account-token Secret's `data` (base64, as the API returns it).

    A Secret the token controller has not filled (pulumi-kubernetes gave up waiting) fails the update with that
    reason rather than a KeyError inside an apply.
    """
    token = data.get("token") if isinstance(data, dict) else None
    if not token:
        raise ValueError(f"{TOKEN_SECRET} has no data.token yet: the token controller has not filled it; run `pulumi up` again")
    return base64.b64decode(token).decode()


@dataclass(frozen=True)
class MultiKueueWorkerArgs:
    """Inputs of one worker's MultiKueueWorker component."""

    spec: PlatformSpec
    provider: k8s.Provider
    endpoint: pulumi.Input[str]
    ca_data: pulumi.Input[str]
    after: tuple[pulumi.Resource, ...] = ()
    """The worker's Kueue (its namespace holds the ServiceAccount)."""


class MultiKueueWorker(pulumi.ComponentResource):
    """The manager's access to one worker: ServiceAccount, ClusterRole, binding, token Secret; `kubeconfig` (secret)."""

    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, worker: str, args: MultiKueueWorkerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:MultiKueueWorker", name, None, opts)
        on_worker = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.after))
        made = {m["kind"]: create(f"{name}-{m['kind'].lower()}", m, on_worker) for m in worker_objects(args.spec)}
        secret = token_secret()
        # The typed Secret, for its `data` output: pulumi-kubernetes waits on create until the token controller has
        # filled a service-account-token Secret's data (provider/pkg/await/awaiters.go untilCoreV1SecretInitialized,
        # 5 seconds). Created after its ServiceAccount: the token controller deletes a token Secret whose
        # ServiceAccount does not exist (kubernetes pkg/controller/serviceaccount/tokens_controller.go).
        after_account = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*args.after, made["ServiceAccount"]])
        token = k8s.core.v1.Secret(f"{name}-token", metadata=secret["metadata"], type=secret["type"], opts=after_account)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(args.endpoint, args.ca_data, token.data).apply(lambda a: kubeconfig(worker, a[0], a[1], decoded_token(a[2])))
        )
        self.register_outputs({})


@dataclass(frozen=True)
class MultiKueueManagerArgs:
    """Inputs of the manager's MultiKueue component."""

    provider: k8s.Provider
    kubeconfigs: dict[str, pulumi.Output[str]]
    """Worker name -> its kubeconfig, in preference order."""
    after: tuple[pulumi.Resource, ...] = ()
    """The manager's Kueue (CRDs and namespace)."""


class MultiKueueManager(pulumi.ComponentResource):
    """Per worker a kubeconfig Secret and MultiKueueCluster; the MultiKueueConfig and the AdmissionCheck."""

    def __init__(self, name: str, args: MultiKueueManagerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:MultiKueueManager", name, None, opts)
        on_manager = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.after))
        for worker, config in args.kubeconfigs.items():
            secret = kubeconfig_secret(worker, "")
            stored = k8s.core.v1.Secret(
                f"{name}-kubeconfig-{worker}",
                metadata=secret["metadata"],
                string_data={KUBECONFIG_KEY: config},
                opts=pulumi.ResourceOptions.merge(on_manager, pulumi.ResourceOptions(additional_secret_outputs=["stringData", "data"])),
            )
            create(
                f"{name}-cluster-{worker}",
                multikueue_cluster(worker),
                pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[stored, *args.after]),
            )
        create(f"{name}-config", multikueue_config(tuple(args.kubeconfigs)), on_manager)
        create(f"{name}-admissioncheck", admission_check(), on_manager)
        self.register_outputs({})
