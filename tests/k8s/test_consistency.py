"""Cross-layer consistency: pools <-> flavors, quotas <-> capacity, tenants <-> namespaces/queues/Volcano."""

from __future__ import annotations

from gpu_platform.behaviour.volcano import podgroup_queue
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s import kueue
from gpu_platform.k8s.tenants import ceiling_resources, nominal_resources, quota_key
from gpu_platform.pools import DRA_GPU_RESOURCE, fallback_taint, has_fallback, node_labels, node_taints, pool_capacity, resources_per_gpu
from tests.conftest import spec_for
from tests.k8s.helpers import helm_values, objects, one


def _gpu_flavors(cq: dict) -> dict[str, dict[str, dict]]:
    """flavor -> resource -> entry, over the GPU resource groups of a ClusterQueue."""
    out: dict[str, dict[str, dict]] = {}
    for group in cq["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for r in flavor["resources"]:
                if r["name"].startswith("nvidia.com/") or r["name"] == DRA_GPU_RESOURCE:
                    out.setdefault(flavor["name"], {})[r["name"]] = r
    return out


def test_every_pool_has_a_flavor_matching_its_labels_and_taints(stack: str) -> None:
    catalog = load_catalog()
    for pool in spec_for(stack).node_pools:
        flavor = one(stack, "ResourceFlavor", pool.name)["spec"]
        labels = node_labels(pool, catalog)
        assert flavor["nodeLabels"].items() <= labels.items()
        taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in node_taints(pool)]
        assert flavor["nodeTaints"] == taints
        # A Spot flavor also tolerates its own fallback group's taint, and only that one more.
        extra = [{"key": t.key, "value": t.value, "effect": t.effect} for t in [fallback_taint(pool.name)] if has_fallback(pool)]
        assert [{k: t[k] for k in ("key", "value", "effect")} for t in flavor["tolerations"]] == taints + extra
        assert all(t["operator"] == "Equal" for t in flavor["tolerations"])


def test_spot_flavor_carries_the_interruptible_taint() -> None:
    flavor = one("prod", "ResourceFlavor", "infer-l4-spot")["spec"]
    assert {"key": "gpu-platform.io/interruptible", "value": "true", "effect": "NoSchedule"} in flavor["nodeTaints"]


def test_covered_resources_match_each_pools_sharing_mode(stack: str) -> None:
    spec, catalog = spec_for(stack), load_catalog()
    for tenant in spec.tenants:
        flavors = _gpu_flavors(one(stack, "ClusterQueue", tenant.name))
        if kueue.whole_nodes_pools(spec, tenant):  # whole-node pools' quota: the tenant's `whole-nodes` queue
            flavors |= _gpu_flavors(one(stack, "ClusterQueue", kueue.whole_nodes_queue_name(tenant)))
        for q in tenant.quotas:
            pool = spec.pool(q.pool)
            offered = resources_per_gpu(pool, catalog)
            positive = {name for name, r in flavors[pool.name].items() if r["nominalQuota"] > 0}
            assert positive == ({name for name in offered} if q.gpus else set())
            for name, r in flavors[pool.name].items():
                assert r["nominalQuota"] == offered.get(name, 0) * q.gpus


def test_resource_groups_satisfy_kueue_rules(stack: str) -> None:
    for cq in objects(stack, "ClusterQueue"):
        seen: set[str] = set()
        flavors: set[str] = set()
        for group in cq["spec"]["resourceGroups"]:
            assert not seen & set(group["coveredResources"]), "a resource may be in one group only"
            seen |= set(group["coveredResources"])
            for f in group["flavors"]:
                assert [r["name"] for r in f["resources"]] == group["coveredResources"]
                assert f["name"] not in flavors
                flavors.add(f["name"])


def test_nominal_quotas_per_flavor_fit_the_pool(stack: str) -> None:
    spec, catalog = spec_for(stack), load_catalog()
    totals: dict[tuple[str, str], int] = {}
    for cq in objects(stack, "ClusterQueue"):
        for flavor, resources in _gpu_flavors(cq).items():
            for name, r in resources.items():
                totals[(flavor, name)] = totals.get((flavor, name), 0) + r["nominalQuota"]
    for pool in spec.node_pools:
        capacity = pool_capacity(pool, catalog)
        for (flavor, name), total in totals.items():
            if flavor == pool.name:
                assert total <= capacity.get(name, 0), f"{pool.name} {name}: quotas {total} > capacity {capacity.get(name, 0)}"


def test_every_tenant_has_namespace_quota_and_local_queue(stack: str) -> None:
    spec = spec_for(stack)
    for tenant in spec.tenants:
        ns = one(stack, "Namespace", tenant.ns)
        assert ns["metadata"]["labels"]["gpu-platform.io/tenant"] == tenant.name
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
        one(stack, "ResourceQuota", "gpu-quota", tenant.ns)
        one(stack, "LimitRange", "defaults", tenant.ns)
        assert one(stack, "LocalQueue", "default", tenant.ns)["spec"]["clusterQueue"] == tenant.name
        cq = one(stack, "ClusterQueue", tenant.name)["spec"]
        assert cq["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": tenant.ns}}
        assert cq["cohortName"] == tenant.cohort
        assert cq["fairSharing"]["weight"] == tenant.fair_share_weight
        names = {n["metadata"]["name"] for n in objects(stack, "NetworkPolicy") if n["metadata"]["namespace"] == tenant.ns}
        want = {"default-deny", "allow-same-namespace", "allow-dns", "allow-monitoring-scrape", "allow-kubernetes-api"}
        want |= {"allow-aws-services"} if spec.is_eks else set()
        want |= {"allow-s3"} if spec.is_eks and tenant.network.s3 else set()
        want |= {"allow-egress"} if tenant.network.egress else set()
        ing = tenant.network.ingress
        want |= {"allow-ingress"} if ing.namespaces or ing.vpc or ing.load_balancers else set()
        assert names == want
        deny = one(stack, "NetworkPolicy", "default-deny", tenant.ns)["spec"]
        assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
        bindings = {b["subjects"][0]["name"] for b in objects(stack, "RoleBinding") if b["metadata"]["namespace"] == tenant.ns}
        assert bindings == set(tenant.groups)


