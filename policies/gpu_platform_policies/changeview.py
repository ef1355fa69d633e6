"""The view change rules work on: both plans, the per-resource diff, both stack configs and lock facts.

Built by `gpu-platform check --base` (gpu_platform.commands.change); rules stay pure functions of it.
Findings name the stack key path the user wrote (`gpu-platform:nodePools[0].instanceTypes`); the
command turns it into a file line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpu_platform.catalog import Catalog
from gpu_platform.change.diff import ResourceChange
from gpu_platform.pools import LABEL_GPUS_PER_NODE
from gpu_platform.spec.federation_checks import worker_path
from gpu_platform_policies.evaluate import effective_level, violation
from gpu_platform_policies.model import CHANGE_RULES, Finding, Level, PlanView, Violation
from gpu_platform_policies.view import Pool, pools

NS = "gpu-platform:"

LOCKFILE = "infra/gpu_platform/data/versions.yaml"
# Where a lock fact lives in the lockfile (and under `gpu-platform:versions` in a stack's override).
LOCK_KEYS = {
    "driverBranch": "nvidia_driver.branch",
    "driverVersion": "nvidia_driver.version",
    "cudaVersion": "cuda.version",
    "amiDriverBranch": "eks.ami_driver_branch",
    "amiRelease": "eks.ami_release_version",
    "kubernetes": "kubernetes.version",
}


@dataclass(frozen=True)
class ChangeView:
    """Before and after of one stack: plans, resource changes, raw configs, lock facts and the change's context."""

    before: PlanView
    after: PlanView
    changes: tuple[ResourceChange, ...]
    catalog: Catalog
    before_config: Mapping[str, Any] = field(default_factory=dict)
    after_config: Mapping[str, Any] = field(default_factory=dict)
    before_lock: Mapping[str, str | None] = field(default_factory=dict)
    after_lock: Mapping[str, str | None] = field(default_factory=dict)
    usage: Mapping[str, float] | None = None  # tenant -> physical GPUs in use now (a Prometheus export)
    demand_p95: Mapping[str, float] | None = None  # workload class -> P95 demand in GPUs
    maintenance: tuple[str, ...] = ()  # `GPU-Maintenance:` statements of the change's commits
    production: bool = False
    gate_changes: tuple[str, ...] = ()  # repository paths of the gate itself (policies/, CI) the change touches
    owners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # path -> its CODEOWNERS (the stack file's too)
    stack_file: str = ""  # the stack file's repository path

    def change(self, type_token: str, name: str) -> ResourceChange | None:
        """The change of one resource, if any."""
        return next((c for c in self.changes if c.type == type_token and c.name == name), None)

    def pools_before(self) -> dict[str, Pool]:
        """GPU pools of the base plan by pool name."""
        return {p.name: p for p in pools(self.before, self.catalog)}

    def pools_after(self) -> dict[str, Pool]:
        """GPU pools of the working tree's plan by pool name."""
        return {p.name: p for p in pools(self.after, self.catalog)}

    def entries(self, key: str, after: bool = True) -> list[Mapping[str, Any]]:
        """The list under `gpu-platform:<key>` (nodePools, tenants) of one side's stack file."""
        value = (self.after_config if after else self.before_config).get(NS + key)
        return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []

    def key_of(self, key: str, name: str, *fields: str) -> str:
        """Key path of a named entry (`gpu-platform:nodePools[2].capacity`), in the working tree's file; the list itself when gone."""
        for i, e in enumerate(self.entries(key)):
            if e.get("name") == name:
                return ".".join([f"{NS}{key}[{i}]", *fields])
        return NS + key

    def lock_key(self, fact: str) -> tuple[str | None, str]:
        """(file, key path) of a lock fact: the stack's `versions` override when it sets it, else the lockfile (file None: the stack)."""
        path = LOCK_KEYS[fact]
        node: Any = self.after_config.get(NS + "versions")
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return (None, f"{NS}versions.{path}") if node is not None else (LOCKFILE, path)

    def stated_maintenance(self, *subjects: str) -> str | None:
        """The statement `GPU-Maintenance: <subject>[,<subject>...] <window> <ticket>` naming one of `subjects` (a pool, `driver`).

        The command has refused malformed statements (gpu_platform.change.trailers); `all` names nothing.
        """
        for statement in self.maintenance:
            head = statement.split(maxsplit=1)[0] if statement.split() else ""
            if {s for s in head.split(",") if s} & set(subjects):
                return statement
        return None


def quota_total(tenant: Mapping[str, Any]) -> int:
    """GPUs of a tenant's quotas as the user wrote them."""
    return sum(int(q.get("gpus", 0) or 0) for q in tenant.get("quotas") or [] if isinstance(q, Mapping))


