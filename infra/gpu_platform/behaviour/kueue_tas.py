"""Kueue's Topology-Aware Scheduling: where a pod set's pods go, node by node (kueue at the lockfile's tag).

pkg/cache/scheduler/tas_flavor_snapshot.go, with TASProfileMixed on (its default, pkg/features/kube_features.go):

- a node counts when it is Ready and schedulable, carries the flavor's node labels and every level label
  (tas_nodes_cache.go find, pkg/util/tas/node.go NodeMatchesFlavor), and has no NoSchedule/NoExecute taint the
  pod set (with the flavor's tolerations) does not tolerate (scheduling_simulator_default.go FindFeasibleNodes);
- how many pods of the set fit a node: the least, over every resource the pod requests and one `pods` slot, of
  free / request (fillLeafCounts, pkg/resources/requests.go CountInWithLimitingResource); free is allocatable
  minus non-TAS pods' requests minus admitted TAS assignments (tas_flavor.go snapshot);
- a domain's count is the sum of its children's; domains are sorted BestFit (count descending, then the level
  values) for `required`/`preferred` pod sets and LeastFreeCapacity (count ascending, then the level values) for
  `unconstrained` ones and pod sets a TAS-only ClusterQueue places implicitly (sortedDomains,
  useLeastFreeCapacityAlgorithm);
- findLevelWithFitDomains: at the requested level, BestFit takes the tightest domain that holds every pod
  (findBestFitDomain), LeastFreeCapacity the first that does; if none does, `required` fails, `preferred` moves a
  level up (at the top it spreads), `unconstrained` spreads over the sorted domains, the last piece going to the
  tightest fit under BestFit; then, level by level down to the hostname, the children of all chosen domains are
  sorted together and take the whole count the same way (findTopologyAssignment phase 2b,
  updateCountsToMinimumGeneric).

A pod set that does not fit is not admitted: the Workload waits, its quota free for others, instead of being
admitted and then waiting at the scheduler (flavorassigner.go assignFlavors; when it fits no empty cluster either,
it never will).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["required", "preferred", "unconstrained"]
HOSTNAME = "kubernetes.io/hostname"


@dataclass
class Node:
    """One node of a TAS flavor: its level values (top to bottom, hostname last) and free resources."""

    name: str
    free: dict[str, int]
    """Free capacity per resource in whole units (cpu in millicores, memory in MiB), `pods` included."""
    path: tuple[str, ...] = ()
    """Values of the Topology's levels above the hostname, top first (empty for a hostname-only Topology)."""


@dataclass
class _Domain:
    path: tuple[str, ...]
    count: int
    nodes: list[Node] = field(default_factory=list)


