"""Tenants cannot step around quota and isolation: each gap closed by a Kubernetes mechanism, tested with an object that must be denied.

Upstream reproduced (each test names its own):
- kubernetes-sigs/kueue v0.19.2 pkg/controller/jobframework/utils.go `WorkloadShouldBeSuspended`,
  defaults.go `ApplyDefaultLocalQueue`, pkg/controller/jobs/pod/pod_webhook.go (namespace selector),
  pkg/config/validation.go `validateIntegrations` / `validatePodIntegrationOptions`.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_platform.behaviour.admission import denials, request_for
from gpu_platform.behaviour.apimachinery import selector_matches
from gpu_platform.behaviour.core_validation import resource_quota_scope_errors
from gpu_platform.behaviour.kueue import assign_flavors, flavor_mismatch, kueue_config_errors, kueue_manages, workload_for
from gpu_platform.behaviour.rbac import rules_allow
from gpu_platform.behaviour.scheduler import untolerated_taint
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s import tenants
from gpu_platform.k8s.isolation import owned_policy
from gpu_platform.k8s.tenants import PRIORITY_VALUES
from gpu_platform.pools import LABEL_SPOT_FALLBACK as FALLBACK_LABEL
from gpu_platform.pools import fallback_pool, max_gpus, node_groups, node_labels, node_taints, spot_quota_gpus
from gpu_platform.spec.loader import read_stack_config, spec_from_config
from gpu_platform.spec.models import NodePool
from tests.conftest import spec_for, stack_path
from tests.k8s.helpers import helm_values, objects, one, vap_validation_denial

KUEUE_STACKS = ("dev", "staging", "prod", "onprem")


def kueue_config(stack: str) -> dict[str, Any]:
    return yaml.safe_load(helm_values(stack, "kueue")["managerConfig"]["controllerManagerConfigYaml"])


def namespace_labels(stack: str, name: str) -> dict[str, str]:
    return one(stack, "Namespace", name)["metadata"]["labels"]


@pytest.mark.parametrize("stack", KUEUE_STACKS)
def test_kueue_accepts_its_configuration(stack: str) -> None:
    """validation.go: the manager exits on a bad Configuration; the old one (pod integration, no selector) was refused."""
    assert kueue_config_errors(kueue_config(stack)) == []
    old = {**kueue_config(stack), "manageJobsWithoutQueueName": False}
    del old["managedJobsNamespaceSelector"]
    assert "managedJobsNamespaceSelector: cannot be empty when pod integration is enabled" in kueue_config_errors(old)


@pytest.mark.parametrize("kind", ["Job", "Deployment", "StatefulSet", "Pod"])
def test_tenant_workloads_without_a_queue_name_are_gated(stack: str, kind: str) -> None:
    """A GPU Deployment (or bare pod, Job, StatefulSet) with no queue-name label in a tenant namespace waits for Kueue."""
    config = kueue_config(stack)
    for tenant in spec_for(stack).tenants:
        assert kueue_manages(config, kind, namespace_labels(stack, tenant.ns)), (tenant.ns, kind)
    # System namespaces stay unmanaged (Kueue refuses a selector matching kube-system anyway).
    assert not kueue_manages(config, kind, {"kubernetes.io/metadata.name": "kube-system"})


def test_the_old_configuration_let_deployments_run_unmanaged() -> None:
    old = {"manageJobsWithoutQueueName": False, "integrations": {"frameworks": ["batch/job", "pod"]}}
    labels = namespace_labels("prod", "serving")
    assert not kueue_manages(old, "Deployment", labels, queue_name="default")
    assert not kueue_manages(old, "Job", labels)


# --- PriorityClasses: a ValidatingAdmissionPolicy evaluated as the API server does -----------------


PRIORITY_POLICY = "gpu-platform-tenant-priority"


def priority_denial(stack: str, obj: dict[str, Any], ns: dict[str, Any]) -> str | None:
    """The tenant-priority policy's message refusing to create `obj` in `ns`, or None (gpu_platform.behaviour.admission `denials`)."""
    found = [d.message for d in denials(objects(stack), request_for(obj, ns)) if d.policy == PRIORITY_POLICY]
    return found[0] if found else None


