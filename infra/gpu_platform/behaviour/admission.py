"""ValidatingAdmissionPolicy, evaluated as kube-apiserver does (Kubernetes 1.33+, plugin/policy/validating).

Matching (policy matchConstraints, binding matchResources), matchConditions, variables and
validations in CEL (cel-python), and the binding's validationActions. Parameters (`paramKind` /
`paramRef`) are refused with a clear error: the platform's policies take none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import celpy

from gpu_platform.behaviour.apimachinery import selector_matches

POLICY_KIND = "ValidatingAdmissionPolicy"
BINDING_KIND = "ValidatingAdmissionPolicyBinding"
# kind -> (group, version, resource) of the kinds the platform's tenants create.
RESOURCES: dict[str, tuple[str, str, str]] = {
    "Pod": ("", "v1", "pods"),
    "Service": ("", "v1", "services"),
    "Ingress": ("networking.k8s.io", "v1", "ingresses"),
    "NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies"),
    "Job": ("batch", "v1", "jobs"),
    "CronJob": ("batch", "v1", "cronjobs"),
    "Deployment": ("apps", "v1", "deployments"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    "TrainJob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
    "PyTorchJob": ("kubeflow.org", "v1", "pytorchjobs"),
    "MPIJob": ("kubeflow.org", "v2beta1", "mpijobs"),
    "RayJob": ("ray.io", "v1", "rayjobs"),
    "RayCluster": ("ray.io", "v1", "rayclusters"),
    "Workload": ("kueue.x-k8s.io", "v1beta2", "workloads"),
    "PodGroup": ("scheduling.volcano.sh", "v1beta1", "podgroups"),
    "VolcanoJob": ("batch.volcano.sh", "v1alpha1", "jobs"),
}


@dataclass(frozen=True)
class Request:
    """One admission request: the object, its resource, the operation and its namespace object."""

    obj: Mapping[str, Any]
    group: str
    version: str
    resource: str
    kind: str
    namespace: Mapping[str, Any] | None = None
    operation: str = "CREATE"
    old: Mapping[str, Any] | None = None
    user: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Denial:
    """A validation that failed under a binding with Deny: the policy and its message."""

    policy: str
    message: str


def request_for(obj: Mapping[str, Any], namespace: Mapping[str, Any] | None, operation: str = "CREATE") -> Request:
    """The admission request the API server builds for creating this object (kind from apiVersion/kind)."""
    kind = str(obj.get("kind", ""))
    api = str(obj.get("apiVersion", ""))
    group, _, version = api.rpartition("/")
    if kind == "Job" and group == "batch.volcano.sh":
        kind = "VolcanoJob"
    if kind not in RESOURCES:
        raise ValueError(f"kind {obj.get('kind')!r} is not one the admission model knows; allowed: {', '.join(sorted(RESOURCES))}")
    resource = RESOURCES[kind][2]
    return Request(obj, group, version, resource, str(obj.get("kind")), namespace, operation)


def _listed(values: Sequence[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def rule_matches(rules: Sequence[Mapping[str, Any]], req: Request) -> bool:
    """Apiserver pkg/admission/plugin/webhook/predicates/rules `Matcher.Matches`: group, version, operation and resource all listed."""
    for r in rules:
        if (
            _listed(r.get("apiGroups"), req.group)
            and _listed(r.get("apiVersions"), req.version)
            and _listed(r.get("operations"), req.operation)
            and _listed(r.get("resources"), req.resource)
        ):
            return True
    return False


def _ns_labels(req: Request) -> dict[str, str]:
    return dict(((req.namespace or {}).get("metadata") or {}).get("labels") or {})


def resources_match(match: Mapping[str, Any] | None, req: Request) -> bool:
    """Apiserver pkg/admission/plugin/policy/matching `Matcher.Matches`: resourceRules (none: all), excludeResourceRules, selectors."""
    if match is None:
        return True
    rules = match.get("resourceRules")
    if rules is not None and not rule_matches(rules, req):
        return False
    if rule_matches(match.get("excludeResourceRules") or [], req):
        return False
    if req.namespace is not None and not selector_matches(match.get("namespaceSelector"), _ns_labels(req)):
        return False
    labels = ((req.obj.get("metadata") or {}).get("labels")) or {}
    return selector_matches(match.get("objectSelector"), labels)


@cache
def _program(expr: str) -> Any:
    # The API server compiles each expression once (at policy creation); parsing is most of the cost here too.
    env = celpy.Environment()
    return env.program(env.compile(expr))


def _cel(expr: str, activation: dict[str, Any]) -> Any:
    return _program(expr).evaluate(activation)


def _activation(req: Request) -> dict[str, Any]:
    request = {
        "kind": {"group": req.group, "version": req.version, "kind": req.kind},
        "resource": {"group": req.group, "version": req.version, "resource": req.resource},
        "operation": req.operation,
        "namespace": ((req.obj.get("metadata") or {}).get("namespace")) or "",
    }
    return {
        "object": celpy.json_to_cel(dict(req.obj)),
        "oldObject": None,
        "namespaceObject": celpy.json_to_cel(dict(req.namespace or {})),
        "request": celpy.json_to_cel(request),
    }


def vap_validation_denial(
    policy: Mapping[str, Any],
    request_kind: Mapping[str, str],
    obj: Mapping[str, Any] | None,
    ns: Mapping[str, Any],
    operation: str = "CREATE",
    old: Mapping[str, Any] | None = None,
    user: Mapping[str, Any] | None = None,
) -> str | None:
    """The message of the first failing validation of a matched ValidatingAdmissionPolicy, or None.

    kubernetes v1.33 staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/validator.go
    `Validate`: matchConditions first (one false: the policy does not apply), variables evaluated in
    order, every validation must be true, an evaluation error under failurePolicy Fail denies
    (Ignore admits). Matching (rules, selectors) is `resources_match`'s. `object` is null on DELETE and
    `oldObject` null on CREATE (admission/plugin/policy/validating CEL activation); `request.userInfo` is
    the requester (username, groups), `request.namespace` the namespace's name.
    """
    spec = policy["spec"]
    if spec.get("paramKind"):
        raise ValueError(f"policy {policy['metadata']['name']}: paramKind is not evaluated here; allowed: policies without parameters")
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(dict(obj) if obj is not None else None),
        "namespaceObject": celpy.json_to_cel(dict(ns)),
        "oldObject": celpy.json_to_cel(dict(old) if old is not None else None),
        "request": celpy.json_to_cel(
            {
                "kind": dict(request_kind),
                "operation": operation,
                "namespace": (ns.get("metadata") or {}).get("name", ""),
                "userInfo": dict(user) if user is not None else {"username": "", "groups": []},
            }
        ),
    }
    variables: dict[Any, Any] = {}
    try:
        for cond in spec.get("matchConditions") or []:
            result = _cel(cond["expression"], activation)
            if isinstance(result, celpy.celtypes.BoolType) and not bool(result):
                return None
        for v in spec.get("variables", []):
            activation["variables"] = celpy.celtypes.MapType(variables)
            variables[celpy.celtypes.StringType(v["name"])] = _cel(v["expression"], activation)
        activation["variables"] = celpy.celtypes.MapType(variables)
        for check in spec["validations"]:
            result = _cel(check["expression"], activation)
            if not (isinstance(result, celpy.celtypes.BoolType) and bool(result)):
                return str(check["message"])
    except celpy.CELEvalError as exc:
        return f"evaluation error: {exc}" if spec.get("failurePolicy", "Fail") == "Fail" else None
    return None


def denials(objects: Sequence[Mapping[str, Any]], req: Request) -> list[Denial]:
    """Every Deny-bound ValidatingAdmissionPolicy that refuses the request, in policy order.

    apiserver plugin/policy/generic `Dispatcher`: a policy applies through each binding naming it;
    both the policy's matchConstraints and the binding's matchResources must match; a binding
    without `Deny` in validationActions (Warn, Audit) does not refuse.
    """
    policies = {o["metadata"]["name"]: o for o in objects if o.get("kind") == POLICY_KIND}
    out = []
    for binding in (o for o in objects if o.get("kind") == BINDING_KIND):
        spec = binding.get("spec") or {}
        policy = policies.get(spec.get("policyName", ""))
        if policy is None or "Deny" not in (spec.get("validationActions") or []):
            continue
        if spec.get("paramRef"):
            raise ValueError(f"binding {binding['metadata']['name']}: paramRef is not evaluated here; allowed: bindings without parameters")
        if not (resources_match(policy["spec"].get("matchConstraints"), req) and resources_match(spec.get("matchResources"), req)):
            continue
        kind = {"group": req.group, "version": req.version, "kind": req.kind}
        message = vap_validation_denial(policy, kind, req.obj, req.namespace or {}, req.operation, req.old, req.user)
        if message is not None:
            out.append(Denial(policy["metadata"]["name"], message))
    return out