def fits(node: Node, request: Mapping[str, int]) -> int:
    """Pods of this request the node can take: the least of free // request over every requested resource and `pods`."""
    want = {**{r: v for r, v in request.items() if v > 0}, "pods": 1}
    return max(0, min(node.free.get(r, 0) // v for r, v in want.items()))


def _sort(domains: list[_Domain], best_fit: bool) -> list[_Domain]:
    if best_fit:
        return sorted(domains, key=lambda d: (-d.count, d.path))
    return sorted(domains, key=lambda d: (d.count, d.path))


def _tightest(ordered: list[_Domain], need: int) -> _Domain:
    """findBestFitDomain: the first domain in order with the smallest count that still holds `need`; else the first."""
    fitting = [d for d in ordered if d.count >= need]
    if not fitting:
        return ordered[0]
    return min(fitting, key=lambda d: (d.count, ordered.index(d)))


def _domains(nodes: Sequence[Node], depth: int, counts: Mapping[str, int]) -> list[_Domain]:
    """The domains at a level: nodes grouped by their first `depth` level values (depth = len(path)+1: the node itself)."""
    groups: dict[tuple[str, ...], list[Node]] = {}
    for n in nodes:
        key = (*n.path, n.name)[:depth]
        groups.setdefault(key, []).append(n)
    return [_Domain(k, sum(counts[n.name] for n in members), members) for k, members in groups.items()]


def _spread(ordered: list[_Domain], need: int, best_fit: bool) -> list[tuple[_Domain, int]] | None:
    """Take domains in order with their whole count until `need` is covered; BestFit gives the last piece the tightest fit."""
    out: list[tuple[_Domain, int]] = []
    rest = [d for d in ordered if d.count > 0]
    while need > 0 and rest:
        d = rest[0]
        if d.count >= need:
            if best_fit:
                d = _tightest(rest, need)
            out.append((d, need))
            return out
        out.append((d, d.count))
        need -= d.count
        rest.remove(d)
    return out if need <= 0 else None


def place(
    nodes: Sequence[Node], count: int, request: Mapping[str, int], mode: Mode = "unconstrained", level: int | None = None
) -> dict[str, int] | None:
    """Node -> pods for a pod set of `count` pods, or None when Kueue finds no placement (the Workload is not admitted).

    `level`: the requested level as a depth (1 = the top level; len(path)+1 = hostname, the default and what
    `unconstrained` and implied pod sets use).
    """
    levels = len(nodes[0].path) + 1 if nodes else 1
    depth = levels if level is None or mode == "unconstrained" else level
    counts = {n.name: fits(n, request) for n in nodes}
    best_fit = mode != "unconstrained"
    while True:
        ordered = _sort(_domains(nodes, depth, counts), best_fit)
        if not ordered:
            return None
        if any(d.count >= count for d in ordered):  # BestFit: the first (largest); LeastFreeCapacity: any
            chosen = _tightest(ordered, count) if best_fit else next(d for d in ordered if d.count >= count)
            taken: list[tuple[_Domain, int]] | None = [(chosen, count)]
            break
        if mode == "required":
            return None
        if mode == "preferred" and depth > 1:
            depth -= 1
            continue
        taken = _spread(ordered, count, best_fit)
        if taken is None:
            return None
        break
    # Phase 2b of findTopologyAssignment: down to the hostname, the children of every chosen domain are sorted
    # together and take the whole count again, greedily (the slice level defaults to the lowest, so no level below
    # it splits per parent).
    while depth < levels:
        assert taken is not None
        members = [n for d, _ in taken for n in d.nodes]
        taken = _spread(_sort(_domains(members, depth + 1, counts), best_fit), count, best_fit)
        depth += 1
    assert taken is not None  # each level's domains hold what their parents held
    return {d.nodes[0].name: k for d, k in taken}


def admit(nodes: Sequence[Node], assignment: Mapping[str, int], request: Mapping[str, int]) -> None:
    """Take an admitted assignment's requests off its nodes (TASFlavorCache.updateUsage: count x request, plus pods)."""
    by_name = {n.name: n for n in nodes}
    for name, k in assignment.items():
        node = by_name[name]
        for r, v in {**request, "pods": 1}.items():
            node.free[r] = node.free.get(r, 0) - k * v


TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
)


def requests_topology(annotations: Mapping[str, str]) -> bool:
    """workload.IsExplicitlyRequestingTAS: the pod set's template names a topology request."""
    return any(a in annotations for a in TOPOLOGY_ANNOTATIONS)


def tas_only(cluster_queue: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> bool:
    """clusterqueue.go isTASOnly: every flavor of every resource group has a topologyName."""
    spec = cluster_queue.get("spec") or {}
    names = [str(f["name"]) for g in spec.get("resourceGroups") or [] for f in g.get("flavors") or []]
    return all("topologyName" in (flavors.get(n, {}).get("spec") or {}) for n in names)


def flavor_refusal(
    cluster_queue: Mapping[str, Any],
    flavors: Mapping[str, Mapping[str, Any]],
    flavor: str,
    covered: Sequence[str],
    annotations: Mapping[str, str],
    requested: Sequence[str],
) -> str | None:
    """tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS: why a flavor cannot take the pod set, or None."""
    is_tas = "topologyName" in (flavors.get(flavor, {}).get("spec") or {})
    explicit = requests_topology(annotations)
    if explicit or tas_only(cluster_queue, flavors):
        if not explicit:
            return None  # implied: every flavor of a TAS-only queue is a TAS flavor
        if not is_tas:
            return None if not set(requested) & set(covered) else f'Flavor "{flavor}" does not support TopologyAwareScheduling'
        return None
    if is_tas:
        return f'Flavor "{flavor}" supports only TopologyAwareScheduling'
    return None
