"""kube-scheduler's filters for one pod against one node: taints, node selector/affinity, resource fit.

Kubernetes 1.35 sources: k8s.io/component-helpers/scheduling/corev1 (taints, node affinity) and
pkg/scheduler/framework/plugins (TaintToleration, NodeAffinity, NodeResourcesFit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from gpu_platform.behaviour.apimachinery import parse_quantity

FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """k8s.io/api core/v1 toleration.go `Toleration.ToleratesTaint`: effect (empty: all), key (empty + Exists: all), operator."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates, or None.

    component-helpers scheduling/corev1 helpers.go `FindMatchingUntoleratedTaint`, as the
    TaintToleration plugin's `Filter` calls it.
    """
    for taint in taints:
        if taint.get("effect") in FILTERED_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _requirement(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Apimachinery labels `Requirement.Matches` for a NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present:
        try:
            have, want = int(labels[key]), int(values[0])
        except (ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def affinity_matches(spec: Mapping[str, Any], labels: Mapping[str, str], only_keys: set[str] | None = None) -> bool:
    """component-helpers scheduling/corev1/nodeaffinity `GetRequiredNodeAffinity(pod).Match(node)`.

    nodeSelector entries must all equal the node's labels, and one of the required nodeSelectorTerms
    (matchExpressions ANDed; matchFields ignored here) must match. With `only_keys` the pod's terms are
    first cut to those keys, as Kueue's flavorassigner.go `flavorSelector` does for a flavor's labels.
    """
    selector = spec.get("nodeSelector") or {}
    for key, value in selector.items():
        if (only_keys is None or key in only_keys) and labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        exprs = [e for e in term.get("matchExpressions") or [] if only_keys is None or e["key"] in only_keys]
        if all(_requirement(e, labels) for e in exprs):
            return True
    return False


def insufficient(requests: Mapping[str, Decimal], allocatable: Mapping[str, Any]) -> list[str]:
    """`Insufficient <name>` for each request an empty node does not advertise enough of.

    pkg/scheduler/framework/plugins/noderesources/fit.go `fitsRequest`: zero requests are ignored, an
    extended resource the node does not list counts as 0.
    """
    out = []
    for name, want in sorted(requests.items()):
        if want <= 0:
            continue
        have = parse_quantity(allocatable[name]) if name in allocatable else Decimal(0)
        if want > have:
            out.append(f"Insufficient {name} (asks {want}, a node offers {have})")
    return out


MAX_NODE_SCORE = 100


def least_allocated_node(nodes: Mapping[str, Mapping[str, int]], used: Mapping[str, Mapping[str, int]], request: Mapping[str, int]) -> str | None:
    """Where kube-scheduler puts a pod by default: the feasible node with the highest LeastAllocated score.

    pkg/scheduler/framework/plugins/noderesources/least_allocated.go leastResourceScorer: per scored resource
    (capacity - requested) * MaxNodeScore / capacity, weighted; the default NodeResourcesFit scoring
    (apis/config/v1 defaults.go) scores cpu and memory, weight 1 each: GPUs are not scored, so pods spread by
    cpu and memory. `nodes`: allocatable; `used`: requested so far; feasibility is NodeResourcesFit's filter.
    Ties go to the first name (the scheduler picks among ties at random).
    """
    best: tuple[float, str] | None = None
    for name in sorted(nodes):
        alloc, taken = nodes[name], used.get(name, {})
        if any(taken.get(r, 0) + v > alloc.get(r, 0) for r, v in request.items()):
            continue
        scored = [r for r in ("cpu", "memory") if alloc.get(r, 0) > 0]
        score = sum((alloc[r] - taken.get(r, 0) - request.get(r, 0)) * MAX_NODE_SCORE / alloc[r] for r in scored) / max(1, len(scored))
        if best is None or score > best[0]:
            best = (score, name)
    return None if best is None else best[1]