def _pod(ns: str, priority: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    if priority:
        spec["priorityClassName"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns}, "spec": spec}


def test_a_tenant_cannot_use_a_priority_above_its_tier() -> None:
    """prod: `serving` is an inference tenant; production-training priority must be denied, its own tier admitted."""
    binding = one("prod", "ValidatingAdmissionPolicyBinding", PRIORITY_POLICY)
    assert binding["spec"] == {"policyName": "gpu-platform-tenant-priority", "validationActions": ["Deny"]}
    serving = one("prod", "Namespace", "serving")
    denied = priority_denial("prod", _pod("serving", "gpu-production-training"), serving)
    assert denied is not None and "above this tenant's tier" in denied
    for allowed in ("gpu-inference", "gpu-batch", "gpu-experiments", None):
        assert priority_denial("prod", _pod("serving", allowed), serving) is None, allowed
    # Kueue's workload priority label on a Job is held to the same ceiling.
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"kueue.x-k8s.io/priority-class": "production-training"}}}
    assert priority_denial("prod", job, serving) is not None
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "batch"
    assert priority_denial("prod", job, serving) is None
    # A system namespace is outside the policy (no tenant label).
    kube_system = {"metadata": {"name": "kube-system", "labels": {"kubernetes.io/metadata.name": "kube-system"}}}
    assert priority_denial("prod", _pod("kube-system", "system-node-critical"), kube_system) is None


def test_every_tenant_is_held_to_its_own_tier(stack: str) -> None:
    order = list(PRIORITY_VALUES)
    for tenant in spec_for(stack).tenants:
        ns = one(stack, "Namespace", tenant.ns)
        for tier in order:
            verdict = priority_denial(stack, _pod(tenant.ns, f"gpu-{tier}"), ns)
            assert (verdict is None) is (PRIORITY_VALUES[tier] <= PRIORITY_VALUES[tenant.priority]), (tenant.name, tier, verdict)
        # Classes outside the platform's (system-cluster-critical, or one made up) are denied too.
        assert priority_denial(stack, _pod(tenant.ns, "system-cluster-critical"), ns) is not None


# --- RBAC: the tenant role cannot touch NetworkPolicies --------------------------------------------


def test_tenants_are_bound_to_a_role_that_writes_their_own_network_policies(stack: str) -> None:
    """Issue 16: tenants add their own NetworkPolicies (policies are additive); the platform's stay guarded by admission."""
    role = one(stack, "ClusterRole", "gpu-platform-tenant")
    for tenant in spec_for(stack).tenants:
        for group in tenant.groups:
            rb = one(stack, "RoleBinding", f"{group}-tenant", tenant.ns)
            assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-platform-tenant"}
    rules = role["rules"]
    for verb in ("create", "delete", "patch", "update", "list"):
        assert rules_allow(rules, verb, "networking.k8s.io", "networkpolicies"), verb
    # What a tenant needs still works; the platform's quota, queue and namespace objects stay read-only.
    assert rules_allow(rules, "create", "batch", "jobs") and rules_allow(rules, "create", "", "pods")
    for group, resource in (("", "resourcequotas"), ("", "limitranges"), ("kueue.x-k8s.io", "localqueues"), ("", "namespaces")):
        assert not rules_allow(rules, "update", group, resource), resource
    assert not rules_allow(rules, "impersonate", "", "serviceaccounts")
    assert not rules_allow(rules, "create", "admissionregistration.k8s.io", "validatingadmissionpolicies")
    assert not rules_allow(rules, "delete", "admissionregistration.k8s.io", "validatingadmissionpolicybindings")


