"""Change rules: what a pull request does to running GPU capacity, judged from the base and working-tree plans.

Run only by `gpu-platform check --base REF`. Each is a pure function of a ChangeView and names the
stack key path the user wrote (the command adds the line).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.behaviour.provider_diff import NODE_GROUP
from gpu_platform.behaviour.wiring import ByValue
from gpu_platform.change.diff import ResourceChange
from gpu_platform.k8s.tenants import PRIORITY_VALUES
from gpu_platform.pools import LABEL_ALLOCATION
from gpu_platform_policies.changeview import ChangeView, pool_gpus, quota_total
from gpu_platform_policies.model import Finding, PlanView, Resource, rule
from gpu_platform_policies.rules.rollout import FIXED_TIERS
from gpu_platform_policies.strictness import loosened, setting_of
from gpu_platform_policies.view import SUBNET, Pool, get, instance_types_of, kind_of, launch_template_of, object_name

MAINTENANCE_HINT = "state the maintenance in a commit trailer `GPU-Maintenance: {subject} <start>/<end> <ticket>`"
# Node group inputs -> the pool key that sets them (gpu_platform/aws/nodepools.py).
POOL_FIELD_KEYS = {
    "instanceTypes": "instanceTypes",
    "subnetIds": "availabilityZones",
    "capacityType": "capacity",
    "nodeGroupName": "name",
    "scalingConfig": "scaling",
    "labels": "sharing",
}
# Launch template inputs -> the pool key that sets them.
TEMPLATE_FIELD_KEYS = {
    "blockDeviceMappings": "rootVolumeGiB",
    "capacityReservationSpecification": "reservation",
    "placement": "reservation",
    "instanceType": "instanceTypes",
    "networkInterfaces": "efa",
    "userData": "efa",
}
ROLL_LOCK_FACTS = {"releaseVersion": "amiRelease", "version": "kubernetes"}


def _node_group(view: ChangeView, name: str, after: bool = True) -> Resource | None:
    plan = view.after if after else view.before
    return next((r for r in plan.of_type(NODE_GROUP) if r.name == name), None)


def pool_pairs(view: ChangeView) -> Iterator[tuple[Pool, Pool]]:
    """Each GPU pool of the base plan with the same pool (by name) of the working tree's plan, in the base's order.

    A pool on one side only (added or removed) has no pair and is left out.
    """
    after = view.pools_after()
    for name, old in view.pools_before().items():
        new = after.get(name)
        if new is not None:
            yield old, new


def node_group_changes(view: ChangeView, action: str) -> Iterator[tuple[ResourceChange, Pool]]:
    """Each node-group change with this action, with the base plan's GPU pool whose node group it is.

    A change to a node group of no GPU pool (the system nodes) is left out.
    """
    before = view.pools_before()
    for c in view.changes:
        if c.type != NODE_GROUP or c.action != action:
            continue
        pool = next((p for p in before.values() if p.resource == c.name), None)
        if pool is not None:
            yield c, pool


def _pool_key(view: ChangeView, pool: str, fields: tuple[str, ...], table: dict[str, str]) -> str:
    for f in fields:
        top = f.split(".", 1)[0]
        if top in table:
            return view.key_of("nodePools", pool, table[top])
    return view.key_of("nodePools", pool)


@rule(
    "fixed-capacity-replaced",
    "A reserved or Capacity Block node group is not replaced (a force-new field changed) without a stated maintenance.",
    "mandatory",
    "change",
    category="change",
)
def fixed_capacity_replaced(view: ChangeView) -> Iterator[Finding]:
    """Pulumi creates the replacement before deleting the old group: a full reservation has no second set of instances."""
    for c, pool in node_group_changes(view, "replace"):
        if pool.tier not in FIXED_TIERS or view.stated_maintenance(pool.name):
            continue
        why = ", ".join(c.replace_fields)
        yield Finding(
            c.name,
            f"pool {pool.name} ({pool.tier}) is replaced: {why} changed, and EKS cannot change that in place "
            f"(ForceNew in terraform-provider-aws eks/node_group.go); the new group is created before the old one is deleted "
            f"and the reservation has no spare instances, so it waits for capacity while the old nodes still run; "
            f"{MAINTENANCE_HINT.format(subject=pool.name)} and scale the old group down first",
            key=_pool_key(view, pool.name, c.replace_fields, POOL_FIELD_KEYS),
        )


@rule(
    "fixed-capacity-recycled",
    "A reserved or Capacity Block node group whose nodes roll (AMI, launch template or Kubernetes version) updates MINIMAL in a stated maintenance.",
    "mandatory",
    "change",
    category="change",
)
def fixed_capacity_recycled(view: ChangeView) -> Iterator[Finding]:
    """UpdateNodegroupVersion replaces every node; on a reservation only MINIMAL (terminate first) can proceed."""
    for c, pool in node_group_changes(view, "update"):
        if not c.rolls_nodes or pool.tier not in FIXED_TIERS:
            continue
        after = _node_group(view, c.name)
        strategy = get(after.inputs if after else {}, "updateConfig", "updateStrategy") or "DEFAULT"
        stated = view.stated_maintenance(pool.name)
        if strategy == "MINIMAL" and stated:
            continue
        causes = [f for f in c.fields if f.split(".")[0] in ROLL_LOCK_FACTS or f.startswith("launchTemplate")]
        file, key = None, view.key_of("nodePools", pool.name)
        fact = next((ROLL_LOCK_FACTS[f] for f in causes if f in ROLL_LOCK_FACTS), None)
        if fact:
            file, key = view.lock_key(fact)
        elif c.rolled_by:
            template = view.change("aws:ec2/launchTemplate:LaunchTemplate", c.rolled_by)
            key = _pool_key(view, pool.name, template.fields if template else (), TEMPLATE_FIELD_KEYS)
        missing = [] if strategy == "MINIMAL" else [f"updateConfig.updateStrategy is {strategy}, not MINIMAL"]
        if not stated:
            missing.append(MAINTENANCE_HINT.format(subject=pool.name))
        what = ", ".join(causes) or "launchTemplate.version"
        yield Finding(
            c.name,
            f"every node of pool {pool.name} ({pool.tier}) is recycled ({what} changed: EKS UpdateNodegroupVersion replaces each node); "
            + "; ".join(missing),
            file=file,
            key=key,
        )


@rule(
    "stable-capacity-below-demand",
    "A change does not cut a class's reserved or on-demand GPUs below its P95 demand.",
    "mandatory",
    "change",
    category="change",
)
def stable_capacity_below_demand(view: ChangeView) -> Iterator[Finding]:
    """Spot is not a floor: below P95 the class queues at its busiest hours."""
    if not view.demand_p95:
        return
    before, after = view.pools_before(), view.pools_after()
    for cls, p95 in sorted(view.demand_p95.items()):
        old = [p for p in before.values() if p.workload_class == cls and not p.spot]
        new = [p for p in after.values() if p.workload_class == cls and not p.spot]
        gpus_before, gpus_after = sum(pool_gpus(p) for p in old), sum(pool_gpus(p) for p in new)
        if gpus_after >= gpus_before or gpus_after >= p95:
            continue
        cut = [p.name for p in old if p.name not in after or pool_gpus(after[p.name]) < pool_gpus(p) or after[p.name].spot]
        key = view.key_of("nodePools", cut[0], "scaling") if cut and cut[0] in after else view.key_of("nodePools", "")
        yield Finding(
            (cut and before[cut[0]].resource) or cls,
            f"class {cls}: reserved and on-demand GPUs {gpus_before} -> {gpus_after}, below its P95 demand of {p95:g} GPUs"
            f" (cut in {', '.join(cut) or 'its pools'})",
            key=key,
        )


@rule(
    "quota-below-usage",
    "A tenant's GPU quota is not cut below what it uses now (a usage snapshot from Prometheus).",
    "mandatory",
    "change",
    category="change",
)
def quota_below_usage(view: ChangeView) -> Iterator[Finding]:
    """Kueue does not evict admitted workloads for a smaller quota, but nothing new is admitted until use falls below it."""
    if not view.usage:
        return
    before = {str(t.get("name")): t for t in view.entries("tenants", after=False)}
    for i, t in enumerate(view.entries("tenants")):
        name = str(t.get("name"))
        old = before.get(name)
        if old is None or name not in view.usage:
            continue
        quota, was, used = quota_total(t), quota_total(old), view.usage[name]
        if quota >= was or quota >= used:
            continue
        old_quotas = {str(q.get("pool")): int(q.get("gpus", 0) or 0) for q in old.get("quotas") or []}
        j = next((j for j, q in enumerate(t.get("quotas") or []) if int(q.get("gpus", 0) or 0) < old_quotas.get(str(q.get("pool")), 0)), None)
        key = f"gpu-platform:tenants[{i}].quotas" + (f"[{j}].gpus" if j is not None else "")
        yield Finding(
            f"tenant {name}",
            f"tenant {name}: quota {was} -> {quota} GPUs, below the {used:g} GPUs it uses now; "
            "new workloads wait until running ones finish, and preempted ones cannot return",
            key=key,
        )


@rule(
    "driver-or-cuda-moved",
    "The NVIDIA driver branch or the CUDA minor version does not move without a stated maintenance.",
    "mandatory",
    "change",
    category="change",
)
def driver_or_cuda_moved(view: ChangeView) -> Iterator[Finding]:
    """A new driver branch reboots every GPU node; a CUDA minor changes what images may assume."""

    def minor(v: str | None) -> str | None:
        return ".".join(v.split(".")[:2]) if v else v

    if view.stated_maintenance("driver"):
        return
    for fact, label, norm in (
        ("driverBranch", "NVIDIA driver branch", lambda v: v),
        ("amiDriverBranch", "driver branch of the EKS AMI", lambda v: v),
        ("cudaVersion", "CUDA minor version", minor),
    ):
        old, new = norm(view.before_lock.get(fact)), norm(view.after_lock.get(fact))
        if old is None or new is None or old == new:
            continue
        file, key = view.lock_key(fact)
        yield Finding(
            "lockfile",
            f"{label} moves {old} -> {new}: every GPU node restarts its driver and running jobs die; " + MAINTENANCE_HINT.format(subject="driver"),
            file=file,
            key=key,
        )


def _has_nodes(r: Resource | None) -> bool:
    if r is None:
        return False
    if r.type == NODE_GROUP:
        sizes = (get(r.inputs, "scalingConfig", size, default=0) for size in ("desiredSize", "minSize"))
        return any(int(s or 0) > 0 for s in sizes)
    return True  # an on-prem node patch is a node


@rule(
    "sharing-layout-changed",
    "The MIG or sharing layout (or device-plugin / DRA allocation) of a pool that has nodes does not change in place.",
    "mandatory",
    "change",
    category="change",
)
def sharing_layout_changed(view: ChangeView) -> Iterator[Finding]:
    """mig-manager repartitions only idle GPUs: with pods on them the node waits in `paused-for-mig-change`."""
    for old, new in pool_pairs(view):
        name = old.name
        layout_old, layout_new = (old.sharing, old.mig_config, old.device_plugin_config), (new.sharing, new.mig_config, new.device_plugin_config)
        resource = next((r for r in view.before if r.name == old.resource), None)
        if layout_old == layout_new or not _has_nodes(resource):
            continue
        yield Finding(
            new.resource,
            f"pool {name} changes its GPU layout on running nodes ({old.sharing}/{old.mig_config or old.device_plugin_config} -> "
            f"{new.sharing}/{new.mig_config or new.device_plugin_config}): mig-manager and the device plugin reconfigure every node, "
            "GPUs with pods on them stay in paused-for-mig-change and their resources vanish; add a new pool and move tenants instead",
            key=view.key_of("nodePools", name, "sharing"),
        )
    for old, new in pool_pairs(view):
        before, after = old.labels.get(LABEL_ALLOCATION, "device-plugin"), new.labels.get(LABEL_ALLOCATION, "device-plugin")
        resource = next((r for r in view.before if r.name == old.resource), None)
        if before == after or not _has_nodes(resource):
            continue
        yield Finding(
            new.resource,
            f"pool {old.name} switches its GPUs from {before} to {after} allocation on running nodes: pods already on them keep "
            "their GPUs while the other path hands the same GPUs out again, and the queues admitted on the old resource lose "
            "their flavor; add a new pool and move tenants instead",
            key=view.key_of("nodePools", old.name, "allocation"),
        )


@rule(
    "moved-to-spot",
    "Training and non-interruptible inference pools are not moved onto Spot.",
    "mandatory",
    "change",
    category="change",
)
def moved_to_spot(view: ChangeView) -> Iterator[Finding]:
    """A Spot reclaim gives two minutes' notice: a training step or a serving replica is simply lost."""
    interruptible = _interruptible_classes(view)
    for old, new in pool_pairs(view):
        if old.spot or not new.spot:
            continue
        name = old.name
        cls = new.workload_class or ""
        if cls not in ("training", "inference") or cls in interruptible:
            continue
        yield Finding(
            new.resource,
            f"pool {name} ({cls}) moves from {old.tier} to spot: a reclaim kills {cls} work with two minutes' notice; keep it on "
            "reserved or on-demand capacity, or declare the class interruptible in `demand`",
            key=view.key_of("nodePools", name, "capacity"),
        )


