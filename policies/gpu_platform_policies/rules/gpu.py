"""GPU hygiene: taints, Spot marking, whole GPUs for training, MIG layouts, sharing modes and replicas; EFA usable by pods."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from gpu_platform.behaviour import dra as behaviour_dra
from gpu_platform.behaviour import gpu_operator, scheduler, ssa
from gpu_platform.efa import EFA_RESOURCE, HUGEPAGES_RESOURCE
from gpu_platform.k8s.dra import CHART as DRA_CHART
from gpu_platform.k8s.sharing import device_plugin_refusal, effective_mig_strategy
from gpu_platform.pools import (
    ANNOTATION_TAINTS,
    DRA_GPU_CLASS,
    GPU_TAINT,
    INTERRUPTIBLE_TAINT,
    LABEL_ALLOCATION,
    LABEL_DEPLOY_DEVICE_PLUGIN,
    LABEL_EFA,
    LABEL_INTERRUPTIBLE,
)
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.view import LAUNCH_TEMPLATE, NODE_GROUP, NODE_PATCH, TAINT_EFFECTS, Pool, get, helm_releases, pool_of, pools

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
POOL_TYPES = (NODE_GROUP, NODE_PATCH)


def _has_taint(pool: Pool, key: str, effect: str) -> bool:
    return any(k == key and e in (effect, "NoExecute") for k, _, e in pool.taints)


@rule(
    "gpu-pool-tainted",
    "Every GPU pool carries the nvidia.com/gpu NoSchedule taint, so only GPU pods land on GPU nodes.",
    "mandatory",
    "resource",
    category="gpu",
    types=POOL_TYPES,
)
def gpu_pool_tainted(r: Resource, ctx: Context) -> Iterator[str]:
    """Untainted GPU nodes fill up with CPU pods and strand the GPUs."""
    pool = pool_of(r, ctx.catalog)
    if pool is not None and not _has_taint(pool, GPU_TAINT.key, GPU_TAINT.effect):
        yield f"GPU pool {pool.name} has no {GPU_TAINT.key} taint with effect {GPU_TAINT.effect}"


@rule(
    "node-patch-owns-only-its-keys",
    "On-prem node patches own only the platform's label and annotation keys, never a whole list such as spec.taints.",
    "mandatory",
    "resource",
    category="gpu",
    types=(NODE_PATCH,),
)
def node_patch_owns_only_its_keys(r: Resource, ctx: Context) -> Iterator[str]:
    """A server-side apply that names an atomic field owns all of it; forced, it strips what others set there.

    Node spec.taints is an atomic list in the API server's OpenAPI (x-kubernetes-list-type: atomic),
    so a patch naming it replaces the kubelet's, node-problem-detector's and admins' taints
    (gpu_platform.behaviour.ssa, from kube-openapi smd.go and structured-merge-diff typed/merge.go).
    """
    defs = ssa.openapi_definitions(ctx.deployed.kubernetes.version)
    applied = {k: v for k, v in r.inputs.items() if k in ("metadata", "spec", "status")}
    for path in sorted(ssa.owned_fields(applied, ssa.definition(defs, "Node"), defs)):
        if path[:2] in (("metadata", "labels"), ("metadata", "annotations")) or path == ("metadata", "name"):
            continue
        yield (
            f"the patch owns {'.'.join(path)} whole: a forced apply replaces what other managers put there; "
            f"declare taints in the {ANNOTATION_TAINTS} annotation (applied by the k8s_node_taints role), not spec.taints"
        )


@rule(
    "spot-pool-interruptible",
    "Spot GPU pools carry the interruptible taint and label, so only jobs that tolerate loss run there.",
    "mandatory",
    "resource",
    category="gpu",
    types=POOL_TYPES,
)
def spot_pool_interruptible(r: Resource, ctx: Context) -> Iterator[str]:
    """AWS reclaims Spot capacity with two minutes' notice."""
    pool = pool_of(r, ctx.catalog)
    if pool is None or not pool.spot:
        return
    if not _has_taint(pool, INTERRUPTIBLE_TAINT.key, INTERRUPTIBLE_TAINT.effect):
        yield f"Spot pool {pool.name} has no {INTERRUPTIBLE_TAINT.key} NoSchedule taint"
    if pool.labels.get(LABEL_INTERRUPTIBLE) != "true":
        yield f"Spot pool {pool.name} has no label {LABEL_INTERRUPTIBLE}=true"