NETPOL_KIND = {"group": "networking.k8s.io", "version": "v1", "kind": "NetworkPolicy"}
DEPLOYER = {"username": "arn:aws:sts::123456789012:assumed-role/gpu-platform-deployer/ci", "groups": ["system:authenticated"]}


def _tenant_user(group: str) -> dict[str, Any]:
    return {"username": "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_ml/alice", "groups": [group, "system:authenticated"]}


@pytest.mark.parametrize("stack", ["prod", "onprem"])
def test_tenants_cannot_touch_the_platforms_network_policies_but_may_add_their_own(stack: str) -> None:
    """The ValidatingAdmissionPolicy `gpu-platform-owned-objects` evaluated as kube-apiserver does (validator.go `Validate`,
    CEL via cel-python): it matches NetworkPolicy CREATE/UPDATE/DELETE in tenant namespaces, binding Deny. A tenant user
    (its group) or a tenant service account may not create, change (including dropping the label) or delete a policy
    labelled gpu-platform.io/owner=platform; it may create, change and delete its own. The deployer may do everything."""
    policy = one(stack, "ValidatingAdmissionPolicy", "gpu-platform-owned-objects")
    binding = one(stack, "ValidatingAdmissionPolicyBinding", "gpu-platform-owned-objects")
    assert binding["spec"] == {"policyName": "gpu-platform-owned-objects", "validationActions": ["Deny"]}
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [
        {"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["networkpolicies"]}
    ]
    tenant = spec_for(stack).tenants[0]
    ns = one(stack, "Namespace", tenant.ns)
    assert selector_matches(policy["spec"]["matchConstraints"]["namespaceSelector"], ns["metadata"]["labels"])
    platform = one(stack, "NetworkPolicy", "default-deny", tenant.ns)
    assert platform["metadata"]["labels"]["gpu-platform.io/owner"] == "platform"
    unlabelled = {**platform, "metadata": {**platform["metadata"], "labels": {"gpu-platform.io/tenant": tenant.name}}}
    widened = {**platform, "spec": {"podSelector": {"matchLabels": {"never": "matches"}}, "policyTypes": ["Ingress"]}}
    own = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-my-db", "namespace": tenant.ns},
        "spec": {"podSelector": {}},
    }
    spoofed = {**own, "metadata": {**own["metadata"], "labels": {"gpu-platform.io/owner": "platform"}}}
    sa = {"username": f"system:serviceaccount:{tenant.ns}:default", "groups": ["system:serviceaccounts", f"system:serviceaccounts:{tenant.ns}"]}

    def verdict(op: str, new: Any, old: Any, user: dict[str, Any]) -> str | None:
        return vap_validation_denial(policy, NETPOL_KIND, new, ns, op, old=old, user=user)

    for who in (_tenant_user(tenant.groups[0]), sa):
        assert "belong to the platform" in str(verdict("DELETE", None, platform, who)), who
        assert "belong to the platform" in str(verdict("UPDATE", widened, platform, who)), who
        assert "belong to the platform" in str(verdict("UPDATE", unlabelled, platform, who)), "dropping the label is a change too"
        assert "belong to the platform" in str(verdict("CREATE", spoofed, None, who)), "a tenant cannot mint platform policies"
        assert verdict("CREATE", own, None, who) is None
        assert verdict("UPDATE", {**own, "spec": {"podSelector": {"matchLabels": {"app": "db"}}}}, own, who) is None
        assert verdict("DELETE", None, own, who) is None
    for op, new, old in (("CREATE", platform, None), ("UPDATE", widened, platform), ("DELETE", None, platform)):
        assert verdict(op, new, old, DEPLOYER) is None, op


# --- Per-pool GPUs: ResourceQuota cannot tell pools apart; Kueue flavors can ------------------------


