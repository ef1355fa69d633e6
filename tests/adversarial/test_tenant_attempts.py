"""A tenant who wants more than its share: every attempt in tenant_attempts.yaml judged as kube-apiserver judges it.

The request passes authorization (RBAC over the rendered RoleBindings and ClusterRoles: kubernetes
plugin/pkg/auth/authorizer/rbac/rbac.go, gpu_platform.behaviour.rbac), then admission in the order the
API server runs it for these plugins: PodSecurity at the namespace's `enforce` level
(staging/src/k8s.io/pod-security-admission/policy, behaviour.pod_security), then each Deny-bound
ValidatingAdmissionPolicy (plugin/policy/validating, behaviour.admission). The first refusal is the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.behaviour import pod_security
from gpu_platform.behaviour.admission import Request, denials
from gpu_platform.behaviour.rbac import UserInfo, bindings_for, rules_allow
from gpu_platform.k8s import tenants
from gpu_platform.spec.loader import read_stack_config, spec_from_config
from tests.conftest import spec_for, stack_path
from tests.k8s.helpers import objects, one

CORPUS = yaml.safe_load((Path(__file__).parent / "tenant_attempts.yaml").read_text())
ATTACKER = "foundation-research"
# kind -> (group, version, resource, namespaced): the API's discovery for the kinds the corpus writes.
KINDS: dict[str, tuple[str, str, str, bool]] = {
    "Pod": ("", "v1", "pods", True),
    "Service": ("", "v1", "services", True),
    "Secret": ("", "v1", "secrets", True),
    "ResourceQuota": ("", "v1", "resourcequotas", True),
    "LimitRange": ("", "v1", "limitranges", True),
    "Namespace": ("", "v1", "namespaces", False),
    "Node": ("", "v1", "nodes", False),
    "NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies", True),
    "Ingress": ("networking.k8s.io", "v1", "ingresses", True),
    "RoleBinding": ("rbac.authorization.k8s.io", "v1", "rolebindings", True),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", False),
    "PriorityClass": ("scheduling.k8s.io", "v1", "priorityclasses", False),
    "ValidatingAdmissionPolicyBinding": ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", False),
    "ClusterQueue": ("kueue.x-k8s.io", "v1beta2", "clusterqueues", False),
    "ResourceFlavor": ("kueue.x-k8s.io", "v1beta2", "resourceflavors", False),
    "LocalQueue": ("kueue.x-k8s.io", "v1beta2", "localqueues", True),
    "Workload": ("kueue.x-k8s.io", "v1beta2", "workloads", True),
    "Queue": ("scheduling.volcano.sh", "v1beta1", "queues", False),
    "PodGroup": ("scheduling.volcano.sh", "v1beta1", "podgroups", True),
    "Job": ("batch", "v1", "jobs", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets", True),
    "TrainingRuntime": ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", True),
}


def _user(who: str) -> dict[str, Any]:
    name = ATTACKER if who in ("tenant", "tenant-sa") else who
    tenant = next(t for t in spec_for("prod").tenants if t.name == name)
    if who == "tenant-sa":
        sa_groups = ["system:serviceaccounts", f"system:serviceaccounts:{tenant.ns}", "system:authenticated"]
        return {"username": f"system:serviceaccount:{tenant.ns}:pipeline", "groups": sa_groups}
    return {"username": f"someone@{name}", "groups": [*tenant.groups, "system:authenticated"]}


def _resource(obj: Mapping[str, Any]) -> tuple[str, str, str, bool]:
    """(group, version, resource, namespaced) of the object: group and version from its apiVersion (a Volcano `Job` is batch.volcano.sh)."""
    _, _, resource, namespaced = KINDS[str(obj["kind"])]
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    return group, version, resource, namespaced


def _authorized(user: Mapping[str, Any], verb: str, obj: Mapping[str, Any], namespace: str, subresource: str) -> bool:
    """RBAC: a RoleBinding in the namespace or a ClusterRoleBinding names the user and its role allows the request."""
    group, _, resource, namespaced = _resource(obj)
    info = UserInfo(str(user["username"]), tuple(user["groups"]))
    rendered = objects("prod")
    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in rendered if o["kind"] in ("Role", "ClusterRole")}
    scoped = [
        o
        for o in rendered
        if o["kind"] == "ClusterRoleBinding" or (o["kind"] == "RoleBinding" and namespaced and o["metadata"].get("namespace") == namespace)
    ]
    for binding in bindings_for(info, scoped):
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], binding["metadata"].get("namespace", "") if ref["kind"] == "Role" else "", ref["name"]))
        if role is not None and rules_allow(role.get("rules") or [], verb, group, resource, subresource):
            return True
    return False


def _namespace(name: str, variant: str | None) -> dict[str, Any]:
    if variant is None:
        return one("prod", "Namespace", name)
    assert variant == "serving-internal", variant
    raw = read_stack_config(stack_path("prod"))
    serving = next(t for t in raw["gpu-platform:tenants"] if t["name"] == "serving")
    serving["network"]["ingress"]["loadBalancers"] = "internal"
    spec = spec_from_config(raw, "prod", "Pulumi.prod.yaml")
    return tenants.namespace(spec, next(t for t in spec.tenants if t.name == "serving"))


def verdict(attempt: Mapping[str, Any]) -> tuple[str, str]:
    """(who refused, its message), or ("allowed", "")."""
    obj, old = attempt.get("object"), attempt.get("old")
    shown = obj or old
    assert shown is not None
    kind, meta = str(shown["kind"]), shown["metadata"]
    namespace = str(meta.get("namespace") or "")
    verb = attempt.get("verb", "create")
    user = _user(attempt.get("as", "tenant"))
    if not _authorized(user, verb, shown, namespace, attempt.get("subresource", "")):
        return "rbac", f"{user['username']} cannot {verb} {KINDS[kind][2]} in '{namespace}'"
    ns = _namespace(namespace, attempt.get("variant")) if namespace else {}
    level = ((ns.get("metadata") or {}).get("labels") or {}).get(pod_security.LABEL, "privileged")
    if obj is not None and verb in ("create", "update"):
        found = pod_security.violations(dict(obj), level)
        if found:
            return "pod-security", "; ".join(found)
    group, version, resource, _ = _resource(shown)
    operation = {"create": "CREATE", "update": "UPDATE", "delete": "DELETE"}.get(verb)
    if operation is None:
        return "allowed", ""
    request = Request(obj or {}, group, version, resource, kind, ns, operation, old, user)
    refused = denials(objects("prod"), request)
    return (refused[0].policy, refused[0].message) if refused else ("allowed", "")


def test_the_corpus_is_real() -> None:
    """Names are unique, every attempt says why, and refusals and admissions are both there."""
    names = [a["name"] for a in CORPUS]
    assert len(names) == len(set(names)) and len(names) >= 40
    assert all(a.get("why") for a in CORPUS)
    assert sum(a["expect"] == "allowed" for a in CORPUS) >= 5


@pytest.mark.parametrize("attempt", CORPUS, ids=[a["name"] for a in CORPUS])
def test_attempt(attempt: Mapping[str, Any]) -> None:
    by, message = verdict(attempt)
    expect = attempt["expect"]
    if expect == "allowed":
        assert by == "allowed", f"{attempt['name']}: refused by {by}: {message}"
        return
    assert by == expect["by"], f"{attempt['name']}: wanted {expect['by']}, got {by}: {message}"
    assert expect.get("says", "") in message, message