REFERENCE_KEYS = {"clusterQueue", "cohortName", "parent", "queue", "kubernetes.io/metadata.name"}
REFERENCEABLE = {"ClusterQueue": "tenants", "LocalQueue": "tenants", "ResourceFlavor": "nodePools", "Queue": "tenants", "Namespace": "tenants"}


def _references(value: object, name: str, key: str = "") -> bool:
    """True when `value` names `name` under a reference key (a queue, cohort, pool label) or as a ClusterQueue flavor."""
    if isinstance(value, dict):
        return any(_references(v, name, str(k)) for k, v in value.items())
    if isinstance(value, list):
        if key == "flavors" and any(isinstance(f, dict) and f.get("name") == name for f in value):
            return True
        return any(_references(v, name, "" if isinstance(v, dict) else key) for v in value)
    return key in REFERENCE_KEYS and value == name


@rule(
    "deleted-while-referenced",
    "A tenant, pool or queue is not deleted while a resource that stays still refers to it.",
    "mandatory",
    "change",
    category="change",
)
def deleted_while_referenced(view: ChangeView) -> Iterator[Finding]:
    """Kueue keeps workloads pointing at a deleted queue or flavor pending forever; nothing reports it."""
    kept = {r.name for r in view.after}
    for c in view.changes:
        if c.action != "delete":
            continue
        gone = next((r for r in view.before if r.name == c.name and r.type == c.type), None)
        kind = kind_of(gone) if gone else None
        if gone is None or kind not in REFERENCEABLE:
            continue
        name = object_name(gone)
        users = sorted(r.name for r in view.before if r.name in kept and r.name != gone.name and _references(dict(r.inputs), name))
        if not users:
            continue
        yield Finding(
            c.name,
            f"{kind} {name} is deleted while {', '.join(users[:3])}{' and more' if len(users) > 3 else ''} still refer to it; "
            "remove the references first (quotas, queues), then the object in a later change",
            key=f"gpu-platform:{REFERENCEABLE[kind]}",
        )