def admissible_flavors(cluster_queue: dict[str, Any], flavors: dict[str, dict[str, Any]], resource: str, node_selector: dict[str, str]) -> list[str]:
    """Flavors with quota for `resource` that Kueue lets a pod set with this nodeSelector use (behaviour.kueue `flavor_mismatch`)."""
    pod = {"nodeSelector": node_selector}
    return [
        f["name"]
        for group in cluster_queue["spec"]["resourceGroups"]
        if resource in group["coveredResources"]
        for f in group["flavors"]
        if any(r["name"] == resource and r["nominalQuota"] for r in f["resources"]) and flavor_mismatch(pod, f["name"], flavors[f["name"]]) is None
    ]


def _gpu_job(model: str) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}}
    pod = {"nodeSelector": {"gpu-platform.io/gpu-model": model}, "containers": [container], "restartPolicy": "Never"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "data-platform"}, "spec": {"template": {"spec": pod}}}


def test_a_pool_without_quota_is_out_of_reach_although_the_resource_quota_allows_it() -> None:
    """data-platform (prod) has no quota on train-h100-reserved; a pod pinned there is never admitted.

    Its ResourceQuota still allows nvidia.com/gpu (it owns L40S GPUs under the same name), and no quota
    scope can name a node pool, so the per-pool guarantee rests on Kueue, which manages every tenant pod.
    """
    quota = one("prod", "ResourceQuota", "gpu-quota", "data-platform")
    assert int(quota["spec"]["hard"]["requests.nvidia.com/gpu"]) > 0
    assert "scopes" not in quota["spec"] and "scopeSelector" not in quota["spec"]
    # A quota that tried to scope itself to one pool is refused by the API server's validation.
    per_pool = {"hard": {"requests.nvidia.com/gpu": "8"}, "scopeSelector": {"matchExpressions": [{"scopeName": "NodePool", "operator": "In"}]}}
    assert resource_quota_scope_errors(per_pool) == ["unsupported scope NodePool"]
    flavors = {f["metadata"]["name"]: f for f in objects("prod", "ResourceFlavor")}
    cq = one("prod", "ClusterQueue", "data-platform")
    # Pods select a GPU model (or nothing): the Spot flavor selects its fallback group, not one pool.
    assert admissible_flavors(cq, flavors, "nvidia.com/gpu", {"gpu-platform.io/gpu-model": "H100-80GB"}) == []
    assert admissible_flavors(cq, flavors, "nvidia.com/gpu", {"gpu-platform.io/gpu-model": "L40S"}) == ["batch-l40s-spot", "batch-l40s-ondemand"]
    # What Kueue then does with a Job: the H100 one gets no GPU flavor, each flavor saying why; the L40S one gets Spot first.
    queues = objects("prod", "ClusterQueue")
    (h100,) = [c for c in assign_flavors(workload_for(_gpu_job("H100-80GB")), cq, flavors, queues) if "nvidia.com/gpu" in c.resources]
    assert h100.flavor is None and all("doesn't match node affinity" in t for t in h100.tried), h100.tried
    (l40s,) = [c for c in assign_flavors(workload_for(_gpu_job("L40S")), cq, flavors, queues) if "nvidia.com/gpu" in c.resources]
    assert l40s.flavor == "batch-l40s-spot"
    assert kueue_manages(kueue_config("prod"), "Pod", namespace_labels("prod", "data-platform"))


