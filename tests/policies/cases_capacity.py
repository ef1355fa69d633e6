"""Cases of the capacity and rollout rules: floors, Spot exposure, declared demand, Capacity Blocks, quotas, updates.

Kept apart so the capacity and rollout rules' cases read together; tests/policies/cases.py joins every module's cases into CASES.
"""

from __future__ import annotations

import json

from gpu_platform.k8s.demand import demand_configmap
from gpu_platform.spec.models import ClassDemand
from gpu_platform_policies import Resource
from tests.conftest import spec_for
from tests.policies.builders import A100_NG, BLOCK_NG, DROP, L4_FB_NG, L4_OD_NG, NG, SPOT_NG, Case, Edit, add, at, compliant, drop, fires, silent

AGENT = "cluster-addon-eks-node-monitoring-agent"
G5_ONLY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}]}]
        }
    }
}


def declare_demand(stack: str, *entries: tuple[str, float, str, bool]) -> Edit:
    """Add the ConfigMap the program emits for a stack declaring `demand` (class, p95, sla, interruptible)."""
    demand = tuple(ClassDemand.model_validate({"workloadClass": c, "p95": p, "sla": sla, "interruptible": i}) for c, p, sla, i in entries)
    manifest = demand_configmap(spec_for(stack).model_copy(update={"demand": demand}))
    assert manifest is not None
    return add(Resource("kubernetes:core/v1:ConfigMap", "platform-capacity-demand", "platform", manifest))


def on_spot(node_group: str) -> Edit:
    """The node group moved to Spot capacity, with the tier label the program derives from it."""
    return at(node_group, {"capacityType": "SPOT", "labels.gpu-platform.io/capacity-tier": "spot"})


def block_dates(start: str, end: str) -> Edit:
    """The Capacity Block pool's declared reservation dates (the tags the program writes from reservation.start/end)."""
    return at(BLOCK_NG, {f"tags.{BLOCK_START}": start, f"tags.{BLOCK_END}": end})


BLOCK_START = "gpu-platform:capacity-block-start"
BLOCK_END = "gpu-platform:capacity-block-end"
INFERENCE_24 = declare_demand("prod", ("inference", 24, "inference", False))  # 24 GPUs at P95, not interruptible