@rule(
    "priority-class-value-changed",
    "A PriorityClass or WorkloadPriorityClass keeps its value.",
    "mandatory",
    "change",
    category="change",
)
def priority_class_value_changed(view: ChangeView) -> Iterator[Finding]:
    """kube-apiserver refuses it (ValidatePriorityClassUpdate: value may not be changed); running pods keep the old value."""
    before = {(r.type, r.name): r for r in view.before if kind_of(r) in ("PriorityClass", "WorkloadPriorityClass")}
    for r in view.after:
        old = before.get((r.type, r.name))
        if old is None or old.inputs.get("value") == r.inputs.get("value"):
            continue
        name = object_name(r)
        users = [i for i, t in enumerate(view.entries("tenants")) if name.removeprefix("gpu-") == t.get("priority")]
        yield Finding(
            r.name,
            f"{kind_of(r)} {name} value {old.inputs.get('value')} -> {r.inputs.get('value')}: the API server refuses a changed value "
            "(kubernetes pkg/apis/scheduling/validation ValidatePriorityClassUpdate), and pods already admitted keep the old one; "
            "add a new class and move tenants to it",
            key=f"gpu-platform:tenants[{users[0]}].priority" if users else None,
        )


def _approvers(view: ChangeView, *paths: str) -> str:
    owners = sorted({o for p in paths for o in view.owners.get(p, ())})
    return f"approval by its code owners ({', '.join(owners)})" if owners else "approval by its code owners (CODEOWNERS names none: add them)"