def test_quota_covers_every_gpu_resource_of_the_stack(stack: str) -> None:
    spec, catalog = spec_for(stack), load_catalog()
    offered = {r for p in spec.node_pools for r in pool_capacity(p, catalog)}
    for tenant in spec.tenants:
        hard = one(stack, "ResourceQuota", "gpu-quota", tenant.ns)["spec"]["hard"]
        # A DRA pool's GPUs are counted as claimed devices of class gpu.nvidia.com (resource_claims.go), not requested.
        assert {k.removeprefix("requests.") for k in hard if k.startswith("requests.nvidia.com/")} == offered - {DRA_GPU_RESOURCE}
        assert ("gpu.nvidia.com.deviceclass.resource.k8s.io/devices" in hard) == (DRA_GPU_RESOURCE in offered)
        assert {"requests.cpu", "requests.memory", "pods"} <= hard.keys()
        for name, n in ceiling_resources(spec, catalog, tenant).items():
            assert int(hard[quota_key(name)]) == n >= nominal_resources(spec, catalog, tenant).get(name, 0)


def test_prod_mig_tenants_get_mig_quota() -> None:
    hard = one("prod", "ResourceQuota", "gpu-quota", "search-ranking")["spec"]["hard"]
    # 4 H100s sliced all-3g.40gb (2 per GPU) plus a borrowing limit of 4 more.
    assert hard["requests.nvidia.com/mig-3g.40gb"] == str((4 + 4) * 2)
    assert hard["requests.nvidia.com/mig-1g.10gb"] == "0"  # no quota on the A100 all-balanced pool
    serving = one("prod", "ResourceQuota", "gpu-quota", "serving")["spec"]["hard"]
    assert int(serving["requests.nvidia.com/mig-3g.40gb"]) > 0 and int(serving["requests.nvidia.com/mig-1g.10gb"]) > 0


def test_borrowing_and_lending_limits_in_pool_units() -> None:
    flavors = _gpu_flavors(one("prod", "ClusterQueue", "llm-training-whole-nodes"))
    assert flavors["train-h100-reserved"]["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": 24, "lendingLimit": 8}
    assert "train-h100-reserved" not in _gpu_flavors(one("prod", "ClusterQueue", "llm-training"))
    mig = _gpu_flavors(one("prod", "ClusterQueue", "search-ranking"))["infer-h100-mig"]["nvidia.com/mig-3g.40gb"]
    assert mig == {"name": "nvidia.com/mig-3g.40gb", "nominalQuota": 8, "borrowingLimit": 8}


def test_priority_order_is_the_platforms(stack: str) -> None:
    order = ["production-training", "inference", "batch", "experiments"]
    wpc = {o["metadata"]["name"]: o["value"] for o in objects(stack, "WorkloadPriorityClass")}
    pc = {o["metadata"]["name"]: o["value"] for o in objects(stack, "PriorityClass")}
    assert [wpc[n] for n in order] == sorted(wpc.values(), reverse=True)
    assert [pc[f"gpu-{n}"] for n in order] == sorted(pc.values(), reverse=True)
    assert one(stack, "PriorityClass", "gpu-experiments")["preemptionPolicy"] == "Never"


def test_volcano_queues_match_tenant_quotas(stack: str) -> None:
    spec = spec_for(stack)
    queues = {q["metadata"]["name"]: q["spec"] for q in objects(stack, "Queue")}
    if not spec.queueing.volcano.enabled:
        assert not queues
        return
    for tenant in spec.tenants:
        q = queues[tenant.name]
        hard = one(stack, "ResourceQuota", "gpu-quota", tenant.ns)["spec"]["hard"]
        # No GPU resource: Kueue admits GPUs (its ClusterQueue), Volcano only gang-places what Kueue admitted.
        assert not [k for k in q["capability"] if k.startswith("nvidia.com/")]
        assert "guarantee" not in q and "deserved" not in q
        # The namespace routes its PodGroups to this queue (podgroups mutate webhook, enabled in the chart values).
        ns = one(stack, "Namespace", tenant.ns)
        admissions = helm_values(stack, "volcano")["custom"]["enabled_admissions"]
        assert podgroup_queue({}, ns["metadata"]["annotations"], admissions)[0] == tenant.name
        assert q["capability"]["cpu"] == hard["requests.cpu"] and q["capability"]["memory"] == hard["requests.memory"]
        assert q["weight"] == tenant.fair_share_weight
        assert q["reclaimable"] is (tenant.priority != "production-training")


def test_volcano_scheduler_has_gang_and_drf() -> None:
    import yaml

    config = yaml.safe_load(helm_values("prod", "volcano")["custom"]["scheduler_config_override"])
    assert [a.strip() for a in config["actions"].split(",")] == ["enqueue", "allocate", "preempt", "reclaim", "backfill"]
    plugins = {p["name"] for tier in config["tiers"] for p in tier["plugins"]}
    assert {"gang", "priority", "drf", "proportion", "binpack", "predicates"} <= plugins