def test_each_flavor_selects_exactly_its_pool(stack: str) -> None:
    """A flavor's nodeLabels match its own pool's node labels and no other pool's, so quota per flavor is quota per pool;
    a Spot flavor also reaches its own on-demand fallback group, which no other flavor reaches (node labels and taints,
    as kube-scheduler's NodeAffinity and TaintToleration filters read them), as large as the flavor's quota."""
    catalog = load_catalog()
    spec = spec_for(stack)
    groups = node_groups(spec, catalog)
    flavors = [f for f in objects(stack, "ResourceFlavor") if f["spec"].get("nodeLabels")]  # default-cpu: cpu and memory only

    def reaches(flavor: dict[str, Any], pool: NodePool) -> bool:
        labels, taints = node_labels(pool, catalog), [vars(t) for t in node_taints(pool)]
        selector = flavor["spec"]["nodeLabels"]
        return all(labels.get(k) == v for k, v in selector.items()) and untolerated_taint(taints, flavor["spec"]["tolerations"]) is None

    for flavor in flavors:
        name = flavor["metadata"]["name"]
        matching = [p.name for p in groups if reaches(flavor, p)]
        pool = spec.pool(name)
        fallback = fallback_pool(spec, pool, catalog)
        assert matching == [name] + ([fallback.name] if fallback else []), (name, matching)
        if fallback is not None:
            assert fallback.capacity == "on-demand" and fallback.instance_types == pool.instance_types
            assert max_gpus(fallback, catalog) >= spot_quota_gpus(spec, pool, catalog) > 0, name
            assert [f["metadata"]["name"] for f in flavors if reaches(f, fallback)] == [name]


def test_a_spot_fallback_is_sized_to_the_quota_and_kept_apart() -> None:
    """prod's L4 Spot quota is 24 GPUs (serving 16, search-ranking 8): its fallback group offers 24, and the
    serving tenant's own 12-GPU on-demand pool is no longer where Spot pods land (before: one shared label)."""
    catalog = load_catalog()
    spec = spec_for("prod")
    spot = spec.pool("infer-l4-spot")
    fb = fallback_pool(spec, spot, catalog)
    assert fb is not None and fb.name == "infer-l4-spot-fallback" and max_gpus(fb, catalog) == 24 == spot_quota_gpus(spec, spot, catalog)
    assert FALLBACK_LABEL not in node_labels(spec.pool("infer-l4-ondemand"), catalog)
    # `fallback: false` drops the group and pins the flavor to the Spot pool itself.
    raw = read_stack_config(stack_path("prod"))
    raw["gpu-platform:nodePools"] = [dict(p, fallback=False) if p["name"] == "infer-l4-spot" else p for p in raw["gpu-platform:nodePools"]]
    off = spec_from_config(raw, "prod", "Pulumi.prod.yaml")
    assert fallback_pool(off, off.pool("infer-l4-spot"), catalog) is None
    assert "infer-l4-spot-fallback" not in [p.name for p in node_groups(off, catalog)]


def test_a_tenants_own_podgroup_names_its_own_queue_and_tier(stack: str) -> None:
    """A PodGroup a tenant writes itself (gang scheduling) cannot name another tenant's Volcano queue nor a higher class.

    Volcano schedules a PodGroup in its spec.queue at its spec.priorityClassName; the podgroups mutate webhook
    fills in only an empty (default) queue, so both are the writer's choice unless admission holds them.
    """
    tenants = spec_for(stack).tenants
    if len(tenants) < 2:
        pytest.skip(f"{stack} has one tenant")
    low = min(tenants, key=lambda t: PRIORITY_VALUES[t.priority])
    other = next(t for t in tenants if t.name != low.name)
    ns = one(stack, "Namespace", low.ns)

    def podgroup(**spec: Any) -> dict[str, Any]:
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "gang", "namespace": low.ns}, "spec": spec}

    assert priority_denial(stack, podgroup(minMember=2, queue=low.name, priorityClassName=f"gpu-{low.priority}"), ns) is None
    assert priority_denial(stack, podgroup(minMember=2), ns) is None, "no queue: the mutate webhook puts it in the tenant's"
    refused = priority_denial(stack, podgroup(minMember=2, queue=other.name), ns)
    assert refused is not None and "its own Volcano queue" in refused
    if low.priority != "production-training":
        assert priority_denial(stack, podgroup(minMember=2, queue=low.name, priorityClassName="gpu-production-training"), ns) is not None