@rule(
    "training-whole-gpus",
    "Training pools use whole GPUs: no time-slicing, MPS or MIG.",
    "mandatory",
    "resource",
    category="gpu",
    types=POOL_TYPES,
)
def training_whole_gpus(r: Resource, ctx: Context) -> Iterator[Finding]:
    """Sliced GPUs break NCCL collectives and make step times unpredictable."""
    pool = pool_of(r, ctx.catalog)
    if pool is None or pool.workload_class != "training":
        return
    if pool.sharing != "none":
        yield Finding(r.name, f"training pool {pool.name} shares its GPUs ({pool.sharing}); training needs whole GPUs", field="sharing")
    if pool.device_plugin_config != "default":
        yield Finding(
            r.name, f"training pool {pool.name} selects device-plugin config {pool.device_plugin_config!r}; allowed: 'default'", field="sharing"
        )
    if pool.mig_config:
        yield Finding(r.name, f"training pool {pool.name} selects MIG layout {pool.mig_config!r}; allowed: MIG off (all-disabled)", field="sharing")


@rule(
    "mig-config-valid",
    "A pool's MIG layout exists for its GPU model (standard mig-parted configs from the catalog).",
    "mandatory",
    "resource",
    category="gpu",
    types=POOL_TYPES,
)
def mig_config_valid(r: Resource, ctx: Context) -> Iterator[Finding]:
    """mig-manager leaves nodes unschedulable when asked for a layout the GPU cannot make."""
    pool = pool_of(r, ctx.catalog)
    if pool is None or (pool.mig_config is None and pool.sharing != "mig"):
        return
    gpu = ctx.catalog.gpus.get(pool.gpu_model or "")
    if gpu is None:
        yield Finding(r.name, f"pool {pool.name} has unknown GPU model {pool.gpu_model!r}; cannot validate MIG")
    elif not gpu.supports_mig:
        yield Finding(r.name, f"pool {pool.name}: {gpu.name} does not support MIG", field="sharing.mode")
    elif pool.mig_config is None:
        yield Finding(
            r.name, f"pool {pool.name} shares by MIG but selects no MIG layout; allowed: {', '.join(sorted(gpu.mig_configs))}", field="sharing"
        )
    elif pool.mig_config not in gpu.mig_configs:
        allowed = ", ".join(sorted(gpu.mig_configs))
        yield Finding(
            r.name, f"pool {pool.name}: MIG layout {pool.mig_config!r} does not exist for {gpu.name}; allowed: {allowed}", field="sharing.migConfig"
        )


def device_plugin_configs(r: Resource) -> dict[str, Mapping[str, Any]]:
    """Config name -> parsed device-plugin config, for a ConfigMap that holds them (else empty)."""
    out: dict[str, Mapping[str, Any]] = {}
    for key, text in (r.inputs.get("data") or {}).items():
        try:
            doc = yaml.safe_load(text) if isinstance(text, str) else None
        except yaml.YAMLError:
            continue
        if isinstance(doc, Mapping) and doc.get("version") == "v1" and ("sharing" in doc or "flags" in doc):
            out[str(key)] = doc
    return out


