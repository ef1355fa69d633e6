"""Shared helpers of the Kubernetes layer: platform namespaces, object metadata, tolerations.

Every module builds manifests as plain dicts (apiVersion, kind, metadata, ...); `create` is the one
place that turns such a dict into a Pulumi resource, so what a pure function returns is exactly
what the plan records and `gpu-platform render` writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.pools import DOMAIN, Taint
from gpu_platform.versions import Chart

Manifest = dict[str, Any]

GPU_OPERATOR_NAMESPACE = "gpu-operator"
KUEUE_NAMESPACE = "kueue-system"
VOLCANO_NAMESPACE = "volcano-system"
# kube-prometheus-stack's node-exporter, apart from the rest of monitoring: it alone needs a privileged namespace.
NODE_EXPORTER_NAMESPACE = "node-exporter"
LABEL_TENANT = f"{DOMAIN}/tenant"
LABEL_COHORT = f"{DOMAIN}/cohort"
LABEL_MANAGED = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpu-platform"


def metadata(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Object metadata with the platform's managed-by label."""
    meta: dict[str, Any] = {"name": name, "labels": {LABEL_MANAGED: MANAGED_BY, **(labels or {})}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def tolerations(taints: Iterable[Taint]) -> list[dict[str, str]]:
    """Tolerations that match exactly these taints (key, value and effect)."""
    return [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect} for t in taints]


def system_namespace(name: str, privileged: bool = False) -> Manifest:
    """A platform namespace; privileged only where node agents (driver, device plugin) must run."""
    level = "privileged" if privileged else "baseline"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata(name, labels={"pod-security.kubernetes.io/enforce": level, f"{DOMAIN}/system": "true"}),
    }


def helm_release(
    name: str,
    release: str,
    chart: Chart,
    namespace: str,
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    """A Helm release pinned to the lockfile's chart version (atomic, so a failed upgrade rolls back).

    OCI charts travel whole in `chart` with no repositoryOpts (the lockfile loader enforces the form;
    see gpu_platform.versions.Chart); classic charts name their repository.
    """
    repo = chart.repository_url
    return k8s.helm.v3.Release(
        name,
        name=release,
        chart=chart.chart,
        version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo) if repo is not None else None,
        namespace=namespace,
        values=values,
        atomic=True,
        opts=opts,
    )


def release_in_namespace(
    component: pulumi.Resource,
    name: str,
    release: str,
    chart: Chart,
    namespace: str,
    values: dict[str, Any],
    provider: k8s.Provider,
    after: Sequence[pulumi.Resource] = (),
    privileged: bool = False,
) -> k8s.helm.v3.Release:
    """A platform namespace (`<name>-namespace`) and the pinned release installed into it (`<name>-release`).

    `after`: releases that must be installed first (they bring CRDs this release's objects use). `privileged`: the
    release runs node agents (Pod Security `privileged` on the namespace).
    """
    ns = create(f"{name}-namespace", system_namespace(namespace, privileged), pulumi.ResourceOptions(parent=component, provider=provider))
    return helm_release(
        f"{name}-release",
        release,
        chart,
        namespace,
        values,
        pulumi.ResourceOptions(parent=component, provider=provider, depends_on=[ns, *after]),
    )


def create(name: str, manifest: Manifest, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The Pulumi resource for one manifest: `kubernetes:<group>/<version>:<Kind>` with all its top-level fields as inputs.

    Only PriorityClass keeps its typed class (its defaults and input order are what stacks already
    recorded). The typed classes of the other kinds send the same type token and inputs, but carry
    aliases to API versions this program never created (NetworkPolicy: extensions/v1beta1,
    RoleBinding: rbac v1alpha1/v1beta1), and the SDK resolves every alias to a URN for each of the
    ~1,400 tenant objects of a 200-tenant stack (pulumi/runtime/resource.py
    `collapse_alias_to_urn`): work with no effect on any state. Dropping them (and the typed modules'
    import) cut `plan` of a 100-pool / 200-tenant stack from 30.2 to 22.7 s CPU (docs: benchmarks).
    `k8s.apiextensions.CustomResource` is no substitute: in Python it only carries `spec`, and some
    kinds keep fields at the top level (Kueue's WorkloadPriorityClass: `value`, `description`).

    The object is a plain `pulumi.CustomResource`, not a subclass with its own `__init__`: the SDK
    turns every frame below the third `__init__` on the stack into a source position
    (pulumi/runtime/resource.py `_get_stack_trace`). Without a subclass constructor that third
    `__init__` is the component building the object, so Pulumi reports the object at the line that
    built its component, as it does for any resource a component creates, and walks two frames
    fewer for each of the ~2,700 Kubernetes objects of that stack.
    """
    if manifest["kind"] == "PriorityClass":
        return k8s.scheduling.v1.PriorityClass(
            name,
            metadata=manifest["metadata"],
            value=manifest["value"],
            global_default=manifest.get("globalDefault", False),
            preemption_policy=manifest.get("preemptionPolicy"),
            description=manifest.get("description"),
            opts=opts,
        )
    return pulumi.CustomResource(type_token(manifest), name, dict(manifest), opts)


def type_token(manifest: Manifest) -> str:
    """pulumi-kubernetes' type token of a manifest's kind; it names the core group's `v1` `core/v1`."""
    api = manifest["apiVersion"]
    return f"kubernetes:{api if '/' in api else 'core/' + api}:{manifest['kind']}"
