"""Capacity rules: production floors, Spot exposure, and Kueue quotas, flavors and queues per pool and tenant."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date
from typing import Any

from gpu_platform.aws.nodepools import BLOCK_END_TAG, BLOCK_START_TAG
from gpu_platform.behaviour.scheduler import untolerated_taint
from gpu_platform.catalog import Catalog
from gpu_platform.pools import GPU_RESOURCE, LABEL_POOL, LABEL_SPOT_FALLBACK
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.rules.rollout import fixed_capacity_tier
from gpu_platform_policies.view import (
    NODE_GROUP,
    Pool,
    api_group,
    dispatched,
    get,
    helm_releases,
    namespace_of,
    object_name,
    objects,
    pools,
    quantity,
    queue_quotas,
    tenant_namespaces,
)

KUEUE = "kueue.x-k8s.io"
WORKLOAD_CLASSES = ("training", "inference", "batch", "development")


@rule(
    "production-capacity-floor",
    "In production every workload class keeps reserved, capacity-block or on-demand nodes up (min > 0), not Spot alone.",
    "mandatory",
    "stack",
    category="capacity",
)
def production_capacity_floor(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A Spot-only class has no capacity at all when the Spot market dries up."""
    if not ctx.production:
        return
    by_class: dict[str, list[Pool]] = {}
    for p in pools(plan, ctx.catalog):
        if not p.spot_fallback:
            by_class.setdefault(p.workload_class or "unlabelled", []).append(p)
    for cls, members in sorted(by_class.items()):
        members.sort(key=lambda p: p.resource)
        names = ", ".join(p.name for p in members)
        floor = [p for p in members if not p.spot]
        if not floor:
            yield Finding(
                members[0].resource,
                f"workload class {cls} has only Spot capacity in production ({names}); add a reserved or on-demand pool",
                field="capacity",
            )
        elif not any(p.min_nodes > 0 for p in floor):
            yield Finding(
                floor[0].resource,
                f"workload class {cls} has no floor in production: its non-Spot pools ({', '.join(p.name for p in floor)}) "
                "can all scale to zero; give one of them min >= 1",
                field="scaling.min",
            )