def _shared_replicas(doc: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for mode in ("timeSlicing", "mps"):
        for res in get(doc, "sharing", mode, "resources", default=[]) or []:
            out.append((mode, res.get("replicas") if isinstance(res, Mapping) else None))
    return out


def _selected_configs(plan: PlanView) -> dict[str, Mapping[str, Any]]:
    """Device-plugin config name -> parsed config, from every ConfigMap of the plan that holds them."""
    out: dict[str, Mapping[str, Any]] = {}
    for r in plan.of_type(CONFIG_MAP):
        out.update(device_plugin_configs(r))
    return out


@rule(
    "sharing-modes-exclusive",
    "Time-slicing or MPS and MIG are never both on for one pool, and each pool's device-plugin config starts under the cluster's MIG strategy.",
    "mandatory",
    "stack",
    category="gpu",
)
def sharing_modes_exclusive(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Slicing MIG instances again double-counts GPU memory; MPS under a cluster-wide `mixed` strategy never starts.

    The GPU Operator turns a non-empty `mig.strategy` into MIG_STRATEGY for every node's device plugin,
    overriding each config's `flags.migStrategy`; the plugin refuses MPS with `mixed`
    (gpu_platform.k8s.sharing.device_plugin_refusal), and a MIG pool without `mixed` offers no MIG resources.
    """
    configs = _selected_configs(plan)
    releases = helm_releases(plan, "gpu-operator")
    operator = get(releases[0].inputs, "values", default={}) if releases else None
    for r in plan.of_type(*POOL_TYPES):
        pool = pool_of(r, ctx.catalog)
        if pool is None:
            continue
        selected = configs.get(pool.device_plugin_config, {})
        sliced = pool.sharing in ("time-slicing", "mps") or pool.replicas is not None or bool(_shared_replicas(selected))
        mig_on = pool.mig_config is not None or pool.sharing == "mig"
        if sliced and mig_on:
            yield Finding(
                r.name, f"pool {pool.name} time-slices or MPS-shares ({pool.device_plugin_config!r}) and uses MIG ({pool.mig_config!r}); choose one"
            )
        if operator is None or not selected:
            continue
        strategy = effective_mig_strategy(selected, operator)
        refusal = device_plugin_refusal(selected, operator)
        if refusal:
            yield Finding(
                r.name,
                f"pool {pool.name}: the device plugin refuses config {pool.device_plugin_config!r} ({refusal}) and advertises no GPUs; "
                f"the GPU Operator's mig.strategy {strategy!r} overrides the config's flags.migStrategy; allowed: an empty mig.strategy "
                "with the strategy set per config",
            )
        elif pool.sharing == "mig" and strategy != "mixed":
            yield Finding(
                r.name,
                f"pool {pool.name} is MIG-sliced but its device plugin runs with MIG strategy {strategy!r}, so no nvidia.com/mig-* "
                "resource is advertised; allowed: 'mixed' for MIG pools",
            )


@rule(
    "sharing-replicas-bounds",
    "Time-slicing and MPS replicas per GPU stay within bounds (thresholds sharing-min-replicas, sharing-max-replicas).",
    "mandatory",
    "resource",
    category="gpu",
    types=(*POOL_TYPES, CONFIG_MAP),
    thresholds={"sharing-min-replicas": 2, "sharing-max-replicas": 16},
)
def sharing_replicas_bounds(r: Resource, ctx: Context) -> Iterator[str | Finding]:
    """Too many replicas starve each tenant of memory; one replica is just a renamed GPU."""
    lo, hi = ctx.threshold("sharing-min-replicas"), ctx.threshold("sharing-max-replicas")
    if r.type == CONFIG_MAP:
        for name, doc in device_plugin_configs(r).items():
            for mode, replicas in _shared_replicas(doc):
                if not isinstance(replicas, int) or not lo <= replicas <= hi:
                    yield f"device-plugin config {name!r}: {mode} replicas {replicas!r}; allowed: {lo:g}..{hi:g}"
        return
    pool = pool_of(r, ctx.catalog)
    if pool is None or pool.sharing not in ("time-slicing", "mps"):
        return
    if pool.replicas is None or not lo <= pool.replicas <= hi:
        message = f"pool {pool.name}: {pool.sharing} replicas {pool.replicas!r} (from {pool.device_plugin_config!r}); allowed: {lo:g}..{hi:g}"
        yield Finding(r.name, message, field="sharing.replicas")


EFA_CHART = "aws-efa-k8s-device-plugin"
EFA_INTERFACE_TYPES = frozenset({"efa", "efa-only"})


def efa_node_groups(plan: PlanView) -> list[Resource]:
    """Node groups whose launch template attaches EFA interfaces (or that are labelled as EFA pools)."""
    efa_parents = {
        lt.parent
        for lt in plan.of_type(LAUNCH_TEMPLATE)
        if any(str(i.get("interfaceType")) in EFA_INTERFACE_TYPES for i in lt.inputs.get("networkInterfaces") or [] if isinstance(i, Mapping))
    }
    return [ng for ng in plan.of_type(NODE_GROUP) if ng.parent in efa_parents or (ng.inputs.get("labels") or {}).get(LABEL_EFA) == "true"]


def _misses(release: Resource, ng: Resource) -> str | None:
    """Why the device plugin DaemonSet of this release cannot run on the node group's nodes, or None."""
    values = release.inputs.get("values") or {}
    labels = ng.inputs.get("labels") or {}
    selector = values.get("nodeSelector") or {}
    wrong = sorted(k for k, v in selector.items() if labels.get(k) != v)
    if wrong:
        return f"its nodeSelector {', '.join(wrong)} does not match the pool's labels"
    supported = get(values, "supportedInstanceLabels", "values")
    if supported is not None:
        missing = sorted(set(ng.inputs.get("instanceTypes") or []) - set(supported))
        if missing:
            return f"its supportedInstanceLabels leave out {', '.join(missing)}"
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}, *(t for t in values.get("tolerations") or [] if isinstance(t, Mapping))]
    taints = [{**t, "effect": TAINT_EFFECTS.get(str(t.get("effect")), str(t.get("effect")))} for t in ng.inputs.get("taints") or []]
    taint = scheduler.untolerated_taint(taints, tolerations)
    if taint is not None:
        return f"it does not tolerate the pool's taint {taint.get('key')}={taint.get('value', '')}:{taint['effect']}"
    return None


