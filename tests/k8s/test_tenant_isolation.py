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

from gpu_platform.behaviour.apimachinery import selector_matches
from gpu_platform.behaviour.kueue import kueue_config_errors, kueue_manages
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.tenants import PRIORITY_VALUES
from gpu_platform.pools import node_labels
from tests.conftest import spec_for
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


def vap_denies(policy: dict[str, Any], group: str, version: str, resource: str, kind: str, obj: dict[str, Any], ns: dict[str, Any]) -> str | None:
    """The denial message of a ValidatingAdmissionPolicy for a CREATE, or None when it admits.

    kubernetes v1.33 staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/matching/matching.go
    (namespaceSelector, resourceRules by group/version/resource/operation) and validating/validator.go
    `Validate`: variables evaluated in order, every validation must be true, an evaluation error
    under failurePolicy Fail denies.
    """
    spec = policy["spec"]
    rules = spec["matchConstraints"]["resourceRules"]
    hit = any(
        (group in r["apiGroups"] or "*" in r["apiGroups"])
        and (version in r["apiVersions"] or "*" in r["apiVersions"])
        and resource in r["resources"]
        and "CREATE" in r["operations"]
        for r in rules
    )
    if not hit or not selector_matches(spec["matchConstraints"].get("namespaceSelector"), ns["metadata"].get("labels", {})):
        return None
    return vap_validation_denial(policy, {"group": group, "version": version, "kind": kind}, obj, ns)


def _pod(ns: str, priority: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    if priority:
        spec["priorityClassName"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns}, "spec": spec}


def test_a_tenant_cannot_use_a_priority_above_its_tier() -> None:
    """prod: `serving` is an inference tenant; production-training priority must be denied, its own tier admitted."""
    policy = one("prod", "ValidatingAdmissionPolicy", "gpu-platform-tenant-priority")
    binding = one("prod", "ValidatingAdmissionPolicyBinding", "gpu-platform-tenant-priority")
    assert binding["spec"] == {"policyName": "gpu-platform-tenant-priority", "validationActions": ["Deny"]}
    serving = one("prod", "Namespace", "serving")
    denied = vap_denies(policy, "", "v1", "pods", "Pod", _pod("serving", "gpu-production-training"), serving)
    assert denied is not None and "above this tenant's tier" in denied
    for allowed in ("gpu-inference", "gpu-batch", "gpu-experiments", None):
        assert vap_denies(policy, "", "v1", "pods", "Pod", _pod("serving", allowed), serving) is None, allowed
    # Kueue's workload priority label on a Job is held to the same ceiling.
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"kueue.x-k8s.io/priority-class": "production-training"}}}
    assert vap_denies(policy, "batch", "v1", "jobs", "Job", job, serving) is not None
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "batch"
    assert vap_denies(policy, "batch", "v1", "jobs", "Job", job, serving) is None
    # A system namespace is outside the policy (no tenant label).
    kube_system = {"metadata": {"name": "kube-system", "labels": {"kubernetes.io/metadata.name": "kube-system"}}}
    assert vap_denies(policy, "", "v1", "pods", "Pod", _pod("kube-system", "system-node-critical"), kube_system) is None


def test_every_tenant_is_held_to_its_own_tier(stack: str) -> None:
    policy = one(stack, "ValidatingAdmissionPolicy", "gpu-platform-tenant-priority")
    order = list(PRIORITY_VALUES)
    for tenant in spec_for(stack).tenants:
        ns = one(stack, "Namespace", tenant.ns)
        for tier in order:
            verdict = vap_denies(policy, "", "v1", "pods", "Pod", _pod(tenant.ns, f"gpu-{tier}"), ns)
            assert (verdict is None) is (PRIORITY_VALUES[tier] <= PRIORITY_VALUES[tenant.priority]), (tenant.name, tier, verdict)
        # Classes outside the platform's (system-cluster-critical, or one made up) are denied too.
        assert vap_denies(policy, "", "v1", "pods", "Pod", _pod(tenant.ns, "system-cluster-critical"), ns) is not None


# --- RBAC: the tenant role cannot touch NetworkPolicies --------------------------------------------

# kubernetes v1.33 plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, ClusterRole `edit`:
# rbacv1helpers.NewRule(Write...).Groups(networkingGroup).Resources("networkpolicies", "ingresses").
BUILTIN_EDIT_NETWORKING = [
    {
        "apiGroups": ["networking.k8s.io"],
        "resources": ["networkpolicies", "ingresses"],
        "verbs": ["create", "delete", "deletecollection", "patch", "update"],
    }
]


def rbac_allows(rules: list[dict[str, Any]], verb: str, group: str, resource: str) -> bool:
    """kubernetes pkg/apis/rbac/v1/evaluation_helpers.go RuleAllows: verb, API group and resource each match or are `*`."""
    return any(
        (verb in r["verbs"] or "*" in r["verbs"])
        and (group in r["apiGroups"] or "*" in r["apiGroups"])
        and (resource in r["resources"] or "*" in r["resources"])
        for r in rules
    )