@rule(
    "gate-loosened",
    "A change does not loosen the gate it is judged by: enforcement levels, thresholds and production come from the base.",
    "mandatory",
    "change",
    category="change",
)
def gate_loosened(view: ChangeView) -> Iterator[Finding]:
    """A pull request that disables the rule it breaks would pass; the base revision's settings judge it instead.

    Every rule of `check --base` runs with the stricter of the base's and the working tree's setting
    (gpu_platform_policies.strictness); this finding says what the change loosens and who must approve it.
    No maintenance trailer waives it.
    """
    base, head = setting_of(view.before_config), setting_of(view.after_config)
    for key, old, new in loosened(base, head):
        yield Finding(
            "stack",
            f"{key.removeprefix('gpu-platform:')} {old} -> {new} loosens the gate; this change is judged with {old}, and the "
            f"loosening needs {_approvers(view, view.stack_file)}",
            key=key,
        )


@rule(
    "gate-code-changed",
    "A change to the gate itself (its rules under policies/, the CI that runs it) is named and needs its code owners.",
    "mandatory",
    "change",
    category="change",
)
def gate_code_changed(view: ChangeView) -> Iterator[Finding]:
    """A rule weakened in the same pull request would judge that pull request; the change is reported instead of trusted."""
    for path in view.gate_changes:
        yield Finding("repository", f"{path} changes the gate itself; it needs {_approvers(view, path)}", file=path)