@rule(
    "efa-device-plugin",
    "Every EFA pool runs the AWS EFA device plugin, so pods can request vpc.amazonaws.com/efa.",
    "mandatory",
    "stack",
    category="gpu",
)
def efa_device_plugin(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Without the plugin the node advertises no EFA devices: EFA pods never schedule, others fall back to TCP.

    Reproduces where the chart's DaemonSet can run (aws/eks-charts stable/aws-efa-k8s-device-plugin,
    templates/daemonset.yaml: nodeSelector, tolerations plus CriticalAddonsOnly, required affinity on
    supportedInstanceLabels) against each EFA node group's labels, taints and instance types.
    """
    releases = helm_releases(plan, EFA_CHART)
    for ng in efa_node_groups(plan):
        if not releases:
            yield Finding(ng.name, f"EFA node group has no {EFA_CHART} release: its nodes advertise no {EFA_RESOURCE}")
            continue
        reasons = [why for r in releases if (why := _misses(r, ng)) is not None]
        if len(reasons) == len(releases):
            yield Finding(ng.name, f"the {EFA_CHART} release does not run on this EFA node group: {'; '.join(reasons)}")


def _kueue_covers(plan: PlanView, resource: str) -> bool:
    """True when some ClusterQueue has a resource group covering the resource."""
    return any(
        resource in (group.get("coveredResources") or [])
        for cq in plan
        if cq.inputs.get("kind") == "ClusterQueue"
        for group in get(cq.inputs, "spec", "resourceGroups", default=[]) or []
        if isinstance(group, Mapping)
    )


@rule(
    "kueue-admits-efa",
    "Where Kueue runs with EFA pools, it excludes or covers vpc.amazonaws.com/efa and hugepages-2Mi.",
    "mandatory",
    "stack",
    category="gpu",
)
def kueue_admits_efa(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Kueue leaves a workload pending when it requests a resource no ClusterQueue covers.

    Kueue's flavor assigner (pkg/scheduler/flavorassigner/flavorassigner.go, findFlavorForPodSets:
    "resource ... unavailable in ClusterQueue") runs after pkg/workload/workload.go
    dropExcludedResources removes requests matching `resources.excludeResourcePrefixes`.
    """
    if not efa_node_groups(plan):
        return
    for release in helm_releases(plan, "kueue"):
        raw = get(release.inputs, "values", "managerConfig", "controllerManagerConfigYaml")
        config = yaml.safe_load(raw) if isinstance(raw, str) else {}
        prefixes = tuple(get(config or {}, "resources", "excludeResourcePrefixes", default=[]) or [])
        if get(config or {}, "resources", "quotaCheckStrategy") == "IgnoreUndeclared":
            continue
        for resource in (EFA_RESOURCE, HUGEPAGES_RESOURCE):
            if not resource.startswith(prefixes) and not _kueue_covers(plan, resource):
                yield Finding(
                    release.name,
                    f"EFA pods request {resource}, which no ClusterQueue covers and resources.excludeResourcePrefixes does not exclude; "
                    "Kueue keeps them pending",
                )