CAPACITY_CASES: list[Case] = [
    *compliant("production-capacity-floor", "prod"),
    silent(
        "production-capacity-floor",
        "dev-spot-only-is-fine",
        on_spot("pool-dev-l4-ondemand-ng"),
        stack="dev",
    ),
    fires(
        "production-capacity-floor",
        "spot-only-training",
        *(on_spot(ng) for ng in (NG, "pool-train-h100-ondemand-ng", "pool-train-h100-block-ng")),
        on="pool-train-h100-block-ng",
        says="workload class training has only Spot capacity in production",
    ),
    fires(
        "production-capacity-floor",
        "on-demand-that-scales-to-zero",
        at("pool-batch-l40s-ondemand-ng", {"scalingConfig.minSize": 0}),
        on="pool-batch-l40s-ondemand-ng",
        says="workload class batch has no floor in production: its non-Spot pools (batch-l40s-ondemand) can all scale to zero",
        key="gpu-platform:nodePools[7].scaling.min",
    ),
    *compliant("spot-exposure", "prod"),
    fires(
        "spot-exposure",
        "dev-spot-heavy",
        on="pool-dev-l4-spot-ng",
        says="development: 10 of 12 GPUs at max size are Spot (83%)",
        stack="dev",
        key="gpu-platform:nodePools[0].capacity",
    ),
    # capacity against declared demand (prod inference: 26 stable GPUs, 24 Spot, 44 non-Spot at max)
    silent("demand-coverage", "prod-no-demand", idle="the stack declares no gpu-platform:demand"),
    silent("demand-coverage", "covered", declare_demand("prod", ("inference", 40, "inference", False))),
    fires(
        "demand-coverage",
        "p95-outgrew-the-floor",
        declare_demand("prod", ("inference", 100, "online", False)),
        on="pool-infer-a100-mig-ng",
        says="inference (online SLA): stable capacity 26 GPUs covers 26% of P95 demand 100",
    ),
    silent("demand-spot-exposure", "batch-under-cap", declare_demand("prod", ("batch", 40, "batch", True))),
    fires(
        "demand-spot-exposure",
        "inference-over-cap",
        declare_demand("prod", ("inference", 40, "inference", False)),
        on=SPOT_NG,
        says="60% of P95 demand 40; cap is 30%",
    ),
    # The L4 Spot flavor reaches its own fallback group, sized to the 24 GPUs of quota on the Spot pool.
    silent("spot-fallback-for-non-interruptible", "fallback-covers-spot", INFERENCE_24),
    silent("spot-fallback-for-non-interruptible", "interruptible-needs-none", declare_demand("prod", ("inference", 60, "inference", True))),
    # Only reachable on-demand counts: the 32 H100/A100 MIG GPUs and the 12 of the serving tenant's own L4
    # on-demand pool are not where L4 Spot pods can go.
    fires(
        "spot-fallback-for-non-interruptible",
        "fallback-short",
        INFERENCE_24,
        at(L4_FB_NG, {"scalingConfig.maxSize": 12}),
        on=SPOT_NG,
        says="only 12 on-demand GPUs to fall back to",
    ),
    # The issue-17 regression: a Spot flavor pinned to its own pool certifies headroom no pod can reach.
    fires(
        "spot-fallback-for-non-interruptible",
        "fallback-unreachable",
        INFERENCE_24,
        at("kueue-flavor-infer-l4-spot", {"spec.nodeLabels": {"gpu-platform.io/pool": "infer-l4-spot"}}),
        on=SPOT_NG,
        says="only 0 on-demand GPUs to fall back to",
    ),
    *compliant("capacity-block-in-dates", "prod"),
    fires(
        "capacity-block-in-dates",
        "no-dates",
        at(BLOCK_NG, {f"tags.{BLOCK_END}": DROP}),
        on=BLOCK_NG,
        says="Capacity Block pool train-h100-block declares no dates",
    ),
    fires(
        "capacity-block-in-dates",
        "block-ended",
        block_dates("2025-01-06", "2025-02-03"),
        on=BLOCK_NG,
        says="Capacity Block of pool train-h100-block ended on 2025-02-03",
    ),
    fires(
        "capacity-block-in-dates",
        "quota-before-start",
        block_dates("2099-01-05", "2099-02-02"),
        on=BLOCK_NG,
        says="Capacity Block of pool train-h100-block starts on 2099-01-05 but its flavor carries quota now",
    ),
    # What the platform renders before a block starts: the flavor at 0 quota (the block is the default queue's first training flavor).
    silent(
        "capacity-block-in-dates",
        "no-quota-before-start",
        block_dates("2099-01-05", "2099-02-02"),
        at("kueue-clusterqueue-llm-training", {"spec.resourceGroups.1.flavors.0.resources.0.nominalQuota": 0}),
    ),
    *compliant("kueue-quota-fits-pool", "prod"),
    fires(
        "kueue-quota-fits-pool",
        "quota-above-capacity",
        at("kueue-clusterqueue-serving", {"spec.resourceGroups.2.flavors.1.resources.0.nominalQuota": 999}),
        on="kueue-clusterqueue-serving",
        says="add up to 999 GPUs (kueue-clusterqueue-serving) but the pool has 12 GPUs at max size",
        key="gpu-platform:tenants[2].quotas",
    ),
    # MIG quota is said in the GPUs the tenant wrote, with the slices Kueue counts beside them.
    fires(
        "kueue-quota-fits-pool",
        "mig-quota-above-capacity",
        at("kueue-clusterqueue-serving", {"spec.resourceGroups.1.flavors.0.resources.0.nominalQuota": 64}),
        on="kueue-clusterqueue-serving",
        says="add up to 32 GPUs (64 nvidia.com/mig-1g.10gb, 2 per GPU in layout all-balanced) (kueue-clusterqueue-serving) but the pool has 16 GPUs",
    ),
    *compliant("pool-has-flavor", "prod"),
    fires(
        "pool-has-flavor",
        "no-flavor",
        drop("kueue-flavor-batch-l40s-spot"),
        on="pool-batch-l40s-spot-ng",
        says="pool batch-l40s-spot has no ResourceFlavor whose node labels and tolerations reach its nodes",
    ),
    # A flavor that names the pool but does not tolerate its taint: Kueue's pods never land there.
    fires(
        "pool-has-flavor",
        "flavor-without-tolerations",
        at("kueue-flavor-infer-h100-mig", {"spec.tolerations": []}),
        on="pool-infer-h100-mig-ng",
        says="pool infer-h100-mig has no ResourceFlavor whose node labels and tolerations reach its nodes",
    ),
    # Each tenant's whole-node pools sit in its TAS-only `whole-nodes` queue; its default queue has no TAS flavor.
    *compliant("kueue-tas-queues-not-mixed", "prod", "onprem"),
    fires(
        "kueue-tas-queues-not-mixed",
        "on-demand-flavor-made-topology-aware",
        at("kueue-flavor-train-h100-ondemand", {"spec.topologyName": "hostname"}),
        on="kueue-clusterqueue-llm-training",
        says="mixes topology-aware flavors (train-h100-ondemand) with others (default-cpu, train-h100-block)",
    ),
    # A TAS-only queue is what Kueue places implicitly: another Topology on its flavor changes nothing here.
    silent("kueue-tas-queues-not-mixed", "other-topology", at("kueue-flavor-train-h100-reserved", {"spec.topologyName": "ec2-network"})),
    # The Spot pools' fallback groups are reached by their Spot flavors alone.
    *compliant("spot-fallback-sized", "prod", "staging"),
    # Before: the L4 Spot flavor selected a group label the serving tenant's on-demand pool carried too.
    fires(
        "spot-fallback-sized",
        "fallback-shared-with-on-demand-flavor",
        at(L4_OD_NG, {"labels.gpu-platform.io/spot-fallback": "infer-l4-spot"}),
        on="kueue-flavor-infer-l4-spot",
        says="fallback pool infer-l4-ondemand is also reached by flavor infer-l4-ondemand",
    ),
    # prod's L4 Spot quota is 24 GPUs (serving 16, search-ranking 8); a 12-node cap strands half of it.
    fires(
        "spot-fallback-sized",
        "fallback-smaller-than-quota",
        at(L4_FB_NG, {"scalingConfig.maxSize": 12}),
        on="kueue-clusterqueue-search-ranking",
        says="admits 24 GPUs (kueue-clusterqueue-search-ranking, kueue-clusterqueue-serving) but its pods reach only 12 GPUs on demand",
    ),
    fires(
        "spot-fallback-sized",
        "fallback-group-missing",
        drop(L4_FB_NG),
        on="kueue-clusterqueue-search-ranking",
        says="reach only 0 GPUs on demand (fallback pools: none)",
    ),
    # `fallback: false`: the flavor pins its own Spot pool and promises nothing to size.
    silent(
        "spot-fallback-sized",
        "no-fallback-promised",
        drop(L4_FB_NG),
        at("kueue-flavor-infer-l4-spot", {"spec.nodeLabels": {"gpu-platform.io/pool": "infer-l4-spot"}}),
    ),
    *compliant("tenant-has-quota-and-queue", "prod"),
    # The documented monitoring.namespace may be any name: the platform's system label decides, not a list.
    silent("tenant-has-quota-and-queue", "custom-monitoring-namespace", at("monitoring-namespace", {"metadata.name": "observability"})),
    fires(
        "tenant-has-quota-and-queue",
        "no-quota",
        drop("tenant-serving-quota"),
        on="tenant-serving-namespace",
        says="tenant namespace serving has no ResourceQuota",
    ),
    fires(
        "tenant-has-quota-and-queue",
        "no-queue",
        drop("kueue-localqueue-serving"),
        on="tenant-serving-namespace",
        says="tenant namespace serving has no Kueue LocalQueue",
    ),
    # rollout
    *compliant("fixed-capacity-update-strategy", "prod"),
    # Unset is DEFAULT (surge): Spot capacity has spare instances to launch replacements on.
    silent("fixed-capacity-update-strategy", "spot-may-surge", at(SPOT_NG, {"updateConfig.updateStrategy": DROP})),
    fires(
        "fixed-capacity-update-strategy",
        "default-on-reserved",
        at(NG, {"updateConfig.updateStrategy": "DEFAULT"}),
        on=NG,
        says="updateStrategy is DEFAULT on reserved capacity",
    ),
    fires(
        "fixed-capacity-update-strategy",
        "unset-on-capacity-block",
        at(BLOCK_NG, {"updateConfig.updateStrategy": DROP}),
        on=BLOCK_NG,
        says="updateStrategy is DEFAULT on capacity-block capacity",
    ),
    # repair: each leg of the path from a fatal XID to a replaced node (gpu_platform.behaviour.node_health)
    *compliant("gpu-node-repair", "prod", "staging", "dev"),
    silent(
        "gpu-node-repair",
        "bare-metal",
        stack="onprem",
        idle="the stack has no EKS GPU node group (bare metal is fenced by the Ansible role gpu_health_check)",
    ),
    fires("gpu-node-repair", "no-agent", drop(AGENT), on="cluster-eks", says="no eks-node-monitoring-agent add-on"),
    fires(
        "gpu-node-repair",
        "agent-default-tolerations",
        at(AGENT, {"configurationValues": "{}"}),
        on=AGENT,
        says=f"cannot watch the GPUs of node group {BLOCK_NG}: its DCGM server does not tolerate the node's taint nvidia.com/gpu=present:NoSchedule",
    ),
    fires(
        "gpu-node-repair",
        "agent-affinity-misses-type",
        at(AGENT, {"configurationValues": json.dumps({"dcgmAgent": {"tolerations": [{"operator": "Exists"}], "affinity": G5_ONLY}})}),
        on=AGENT,
        says="node affinity does not admit this node (instance type p5.48xlarge)",
    ),
    fires("gpu-node-repair", "repair-off", at(NG, {"nodeRepairConfig": DROP}), on=NG, says="is never repaired: node repair is off"),
    fires(
        "gpu-node-repair",
        "reboot-or-replace",
        at(NG, {"nodeRepairConfig.nodeRepairConfigOverrides": []}),
        on=NG,
        says="repaired by 'Replace or Reboot' (default for AcceleratedHardwareReady)",
    ),
    fires(
        "gpu-node-repair",
        "override-says-reboot",
        at(NG, {"nodeRepairConfig.nodeRepairConfigOverrides.0.repairAction": "Reboot"}),
        on=NG,
        says="repaired by 'Reboot' (override for AcceleratedHardwareReady/NvidiaXID79Error)",
    ),
    fires(
        "gpu-node-repair",
        "threshold-stops-first-repair",
        at(SPOT_NG, {"nodeRepairConfig.maxUnhealthyNodeThresholdPercentage": 50, "nodeRepairConfig.maxUnhealthyNodeThresholdCount": DROP}),
        on=SPOT_NG,
        says="1 of 1 unhealthy is above maxUnhealthyNodeThresholdPercentage 50: repair stops",
    ),
    *compliant("fixed-capacity-placement", "prod"),
    fires(
        "fixed-capacity-placement",
        "multi-zone-reserved",
        at(A100_NG, {"subnetIds": ["subnet-a", "subnet-b", "subnet-c"]}),
        on=A100_NG,
        says="3 subnets on reserved capacity",
    ),
    fires(
        "fixed-capacity-placement",
        "capacity-block-type-on-node-group",
        at(BLOCK_NG, {"instanceTypes": ["p5.48xlarge"]}),
        on=BLOCK_NG,
        says="put the instance type in the launch template only",
    ),
    fires(
        "fixed-capacity-placement",
        "capacity-block-never-zero",
        at(BLOCK_NG, {"scalingConfig.minSize": 2}),
        on=BLOCK_NG,
        says="scalingConfig.minSize is 2",
    ),
    *compliant("nodegroup-max-unavailable", "prod"),
    fires("nodegroup-max-unavailable", "four-at-once", at(NG, {"updateConfig.maxUnavailable": 4}), on=NG, says="updateConfig.maxUnavailable is 4"),
    fires(
        "nodegroup-max-unavailable",
        "half-the-pool",
        at(NG, {"updateConfig": {"maxUnavailablePercentage": 50}}),
        on=NG,
        says="updateConfig.maxUnavailablePercentage is 50",
    ),
    *compliant("driver-upgrade-policy", "prod"),
    fires(
        "driver-upgrade-policy",
        "auto-upgrade-in-prod",
        at("gpu-operator-release", {"values.driver.upgradePolicy.autoUpgrade": True}),
        on="gpu-operator-release",
        says="values.driver.upgradePolicy.autoUpgrade is true in production",
    ),
    fires(
        "driver-upgrade-policy",
        "operator-driver-without-drain",
        at("gpu-operator-release", {"values.driver.enabled": True, "values.driver.upgradePolicy.drain.enable": False}),
        on="gpu-operator-release",
        says="values.driver.upgradePolicy.drain.enable is not true",
        stack="staging",
    ),
]