def evaluate_change(view: ChangeView, enforcement: Mapping[str, Level] | None = None) -> list[Violation]:
    """Violations of every enabled change rule over each cluster of the stack in turn, mandatory first."""
    out: list[Violation] = []
    for part, at_worker in cluster_changes(view):
        for rule in CHANGE_RULES.values():
            level = effective_level(rule, enforcement or {})
            if level == "disabled":
                continue
            found: Iterable[Finding] = [replace(f, key=at_worker(f.key)) for f in rule.check(part)]
            # A deleted resource has no key in the working tree's file: the base plan's says where it was.
            out += [violation(rule, level, f, part.after if part.after.source_of(f.resource) or f.key else part.before) for f in found]
    return sorted(set(out), key=lambda v: (v.level != "mandatory", v.policy, v.resource, v.message))


def _same(key: str | None) -> str | None:
    return key


def worker_config(config: Mapping[str, Any], worker: str) -> dict[str, Any]:
    """A MultiKueue stack's config as one worker's own stack file would read (federation.worker_spec, on raw config).

    Empty when the worker is not in this side's file (added or removed by the change).
    """
    workers = config.get(NS + "workers")
    w = next((w for w in workers if isinstance(w, Mapping) and w.get("name") == worker), None) if isinstance(workers, list) else None
    if w is None:
        return {}
    out = {k: v for k, v in config.items() if k != NS + "workers"}
    out |= {
        NS + "nodePools": w.get("nodePools") or [],
        NS + "cluster": w.get("cluster"),
        NS + "network": w.get("network"),
        "aws:region": w.get("region"),
    }
    raw = w.get("quotas")
    quotas: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    tenants = config.get(NS + "tenants")
    out[NS + "tenants"] = (
        [dict(t) | {"quotas": quotas.get(str(t.get("name")), [])} for t in tenants if isinstance(t, Mapping)] if isinstance(tenants, list) else []
    )
    return out


def cluster_changes(view: ChangeView) -> list[tuple[ChangeView, Callable[[str | None], str | None]]]:
    """The change as each cluster of a MultiKueue stack sees it, with the mapping of a rule's key to that worker's keys.

    A worker's pools, quotas and objects share names with the other workers' (one pool name, one flavor on the
    manager), so rules that find a pool or an object by name judge each cluster alone: its plans, its resource
    changes and a stack file as its own would read. A single-cluster stack is itself, keys unchanged.
    """
    before, after = view.before.by_cluster(), view.after.by_cluster()
    if set(before) | set(after) == {None}:
        return [(view, _same)]
    out: list[tuple[ChangeView, Callable[[str | None], str | None]]] = []
    listed = [w.get("name") for w in view.after_config.get(NS + "workers") or [] if isinstance(w, Mapping)]
    for scope in dict.fromkeys([*before, *after]):
        b, a = before.get(scope) or PlanView([]), after.get(scope) or PlanView([])
        names = {r.name for r in b} | {r.name for r in a}
        part = replace(view, before=b, after=a, changes=tuple(c for c in view.changes if c.name in names))
        if scope is None:  # the manager: no pools, no quotas of its own
            out.append((part, _same))
            continue
        worker = scope.removesuffix("-worker")
        part = replace(part, before_config=worker_config(view.before_config, worker), after_config=worker_config(view.after_config, worker))
        index = listed.index(worker) if worker in listed else None
        tenants = [t.get("name") for t in part.after_config.get(NS + "tenants") or []]
        out.append((part, _worker_keys(index, {j: str(t) for j, t in enumerate(tenants)})))
    return out


def _worker_keys(index: int | None, tenant_of: dict[int, str]) -> Callable[[str | None], str | None]:
    """A finding's key in a worker's own-stack reading, at the worker's keys in the real file."""

    def at(key: str | None) -> str | None:
        if key is None or index is None:
            return key
        return worker_path(key, index, tenant_of) or key

    return at


def tier_gpus(plan: PlanView, catalog: Catalog) -> dict[tuple[str, str, str], int]:
    """(workload class, capacity tier, GPU model) -> GPUs at maximum size, over every GPU pool of a plan."""
    out: dict[tuple[str, str, str], int] = {}
    for p in pools(plan, catalog):
        # A Spot pool's own fallback group is on-demand, but only for Spot's work while Spot is gone: its own row.
        key = (p.workload_class or "unknown", "spot fallback" if p.spot_fallback else p.tier, p.gpu_model or "unknown")
        out[key] = out.get(key, 0) + pool_gpus(p)
    return out


def pool_gpus(p: Pool) -> int:
    """Physical GPUs of a pool at maximum size.

    A Capacity Block group names its type only in the launch template, so its node label
    `gpu-platform.io/gpus-per-node` says how many GPUs a node has.
    """
    if p.max_gpus is not None:
        return p.max_gpus
    label = str(p.labels.get(LABEL_GPUS_PER_NODE, ""))
    return p.nodes * int(label) if label.isdigit() else 0


def tier_rows(view: ChangeView) -> Iterator[tuple[str, str, str, int, int]]:
    """(class, tier, GPU model, GPUs before, GPUs after) for every class, tier and model on either side."""
    before, after = tier_gpus(view.before, view.catalog), tier_gpus(view.after, view.catalog)
    for key in sorted(before.keys() | after.keys()):
        yield key[0], key[1], key[2], before.get(key, 0), after.get(key, 0)