@rule(
    "spot-exposure",
    "Spot's share of each workload class's GPUs at maximum size stays under max-spot-share-<class>.",
    "advisory",
    "stack",
    category="capacity",
    thresholds={
        "max-spot-share-training": 0.25,
        "max-spot-share-inference": 0.5,
        "max-spot-share-batch": 0.8,
        "max-spot-share-development": 0.8,
    },
)
def spot_exposure(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Cheap until a reclaim wave takes most of a class's GPUs at once."""
    totals: dict[str, list[int]] = {}
    largest: dict[str, tuple[int, str]] = {}  # the class's biggest Spot pool names the finding
    for p in pools(plan, ctx.catalog):
        if p.max_gpus is None or p.workload_class not in WORKLOAD_CLASSES or p.spot_fallback:
            continue  # a fallback group takes over Spot's work only while Spot is gone: the exposure stays Spot's
        t = totals.setdefault(p.workload_class, [0, 0])
        t[1] += p.max_gpus
        if p.spot:
            t[0] += p.max_gpus
            largest[p.workload_class] = max(largest.get(p.workload_class, (0, "")), (p.max_gpus, p.resource))
    for cls, (spot, total) in sorted(totals.items()):
        limit = ctx.threshold(f"max-spot-share-{cls}")
        if total and spot / total > limit:
            yield Finding(
                largest[cls][1],
                f"{cls}: {spot} of {total} GPUs at max size are Spot ({spot / total:.0%}); threshold max-spot-share-{cls} is {limit:.0%}",
                field="capacity",
            )


def kueue_present(plan: PlanView) -> bool:
    """True when the stack installs Kueue or declares any Kueue object."""
    return bool(helm_releases(plan, "kueue")) or any(api_group(r) == KUEUE for r in plan)


def flavor_pools(plan: PlanView) -> dict[str, str]:
    """ResourceFlavor name -> pool whose capacity backs its quota (pool label in spec.nodeLabels, else the object's own label).

    A Spot flavor selects its fallback group rather than one pool (gpu_platform.k8s.kueue.flavor_node_labels)
    and names its pool in metadata.labels.
    """
    out = {}
    for r in objects(plan, "ResourceFlavor", KUEUE):
        pool = get(r.inputs, "spec", "nodeLabels", LABEL_POOL) or get(r.inputs, "metadata", "labels", LABEL_POOL)
        if pool:
            out[object_name(r)] = str(pool)
    return out


def flavor_reaches(flavor: Resource, pool: Pool) -> bool:
    """Pods admitted to the flavor can be scheduled on the pool's nodes.

    Kueue adds the flavor's nodeLabels to the admitted pod's nodeSelector and its tolerations to the pod
    (kueue pkg/podset/podset.go Merge); kube-scheduler's NodeAffinity and TaintToleration filters then
    decide (gpu_platform.behaviour.scheduler): every label must match and every NoSchedule taint be tolerated.
    """
    labels = get(flavor.inputs, "spec", "nodeLabels", default={}) or {}
    tolerations = get(flavor.inputs, "spec", "tolerations", default=[]) or []
    if not isinstance(labels, Mapping) or not labels:
        return False
    taints = [{"key": k, "value": v, "effect": e} for k, v, e in pool.taints]
    return all(pool.labels.get(k) == v for k, v in labels.items()) and untolerated_taint(taints, tolerations) is None


def flavor_gpu_quotas(plan: PlanView) -> dict[tuple[str, str], tuple[float, list[str]]]:
    """(flavor, GPU resource) -> (nominal quota summed over every ClusterQueue, the ClusterQueues)."""
    out: dict[tuple[str, str], tuple[float, list[str]]] = {}
    for cq, flavor, resource, nominal in nominal_quotas(plan):
        n = quantity(nominal)
        if not resource.startswith("nvidia.com/") or n is None:
            continue
        total, where = out.get((flavor, resource), (0.0, []))
        out[(flavor, resource)] = (total + n, [*where, cq])
    return out


def nominal_quotas(plan: PlanView) -> Iterator[tuple[str, str, str, Any]]:
    """(ClusterQueue resource, flavor, resource name, nominalQuota) of every ClusterQueue entry this cluster's pools back.

    A MultiKueue manager's ClusterQueues are left out: their quota is the workers' (rule multikueue-quota-sums).
    """
    for r in objects(plan, "ClusterQueue", KUEUE):
        if not dispatched(plan, r):
            yield from ((r.name, flavor, resource, nominal) for flavor, resource, nominal in queue_quotas(r))


@rule(
    "kueue-quota-fits-pool",
    "Kueue nominal quotas per flavor and resource add up to no more than the pool offers (max-quota-overcommit).",
    "mandatory",
    "stack",
    category="capacity",
    thresholds={"max-quota-overcommit": 1.0},
)
def kueue_quota_fits_pool(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Quota the hardware cannot back admits jobs that then sit pending forever."""
    by_name = {p.name: p for p in pools(plan, ctx.catalog)}
    flavors = flavor_pools(plan)
    sums: dict[tuple[str, str], float] = {}
    where: dict[tuple[str, str], list[str]] = {}
    for cq, flavor, resource, nominal in nominal_quotas(plan):
        if not resource.startswith("nvidia.com/"):
            continue
        n = quantity(nominal)
        if n is None:
            yield Finding(cq, f"flavor {flavor}: nominalQuota {nominal!r} for {resource} is not a number")
            continue
        sums[(flavor, resource)] = sums.get((flavor, resource), 0) + n
        where.setdefault((flavor, resource), []).append(cq)
    factor = ctx.threshold("max-quota-overcommit")
    for (flavor, resource), total in sorted(sums.items()):
        pool = by_name.get(flavors.get(flavor, ""))
        if pool is None:
            yield Finding(where[(flavor, resource)][0], f"flavor {flavor} selects no GPU pool of this stack")
            continue
        offered = (pool.capacity(ctx.catalog) or {}).get(resource)
        if pool.capacity(ctx.catalog) is None:
            continue  # GPU count unknown (on-prem without a gpus-per-node label): nothing to compare
        if offered is None and total > 0:
            yield Finding(where[(flavor, resource)][0], f"flavor {flavor}: pool {pool.name} offers no {resource}")
        elif offered is not None and total > offered * factor:
            queues = ", ".join(sorted(set(where[(flavor, resource)])))
            over = f" x max-quota-overcommit {factor:g}" if factor != 1 else ""
            yield Finding(
                where[(flavor, resource)][0],
                f"quotas on pool {pool.name} (flavor {flavor}) add up to {in_gpus(pool, ctx.catalog, resource, total)} ({queues}) "
                f"but the pool has {offered / (pool.resources_per_gpu(ctx.catalog) or {}).get(resource, 1):g} GPUs at max size{over}",
            )


def in_gpus(pool: Pool, catalog: Catalog, resource: str, amount: float) -> str:
    """An amount of a pool's extended resource in the GPUs a stack's quota is written in, with the unit Kueue counts.

    Tenants write `gpus: N` (physical GPUs' worth); the ClusterQueue holds N x the pool's resources per
    GPU (gpu_platform.pools.resources_per_gpu): MIG slices of its layout, or time-slicing/MPS replicas.
    """
    per = (pool.resources_per_gpu(catalog) or {}).get(resource)
    if not per or (per == 1 and resource == GPU_RESOURCE):
        return f"{amount:g} GPUs"
    how = f"{per} per GPU in layout {pool.mig_config}" if pool.sharing == "mig" else f"{per} {pool.sharing} replicas per GPU"
    return f"{amount / per:g} GPUs ({amount:g} {resource}, {how})"


@rule(
    "pool-has-flavor",
    "Every GPU pool has a Kueue ResourceFlavor selecting it (where the stack runs Kueue).",
    "mandatory",
    "stack",
    category="capacity",
)
def pool_has_flavor(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A pool no flavor's pods can reach is capacity no queue can admit work onto."""
    if not kueue_present(plan):
        return
    flavors = objects(plan, "ResourceFlavor", KUEUE)
    for p in pools(plan, ctx.catalog):
        if not any(flavor_reaches(f, p) for f in flavors):
            yield Finding(
                p.resource, f"pool {p.name} has no ResourceFlavor whose node labels and tolerations reach its nodes ({LABEL_POOL}: {p.name})"
            )


@rule(
    "kueue-tas-queues-not-mixed",
    "No ClusterQueue mixes topology-aware flavors with others: Kueue would refuse unannotated pod sets on the first and annotated ones on the rest.",
    "mandatory",
    "stack",
    category="capacity",
)
def kueue_tas_queues_not_mixed(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Kueue's tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS (gpu_platform.behaviour.kueue_tas), at the lockfile's tag.

    In a queue that is not TAS-only, a pod set without a topology annotation is refused by every flavor with a
    topologyName ("supports only TopologyAwareScheduling"), and one with it by every other flavor covering a
    resource it asks, the cpu flavor included: either the topology-aware capacity is unreachable or the job is
    never admitted. The platform keeps topology-aware flavors in each tenant's `whole-nodes` queue.
    """
    flavors = {object_name(f): f for f in objects(plan, "ResourceFlavor", KUEUE)}
    for r in objects(plan, "ClusterQueue", KUEUE):
        names = [str(f.get("name")) for g in get(r.inputs, "spec", "resourceGroups", default=[]) or [] for f in g.get("flavors", [])]
        tas = sorted(n for n in names if n in flavors and get(flavors[n].inputs, "spec", "topologyName"))
        rest = sorted(set(names) - set(tas))
        if tas and rest:
            yield Finding(
                r.name,
                f"ClusterQueue {object_name(r)} mixes topology-aware flavors ({', '.join(tas)}) with others ({', '.join(rest)}): Kueue refuses "
                "pod sets without a topology annotation on the first and those with one on the rest; keep topology-aware flavors in their own queue",
            )


@rule(
    "spot-fallback-sized",
    "A Spot flavor that promises a fallback reaches on-demand nodes for all of its quota, and only its own: no other flavor selects them.",
    "mandatory",
    "stack",
    category="capacity",
)
def spot_fallback_sized(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A fallback smaller than the Spot quota strands admitted work at a reclaim; a shared one takes another tenant's nodes.

    Judged on quotas, so a stack that declares no demand is judged too. Kueue admits up to the sum of the
    ClusterQueues' nominal quotas on a flavor; when Spot cannot launch, the cluster-autoscaler scales the
    on-demand groups those pods can reach (flavor_reaches). If that group is also another flavor's,
    Kueue counts its nodes against that flavor's quota while the Spot pods hold them.
    """
    flavors = {object_name(f): f for f in objects(plan, "ResourceFlavor", KUEUE)}
    all_pools = pools(plan, ctx.catalog)
    by_name = {p.name: p for p in all_pools}
    owners = flavor_pools(plan)
    quotas = flavor_gpu_quotas(plan)
    for name, f in sorted(flavors.items()):
        spot = by_name.get(owners.get(name, ""))
        if spot is None or not spot.spot or LABEL_SPOT_FALLBACK not in (get(f.inputs, "spec", "nodeLabels", default={}) or {}):
            continue
        reach = [p for p in all_pools if not p.spot and flavor_reaches(f, p)]
        for p in reach:
            others = sorted(o for o, g in flavors.items() if o != name and flavor_reaches(g, p))
            if others:
                yield Finding(
                    f.name,
                    f"Spot flavor {name}'s fallback pool {p.name} is also reached by flavor {', '.join(others)}: pods admitted on "
                    f"Spot quota take nodes Kueue counts for {others[0]}; give {spot.name} its own fallback group (fallback: true)",
                )
        for (flavor, resource), (total, queues) in sorted(quotas.items()):
            if flavor != name or total <= 0:
                continue
            offered = sum((p.capacity(ctx.catalog) or {}).get(resource, 0) for p in reach)
            if offered < total:
                where = ", ".join(p.name for p in reach) or "none"
                yield Finding(
                    queues[0],
                    f"Spot flavor {name} admits {in_gpus(spot, ctx.catalog, resource, total)} ({', '.join(sorted(set(queues)))}) but its pods "
                    f"reach only {in_gpus(spot, ctx.catalog, resource, offered)} on demand (fallback pools: {where}); a reclaim strands the rest",
                )


@rule(
    "tenant-has-quota-and-queue",
    "Every tenant namespace has a ResourceQuota and (where the stack runs Kueue) a LocalQueue.",
    "mandatory",
    "stack",
    category="capacity",
)
def tenant_has_quota_and_queue(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Without a quota one tenant can take the cluster; without a queue its jobs bypass admission."""
    quotas = {namespace_of(r) for r in objects(plan, "ResourceQuota", "")}
    queues = {namespace_of(r) for r in objects(plan, "LocalQueue", KUEUE)}
    kueue = kueue_present(plan)
    for ns, resource in sorted(tenant_namespaces(plan).items()):
        if ns not in quotas:
            yield Finding(resource, f"tenant namespace {ns} has no ResourceQuota")
        if kueue and ns not in queues:
            yield Finding(resource, f"tenant namespace {ns} has no Kueue LocalQueue")


@rule(
    "fixed-capacity-placement",
    "Reserved and Capacity Block node groups use one subnet (the reservation's zone); Capacity Block groups name no instance type and can reach 0.",
    "mandatory",
    "resource",
    category="capacity",
    types=(NODE_GROUP,),
)
def fixed_capacity_placement(r: Resource, ctx: Context) -> Iterator[Finding]:
    """An ODCR or Capacity Block lives in one zone; elsewhere instances bill On-Demand or do not launch."""
    tier = fixed_capacity_tier(r)
    if tier is None:
        return
    subnets = r.inputs.get("subnetIds") or []
    if len(subnets) != 1:
        yield Finding(
            r.name, f"{len(subnets)} subnets on {tier} capacity; use exactly one, in the reservation's Availability Zone", field="availabilityZones"
        )
    if tier != "capacity-block":
        return
    # EKS user guide, "Create a managed node group with Capacity Blocks for ML".
    if r.inputs.get("instanceTypes"):
        yield Finding(
            r.name, "instanceTypes is set on a Capacity Block node group; put the instance type in the launch template only", field="instanceTypes"
        )
    low = get(r.inputs, "scalingConfig", "minSize")
    if low not in (None, 0):
        yield Finding(
            r.name, f"scalingConfig.minSize is {low}; a Capacity Block group must be able to sit at 0 outside the block", field="scaling.min"
        )


def no_capacity_block(plan: PlanView, ctx: Context) -> str | None:
    """Why capacity-block-in-dates has nothing to judge: no Capacity Block node group."""
    blocks = [r for r in plan.of_type(NODE_GROUP) if r.inputs.get("capacityType") == "CAPACITY_BLOCK"]
    return None if blocks else "the stack has no Capacity Block pool"


@rule(
    "capacity-block-in-dates",
    "Capacity Block pools declare their dates, the block has not ended, and its flavor carries quota only inside the dates.",
    "mandatory",
    "stack",
    category="capacity",
    not_applicable=no_capacity_block,
)
def capacity_block_in_dates(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Outside its dates a block's node group cannot launch: quota on it pins work to nodes that never come.

    Kueue admits on quota alone (flavorassigner.go fitsResourceQuota) and then adds the flavor's node
    labels to the pods; a block's flavor with quota outside the dates (or after the block ended, when
    evicted pods come back) leaves them pending on an empty pool.
    """
    held = {flavor_pools(plan).get(f) for _, f, res, n in nominal_quotas(plan) if res.startswith("nvidia.com/") and (quantity(n) or 0) > 0}
    for r in plan.of_type(NODE_GROUP):
        if r.inputs.get("capacityType") != "CAPACITY_BLOCK":
            continue
        tags = r.inputs.get("tags") or {}
        pool = str((r.inputs.get("labels") or {}).get(LABEL_POOL, r.name))
        start, end = tags.get(BLOCK_START_TAG), tags.get(BLOCK_END_TAG)
        if not start or not end:
            yield Finding(
                r.name,
                f"Capacity Block pool {pool} declares no dates; allowed: reservation.start and reservation.end (YYYY-MM-DD)",
                field="reservation",
            )
            continue
        try:
            first, last = date.fromisoformat(str(start)), date.fromisoformat(str(end))
        except ValueError:
            yield Finding(r.name, f"Capacity Block pool {pool}: dates {start!r}..{end!r} are not YYYY-MM-DD", field="reservation")
            continue
        if last <= ctx.day:
            yield Finding(
                r.name, f"Capacity Block of pool {pool} ended on {last}; remove the pool or declare the new block's dates", field="reservation.end"
            )
        elif ctx.day < first and pool in held:
            yield Finding(
                r.name,
                f"Capacity Block of pool {pool} starts on {first} but its flavor carries quota now; allowed: 0 until then",
                field="reservation.start",
            )