def _dra_driver_misses(release: Resource, pool: Pool) -> str | None:
    """Why the DRA driver's kubelet plugin (chart templates/kubeletplugin.yaml) does not run on the pool's nodes, or None."""
    plugin = get(release.inputs, "values", "kubeletPlugin") or {}
    selector = plugin.get("nodeSelector") or {}
    wrong = sorted(k for k, v in selector.items() if pool.labels.get(k) != v)
    if not selector.get(LABEL_ALLOCATION):
        return f"its kubeletPlugin.nodeSelector does not name {LABEL_ALLOCATION}, so it would also run beside the device plugin"
    if wrong:
        return f"its kubeletPlugin.nodeSelector {', '.join(wrong)} does not match the pool's labels"
    tolerations = [t for t in plugin.get("tolerations") or [] if isinstance(t, Mapping)]
    taint = scheduler.untolerated_taint([{"key": k, "value": v, "effect": e} for k, v, e in pool.taints], tolerations)
    if taint is not None:
        return f"its kubelet plugin does not tolerate the pool's taint {taint.get('key')}={taint.get('value', '')}:{taint['effect']}"
    return None


@rule(
    "dra-pool-served",
    "Every DRA pool runs the DRA driver and not the device plugin, and Kueue counts its claims; no other pool switches the device plugin off.",
    "mandatory",
    "stack",
    category="gpu",
)
def dra_pool_served(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A GPU node serves its GPUs through exactly one of the device plugin and the DRA driver.

    The GPU Operator runs its device plugin on a node unless the node says `nvidia.com/gpu.deploy.device-plugin=false`
    (behaviour.gpu_operator, state_manager.go addGPUStateLabels at the pinned chart); the DRA driver's kubelet plugin runs where
    its nodeSelector and tolerations let it (chart templates/kubeletplugin.yaml); both on one node hand the same GPU
    to two pods (the chart's templates/validation.yaml refuses to install unless told they are apart). Kueue counts a
    claim only for a mapped DeviceClass (behaviour.dra) and, with KueueDRAIntegrationExtendedResource on, charges
    device-plugin GPUs to the DRA quota name (kueue pkg/dra/extended_resources.go resolveQuotaKey).
    """
    drivers = helm_releases(plan, DRA_CHART)
    dra = [p for p in pools(plan, ctx.catalog) if p.labels.get(LABEL_ALLOCATION) == "dra"]
    for p in pools(plan, ctx.catalog):
        if p.labels.get(LABEL_ALLOCATION) != "dra" and not gpu_operator.runs_device_plugin(p.labels):
            yield Finding(p.resource, f"GPU pool {p.name} switches the device plugin off but is no DRA pool: nothing serves its GPUs")
    for p in dra:
        if gpu_operator.runs_device_plugin(p.labels):
            yield Finding(
                p.resource,
                f"DRA pool {p.name} does not carry {LABEL_DEPLOY_DEVICE_PLUGIN}=false: the device plugin and the DRA driver would both "
                "hand out its GPUs",
            )
        if not drivers:
            yield Finding(p.resource, f"DRA pool {p.name} has no {DRA_CHART} release: no driver publishes its GPUs, claims never allocate")
            continue
        reasons = [why for r in drivers if (why := _dra_driver_misses(r, p)) is not None]
        if len(reasons) == len(drivers):
            yield Finding(p.resource, f"the {DRA_CHART} release does not run on DRA pool {p.name}: {'; '.join(reasons)}")
    if not dra:
        return
    for release in helm_releases(plan, "kueue"):
        raw = get(release.inputs, "values", "managerConfig", "controllerManagerConfigYaml")
        config = yaml.safe_load(raw) if isinstance(raw, str) else {}
        mappings = get(config or {}, "resources", "deviceClassMappings", default=[]) or []
        if DRA_GPU_CLASS not in behaviour_dra.class_map(mappings):
            yield Finding(
                release.name, f"Kueue's resources.deviceClassMappings does not map {DRA_GPU_CLASS}: every claim on the DRA pools is inadmissible"
            )
        gates = get(release.inputs, "values", "controllerManager", "featureGates", default=[]) or []
        if not any(isinstance(g, Mapping) and g.get("name") == "KueueDRAIntegrationExtendedResource" and g.get("enabled") is False for g in gates):
            yield Finding(
                release.name,
                "Kueue runs KueueDRAIntegrationExtendedResource (on by default): nvidia.com/gpu requests would be charged to the DRA quota "
                f"where the API server keeps {DRA_GPU_CLASS}'s extendedResourceName",
            )