@pytest.mark.parametrize("stack", ["prod", "onprem"])
def test_tenants_cannot_remove_kueues_scheduling_gates(stack: str) -> None:
    """`gpu-platform-kueue-gates` evaluated as kube-apiserver does: a tenant user or service account updating its own
    pod may not drop `kueue.x-k8s.io/admission` (the pod would start outside its quota) nor `kueue.x-k8s.io/topology`;
    Kueue's controller may (that is how it admits), and a tenant may change its own gates."""
    policy = one(stack, "ValidatingAdmissionPolicy", "gpu-platform-kueue-gates")
    assert one(stack, "ValidatingAdmissionPolicyBinding", "gpu-platform-kueue-gates")["spec"]["validationActions"] == ["Deny"]
    tenant = spec_for(stack).tenants[0]
    ns = one(stack, "Namespace", tenant.ns)
    pod_kind = {"group": "", "version": "v1", "kind": "Pod"}

    def pod(*gates: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
        if gates:
            spec["schedulingGates"] = [{"name": g} for g in gates]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": tenant.ns}, "spec": spec}

    sa = {"username": f"system:serviceaccount:{tenant.ns}:default", "groups": ["system:serviceaccounts", f"system:serviceaccounts:{tenant.ns}"]}
    kueue_sa = {"username": "system:serviceaccount:kueue-system:kueue-controller-manager", "groups": ["system:serviceaccounts"]}
    gated = pod("kueue.x-k8s.io/admission", "example.com/mine")
    for who in (_tenant_user(tenant.groups[0]), sa):
        for old, new in ((gated, pod("example.com/mine")), (gated, pod()), (pod("kueue.x-k8s.io/topology"), pod())):
            denied = vap_validation_denial(policy, pod_kind, new, ns, "UPDATE", old=old, user=who)
            assert denied is not None and "are Kueue's" in denied, (who, old["spec"], new["spec"])
        # Its own gate, and any other change that keeps Kueue's gate, pass.
        assert vap_validation_denial(policy, pod_kind, pod("kueue.x-k8s.io/admission"), ns, "UPDATE", old=gated, user=who) is None
    assert vap_validation_denial(policy, pod_kind, pod("example.com/mine"), ns, "UPDATE", old=gated, user=kueue_sa) is None


def test_egress_boundary_keeps_tenant_policies_from_opening_egress() -> None:
    """`network.egressBoundary: true` labels the namespace; `gpu-platform-owned-objects` then refuses a tenant's own
    NetworkPolicy that carries `egress` rules (NetworkPolicies are additive: it would open that path), while
    ingress-only policies and the deployer pass. Without the setting the stack's egress is a default (admitted)."""
    raw = read_stack_config(stack_path("prod"))
    tenant_raw = raw["gpu-platform:tenants"][0]
    tenant_raw["network"] = {**(tenant_raw.get("network") or {}), "egressBoundary": True}
    spec = spec_from_config(raw, "prod", "Pulumi.prod.yaml")
    tenant = spec.tenants[0]
    policy = owned_policy(spec)
    bounded = tenants.namespace(spec, tenant)
    assert bounded["metadata"]["labels"]["gpu-platform.io/egress-boundary"] == "true"
    free = tenants.namespace(spec_for("prod"), spec_for("prod").tenants[0])
    widen = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "to-the-world", "namespace": tenant.ns},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]},
    }
    ingress_only = {**widen, "spec": {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]}}
    who = _tenant_user(tenant.groups[0])
    denied = vap_validation_denial(policy, NETPOL_KIND, widen, bounded, "CREATE", old=None, user=who)
    assert denied is not None and "egressBoundary" in denied
    assert vap_validation_denial(policy, NETPOL_KIND, ingress_only, bounded, "CREATE", old=None, user=who) is None
    assert vap_validation_denial(policy, NETPOL_KIND, widen, bounded, "CREATE", old=None, user=DEPLOYER) is None
    assert vap_validation_denial(policy, NETPOL_KIND, widen, free, "CREATE", old=None, user=who) is None