def _scheduler_on(config: Mapping[str, Any], name: str, default: bool) -> bool:
    queueing = config.get("gpu-platform:queueing")
    block = queueing.get(name) if isinstance(queueing, Mapping) else None
    value = block.get("enabled", default) if isinstance(block, Mapping) else default
    return value if isinstance(value, bool) else default


@rule(
    "scheduler-removed",
    "Kueue (or Volcano) is not switched off on a stack whose tenants it bounds.",
    "mandatory",
    "change",
    category="change",
)
def scheduler_removed(view: ChangeView) -> Iterator[Finding]:
    """Without Kueue every ClusterQueue, LocalQueue and the priority policy go: tenant GPU work runs outside every quota."""
    tenants = view.entries("tenants")
    if not tenants:
        return
    for name, default, what in (
        ("kueue", True, "every ClusterQueue, LocalQueue and workload priority class go, and tenant GPU work runs outside every quota"),
        ("volcano", False, "every tenant's Volcano queue goes, and gang jobs lose their queue and capability"),
    ):
        if _scheduler_on(view.before_config, name, default) and not _scheduler_on(view.after_config, name, default):
            yield Finding(
                "stack",
                f"queueing.{name}.enabled turns {name.capitalize()} off on a stack with {len(tenants)} tenants: {what}; "
                f"moving tenants off it is a migration of its own, with {_approvers(view, view.stack_file)}",
                key=f"gpu-platform:queueing.{name}.enabled",
            )