def test_tenants_are_bound_to_a_role_that_writes_their_own_network_policies(stack: str) -> None:
    """Issue 16: tenants add their own NetworkPolicies (policies are additive); the platform's stay guarded by admission."""
    role = one(stack, "ClusterRole", "gpu-platform-tenant")
    for tenant in spec_for(stack).tenants:
        for group in tenant.groups:
            rb = one(stack, "RoleBinding", f"{group}-tenant", tenant.ns)
            assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-platform-tenant"}
    rules = role["rules"]
    for verb in ("create", "delete", "patch", "update", "list"):
        assert rbac_allows(rules, verb, "networking.k8s.io", "networkpolicies"), verb
    # What a tenant needs still works; the platform's quota, queue and namespace objects stay read-only.
    assert rbac_allows(rules, "create", "batch", "jobs") and rbac_allows(rules, "create", "", "pods")
    for group, resource in (("", "resourcequotas"), ("", "limitranges"), ("kueue.x-k8s.io", "localqueues"), ("", "namespaces")):
        assert not rbac_allows(rules, "update", group, resource), resource
    assert not rbac_allows(rules, "impersonate", "", "serviceaccounts")
    assert not rbac_allows(rules, "create", "admissionregistration.k8s.io", "validatingadmissionpolicies")
    assert not rbac_allows(rules, "delete", "admissionregistration.k8s.io", "validatingadmissionpolicybindings")


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

# kubernetes v1.33 pkg/apis/core/helper/helpers.go standardResourceQuotaScopes: the only things a quota can select by.
RESOURCE_QUOTA_SCOPES = {
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
}


def quota_scope_errors(quota_spec: dict[str, Any]) -> list[str]:
    """kubernetes pkg/apis/core/validation validateResourceQuotaScopes / validateScopedResourceSelectorRequirement: unknown scopes are refused."""
    names = list(quota_spec.get("scopes", [])) + [e["scopeName"] for e in (quota_spec.get("scopeSelector") or {}).get("matchExpressions", [])]
    return [f"unsupported scope {n}" for n in names if n not in RESOURCE_QUOTA_SCOPES]


def admissible_flavors(cluster_queue: dict[str, Any], flavors: dict[str, dict[str, Any]], resource: str, node_selector: dict[str, str]) -> list[str]:
    """Flavors Kueue may assign a pod set: those covering the resource whose nodeLabels agree with the pod's nodeSelector.

    kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go `findFlavorForPodSetResource`: a flavor
    whose nodeLabels conflict with the pod set's required node selector is skipped.
    """
    out = []
    for group in cluster_queue["spec"]["resourceGroups"]:
        if resource not in group["coveredResources"]:
            continue
        for f in group["flavors"]:
            labels = flavors[f["name"]]["spec"].get("nodeLabels", {})
            quota = next((r["nominalQuota"] for r in f["resources"] if r["name"] == resource), 0)
            if quota and all(labels.get(k, v) == v for k, v in node_selector.items()):
                out.append(f["name"])
    return out


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
    assert quota_scope_errors(per_pool) == ["unsupported scope NodePool"]
    flavors = {f["metadata"]["name"]: f for f in objects("prod", "ResourceFlavor")}
    cq = one("prod", "ClusterQueue", "data-platform")
    # Pods select a GPU model (or nothing): the Spot flavor selects its fallback group, not one pool.
    assert admissible_flavors(cq, flavors, "nvidia.com/gpu", {"gpu-platform.io/gpu-model": "H100-80GB"}) == []
    assert admissible_flavors(cq, flavors, "nvidia.com/gpu", {"gpu-platform.io/gpu-model": "L40S"}) == ["batch-l40s-spot", "batch-l40s-ondemand"]
    assert kueue_manages(kueue_config("prod"), "Pod", namespace_labels("prod", "data-platform"))


def test_each_flavor_selects_exactly_its_pool(stack: str) -> None:
    """A flavor's nodeLabels match its own pool's node labels and no other pool's, so quota per flavor is quota per pool;
    a Spot flavor also reaches the on-demand pools of its class, GPU model and layout (its fallback), never fixed capacity."""
    catalog = load_catalog()
    spec = spec_for(stack)
    for flavor in objects(stack, "ResourceFlavor"):
        selector = flavor["spec"].get("nodeLabels") or {}
        if not selector:
            continue  # default-cpu: cpu and memory only
        name = flavor["metadata"]["name"]
        matching = [p.name for p in spec.node_pools if all(node_labels(p, catalog).get(k) == v for k, v in selector.items())]
        if spec.pool(name).capacity != "spot":
            assert matching == [name], (name, matching)
            continue
        assert name in matching and flavor["metadata"]["labels"]["gpu-platform.io/pool"] == name
        for other in (spec.pool(m) for m in matching if m != name):
            assert other.capacity in ("spot", "on-demand"), (name, other.name)
            assert other.workload_class == spec.pool(name).workload_class, (name, other.name)
