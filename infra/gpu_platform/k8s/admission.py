"""Admission checks the cluster runs on objects the platform renders, repeated here so a bad object fails the plan.

Each function mirrors one upstream webhook or validation function (named in its docstring) closely
enough to refuse what the component refuses; tests and the policy gate apply them to every object
the program renders.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

# k8s.io/apimachinery pkg/api/resource/quantity.go suffixes (binary, decimal SI, and e-notation handled apart).
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal(10**3)}
_DECIMAL |= {"M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)$")
# Resources the API server counts in whole units besides extended resources (core/helper IsIntegerResourceName).
_STANDARD_INTEGER = {"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims"}


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity (`4`, `500m`, `256Gi`, `1e3`) as an exact number; ValueError if malformed."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    m = _QUANTITY.match(str(value).strip())
    if not m:
        raise ValueError(f"{value!r} is not a quantity")
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a quantity") from None
    suffix = m.group(2)
    if suffix[:1] in ("e", "E"):
        return number * (Decimal(10) ** int(suffix[1:]))
    return number * (_BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix])


def is_integer_resource(name: str) -> bool:
    """k8s pkg/apis/core/helper IsIntegerResourceName: standard integer resources and extended resources."""
    extended = "/" in name and not name.startswith(("kubernetes.io/", "requests.")) and ".kubernetes.io/" not in name
    return name in _STANDARD_INTEGER or extended


def _quantity_errors(path: str, resources: Any) -> tuple[dict[str, Decimal], list[str]]:
    """ValidateResourceQuantityValue per entry: parseable, not negative, whole for integer resources."""
    out: dict[str, Decimal] = {}
    errors = []
    for name, raw in (resources or {}).items():
        try:
            q = parse_quantity(raw)
        except ValueError as exc:
            errors.append(f"{path}.{name}: {exc}")
            continue
        if q < 0:
            errors.append(f"{path}.{name}: must be greater than or equal to 0")
        elif is_integer_resource(str(name)) and q != q.to_integral_value():
            errors.append(f"{path}.{name}: must be an integer")
        out[str(name)] = q
    return out, errors


def volcano_queue_errors(queue: dict[str, Any]) -> list[str]:
    """What Volcano's queue admission webhook refuses in a Queue (create), as `spec.<path>: <reason>` lines.

    volcano pkg/webhooks/admission/queues/validate/validate_queue.go `validateQueue`:
    `validateResourceQuantityOfQueue` (every quantity valid; each resource in `guarantee.resource` must
    be in `deserved` with deserved >= guarantee; deserved <= capability where capability names the
    resource), `validateStateOfQueue` (Open or Closed), and `validateHierarchicalQueue` (a queue is not
    its own parent). Checks that need other queues from the lister (hierarchy annotations, parents'
    sums) apply only to hierarchical queues, which the platform does not render.
    """
    spec = queue.get("spec") or {}
    capability, errors = _quantity_errors("spec.capability", spec.get("capability"))
    deserved, more = _quantity_errors("spec.deserved", spec.get("deserved"))
    errors += more
    guarantee, more = _quantity_errors("spec.guarantee.resource", (spec.get("guarantee") or {}).get("resource"))
    errors += more
    for name, g in guarantee.items():
        if name not in deserved:
            errors.append(f"spec.deserved.{name}: deserved[{name}] must be >= guarantee[{name}]={spec['guarantee']['resource'][name]}")
        elif deserved[name] < g:
            errors.append(f"spec.deserved.{name}: deserved[{name}] must be >= guarantee[{name}]")
    for name, d in deserved.items():
        if name in capability and d > capability[name]:
            errors.append(f"spec.deserved.{name}: deserved[{name}] must be <= capability[{name}]")
    state = (queue.get("status") or {}).get("state")
    if state and state not in ("Open", "Closed"):
        errors.append(f"spec.state: queue state must be in [Open Closed], not {state!r}")
    if spec.get("parent") and spec.get("parent") == (queue.get("metadata") or {}).get("name"):
        errors.append("spec.parent: a queue cannot use itself as parent")
    return errors


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """k8s apimachinery metav1.LabelSelectorAsSelector(...).Matches: matchLabels and matchExpressions, ANDed.

    A nil selector matches everything here (Kueue's namespaceMatchesSelector treats nil that way).
    """
    if selector is None:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if (
            (op == "In" and not (present and labels[key] in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


# Kueue's built-in integrations (jobframework.GetIntegrationsList: every FrameworkName under pkg/controller/jobs).
KUEUE_FRAMEWORKS = frozenset(
    {
        "batch/job",
        "deployment",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/jaxjob",
        "kubeflow.org/mpijob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "pod",
        "ray.io/raycluster",
        "ray.io/rayjob",
        "ray.io/rayservice",
        "sparkoperator.k8s.io/sparkapplication",
        "statefulset",
        "trainer.kubeflow.org/trainjob",
        "workload.codeflare.dev/appwrapper",
    }
)
# Kinds a tenant creates -> the integration that manages them (pod-based kinds need `pod` too).
KIND_FRAMEWORK = {"Job": "batch/job", "Deployment": "deployment", "StatefulSet": "statefulset", "Pod": "pod", "JobSet": "jobset.x-k8s.io/jobset"}
KUEUE_SYSTEM_NAMESPACE = "kueue-system"


def kueue_config_errors(config: dict[str, Any]) -> list[str]:
    """What Kueue's manager refuses at start-up in its Configuration (it exits, so nothing is admitted).

    kueue pkg/config/validation.go `validateIntegrations` (frameworks required and known) and
    `validatePodIntegrationOptions` / `validateManagedJobsNamespaceSelector` (with the pod integration a
    managedJobsNamespaceSelector is required, and it must not match kube-system or Kueue's namespace).
    """
    errors = []
    frameworks = (config.get("integrations") or {}).get("frameworks")
    if not frameworks:
        return ["integrations.frameworks: cannot be empty"]
    errors += [f"integrations.frameworks: unsupported value {f!r}" for f in frameworks if f not in KUEUE_FRAMEWORKS]
    selector = config.get("managedJobsNamespaceSelector")
    if "pod" in frameworks and selector is None:
        errors.append("managedJobsNamespaceSelector: cannot be empty when pod integration is enabled")
    if selector is not None:
        for ns in ("kube-system", config.get("namespace") or KUEUE_SYSTEM_NAMESPACE):
            if selector_matches(selector, {"kubernetes.io/metadata.name": ns}):
                errors.append(f"managedJobsNamespaceSelector: should not match the {ns!r} namespace")
    return errors


def kueue_manages(config: dict[str, Any], kind: str, namespace_labels: dict[str, str], queue_name: str | None = None) -> bool:
    """True when Kueue gates this new object (suspends it until a ClusterQueue admits it).

    jobframework utils.go `WorkloadShouldBeSuspended`: with a queue-name label always (given its
    integration is on; for pod-based kinds only in namespaces matching managedJobsNamespaceSelector,
    pod_webhook.go); without one only with manageJobsWithoutQueueName and a matching namespace.
    """
    frameworks = set((config.get("integrations") or {}).get("frameworks") or [])
    framework = KIND_FRAMEWORK[kind]
    if framework not in frameworks or (kind in ("Deployment", "StatefulSet") and "pod" not in frameworks):
        return False
    in_scope = selector_matches(config.get("managedJobsNamespaceSelector"), namespace_labels)
    if queue_name:
        return in_scope if kind in ("Pod", "Deployment", "StatefulSet") else True
    return bool(config.get("manageJobsWithoutQueueName")) and in_scope