@rule(
    "tenant-tier-raised",
    "A tenant's priority tier is not raised without its code owners.",
    "mandatory",
    "change",
    category="change",
)
def tenant_tier_raised(view: ChangeView) -> Iterator[Finding]:
    """A higher tier lets the tenant's work preempt other tenants' (the PriorityClass and Kueue priority values)."""
    before = {str(t.get("name")): str(t.get("priority", "batch")) for t in view.entries("tenants", after=False)}
    for i, t in enumerate(view.entries("tenants")):
        name, tier = str(t.get("name")), str(t.get("priority", "batch"))
        old = before.get(name)
        if old in PRIORITY_VALUES and tier in PRIORITY_VALUES and PRIORITY_VALUES[tier] > PRIORITY_VALUES[old]:
            yield Finding(
                "stack",
                f"tenant {name}'s tier rises {old} -> {tier} (priority {PRIORITY_VALUES[old]} -> {PRIORITY_VALUES[tier]}): its work "
                f"may now preempt other tenants'; needs {_approvers(view, view.stack_file)}",
                key=f"gpu-platform:tenants[{i}].priority",
            )


@rule(
    "tenant-role-shared",
    "An IAM role is not added to a second tenant (EKS merges them into one access entry holding both tenants' groups).",
    "mandatory",
    "change",
    category="change",
)
def tenant_role_shared(view: ChangeView) -> Iterator[Finding]:
    """Botocore eks CreateAccessEntry: one entry per principal, so the role's sessions act as members of both tenants."""

    def holders(after: bool) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for t in view.entries("tenants", after=after):
            for arn in t.get("accessRoleArns") or []:
                out.setdefault(str(arn), []).append(str(t.get("name")))
        return out

    before, after = holders(False), holders(True)
    for arn, names in after.items():
        if len(set(names)) > 1 and len(set(names)) > len(set(before.get(arn, []))):
            i = next(i for i, t in enumerate(view.entries("tenants")) if str(t.get("name")) == names[-1])
            yield Finding(
                "stack",
                f"{arn} now belongs to tenants {', '.join(sorted(set(names)))}: its one access entry carries every one of their "
                "groups, so each tenant's sessions act in the others' namespaces; give each tenant its own role",
                key=f"gpu-platform:tenants[{i}].accessRoleArns",
            )


def _interruptible_classes(view: ChangeView) -> set[str]:
    """Workload classes the working tree's `demand` declares interruptible (Spot is theirs to use)."""
    declared = view.after_config.get("gpu-platform:demand") or []
    return {str(d.get("workloadClass")) for d in declared if isinstance(d, Mapping) and d.get("interruptible")}


def _spot_training_gpus(view: ChangeView, after: bool) -> dict[str, int]:
    """Tenant -> GPUs of its quota on Spot training pools, as one side's stack file declares them."""
    spot = {str(p.get("name")) for p in view.entries("nodePools", after) if p.get("capacity") == "spot" and p.get("workloadClass") == "training"}
    out = {}
    for t in view.entries("tenants", after):
        quotas = [q for q in t.get("quotas") or [] if isinstance(q, Mapping) and str(q.get("pool")) in spot]
        out[str(t.get("name"))] = sum(int(q.get("gpus", 0) or 0) for q in quotas)
    return out


@rule(
    "training-quota-on-spot",
    "No tenant gains quota on Spot training pools, by a new pool, a moved quota or a pool changed to Spot.",
    "mandatory",
    "change",
    category="change",
)
def training_quota_on_spot(view: ChangeView) -> Iterator[Finding]:
    """moved-to-spot judges a pool; the same move made with quota (a new Spot pool, quota shifted onto one) lands here."""
    if "training" in _interruptible_classes(view):
        return
    before, after = _spot_training_gpus(view, after=False), _spot_training_gpus(view, after=True)
    for i, t in enumerate(view.entries("tenants")):
        name = str(t.get("name"))
        if after.get(name, 0) > before.get(name, 0):
            yield Finding(
                "stack",
                f"tenant {name}'s quota on Spot training pools grows {before.get(name, 0)} -> {after[name]} GPUs: a reclaim ends a "
                "training step with two minutes' notice; keep training quota on reserved or on-demand pools, or declare "
                "training interruptible in `demand`",
                key=f"gpu-platform:tenants[{i}].quotas",
            )


# EC2 User Guide, "Capacity Reservations" > "How Capacity Reservations work": an instance runs in a
# reservation only when its instance type, platform, Availability Zone and tenancy match the reservation's;
# ModifyCapacityReservation changes a reservation's count and end, never those four. A launch that targets
# the reservation (capacityReservationTarget) with other attributes is refused, so no node of the group starts.
RESERVATION_MATCH = ("instance type", "platform", "zone", "tenancy")


def _subnets(plan: PlanView, ng: Resource) -> list[Resource]:
    """The planned subnets a node group launches into: followed by reference, else by the ids its input holds (a plan without refs)."""
    found = [plan.wiring.resource(i, SUBNET) for i in plan.wiring.targets(ng, "subnetIds")]
    if found and all(found):
        return [r for r in found if r is not None]
    by_value = ByValue(plan.of_type(SUBNET))
    return [r for r in (by_value.resource(str(i), SUBNET) for i in ng.inputs.get("subnetIds") or []) if r is not None]


def reservation_terms(plan: PlanView, ng: Resource) -> tuple[str | None, dict[str, str]]:
    """(reservation a pool's launches target, {instance type, platform, zone, tenancy} they launch with).

    A zone is known when the group's subnets are planned here (a new VPC's subnets); the platform is
    what the EKS AMI type runs (every EKS GPU AMI is Linux/UNIX, a WINDOWS_* type Windows).
    """
    lt = launch_template_of(plan, ng)
    target = get(lt.inputs if lt else {}, "capacityReservationSpecification", "capacityReservationTarget") or {}
    reservation = target.get("capacityReservationId") or target.get("capacityReservationResourceGroupArn")
    terms = {"instance type": ", ".join(instance_types_of(plan, ng))}
    zones = sorted({str(s.inputs.get("availabilityZone")) for s in _subnets(plan, ng)})
    if zones:
        terms["zone"] = ", ".join(zones)
    terms["platform"] = "Windows" if str(ng.inputs.get("amiType", "")).startswith("WINDOWS") else "Linux/UNIX"
    terms["tenancy"] = str(get(lt.inputs if lt else {}, "placement", "tenancy") or "default")
    return (str(reservation) if reservation else None), terms


RESERVATION_KEYS = {"instance type": "instanceTypes", "zone": "availabilityZones", "platform": "", "tenancy": ""}


@rule(
    "reservation-still-matches",
    "A reserved or Capacity Block pool does not change its instance type, zone, platform or tenancy while it targets the same "
    "reservation (EC2 runs an instance in a reservation only when all four match); no maintenance trailer waives it.",
    "mandatory",
    "change",
    category="change",
)
def reservation_still_matches(view: ChangeView) -> Iterator[Finding]:
    """A stated maintenance makes the replacement safe to roll, not possible: the new group can never launch into the old reservation."""
    for old, new in pool_pairs(view):
        if old.tier not in FIXED_TIERS or new.tier not in FIXED_TIERS:
            continue
        before_ng, after_ng = _node_group(view, old.resource, after=False), _node_group(view, new.resource)
        if before_ng is None or after_ng is None:
            continue
        held, was = reservation_terms(view.before, before_ng)
        target, now = reservation_terms(view.after, after_ng)
        if held is None or target != held:
            continue
        moved = [t for t in RESERVATION_MATCH if t in was and t in now and was[t] != now[t]]
        if not moved:
            continue
        what = "; ".join(f"{t} {was[t]} -> {now[t]}" for t in moved)
        yield Finding(
            after_ng.name,
            f"pool {new.name} ({new.tier}) still targets reservation {held}, which was made for {was['instance type']}"
            f"{' in ' + was['zone'] if 'zone' in was else ''} ({was['platform']}, {was['tenancy']} tenancy), but now launches with "
            f"{what}: EC2 runs an instance in a Capacity Reservation only when its instance type, platform, Availability Zone and "
            "tenancy match it, and ModifyCapacityReservation cannot change them (EC2 User Guide, 'Capacity Reservations'), so every "
            "launch of the new group fails; buy a reservation for the new terms and set reservation to it, or keep the old terms",
            key=view.key_of("nodePools", new.name, RESERVATION_KEYS[moved[0]] or "reservation"),
        )
