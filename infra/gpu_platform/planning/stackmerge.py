"""`--write-stack`: merge the plan into the base stack file, keeping every pool, key and comment it does not plan.

The base file is read with a round-trip YAML loader (ruamel.yaml), so comments, key order and flow
style survive. Each planned pool takes the place of the base pool it matches (same workload class,
capacity tier, GPU model and GPUs per node; same sharing except for a reserved pool, whose
reservation is the given supply), and only its `scaling` changes: `sharing` (a reserved pool's layout
the plan would change is listed, not rewritten: re-partitioning evicts its pods), `efa`, `rootVolumeGiB`,
zones, reservations and comments stay. A planned pool with no match is added. Tenants keep every key; on
planned pools their quota is re-split to add up to the pool's GPUs (lending limits clamped to the new
quota, since Kueue rejects a lendingLimit above the nominal quota), only teams whose demand is
interruptible get Spot quota, and every quota that moves is listed. A team with no tenant is refused.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gpu_platform.catalog import Catalog
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.planning.demand import WORKLOAD_CLASSES
from gpu_platform.planning.planner import Plan
from gpu_platform.planning.stackfile import _split, planned_pools
from gpu_platform.pricing import HOURS_PER_MONTH, spot_node_hour
from gpu_platform.spec.loader import PROJECT, spec_from_config
from gpu_platform.spec.models import PlatformSpec

POOLS = f"{PROJECT}:nodePools"
TENANTS = f"{PROJECT}:tenants"
DEMAND = f"{PROJECT}:demand"


@dataclass(frozen=True)
class Merge:
    """What the merge did, for the plan's output: pools updated in place, added, and kept untouched."""

    updated: tuple[str, ...]
    added: tuple[str, ...]
    kept: tuple[str, ...]
    layouts_kept: tuple[tuple[str, str, str], ...] = ()
    """(pool, its sharing, the plan's): a pool's layout is never rewritten in place (the gate's sharing-layout-changed)."""
    quota_changes: tuple[tuple[str, str, int, int], ...] = ()
    """(tenant, pool, GPUs before, after) of every quota the merge moved, existing tenants' included."""
    types_kept: tuple[TypesKept, ...] = ()
    """A node group's types are not changed in place (EKS replaces the group): each pool whose types the plan's differ from."""


@dataclass(frozen=True)
class TypesKept:
    """An existing pool resized in place with its own instance types, not the ones the plan priced."""

    pool: str
    have: tuple[str, ...]
    planned: tuple[str, ...]
    capacity: str
    nodes: int
    """The pool's written scaling max: the nodes the difference in price is paid on at full size."""

    def node_hour(self, types: tuple[str, ...], catalog: Catalog, spot_discount: float) -> float | None:
        """What a node-hour of the group costs; None where a type is outside the catalog or has no list price.

        Spot at the dearest type's estimate (EC2 launches whichever type has capacity), otherwise the first type's list
        price (EKS managed node groups launch On-Demand types with the prioritized strategy, in the order listed).
        """
        prices = [catalog.instance_types[t].price_per_hour if t in catalog.instance_types else None for t in types]
        if not prices or any(p is None for p in prices):
            return None
        known = [p for p in prices if p is not None]
        return spot_node_hour(known, spot_discount) if self.capacity == "spot" else known[0]

    def priced(self, catalog: Catalog, spot_discount: float) -> dict[str, Any]:
        """The JSON entry: both types' node-hours and the monthly difference at full size (730 h x the pool's max nodes)."""
        have, want = self.node_hour(self.have, catalog, spot_discount), self.node_hour(self.planned, catalog, spot_discount)
        diff = (have - want) * self.nodes * HOURS_PER_MONTH if have is not None and want is not None else None
        return {
            "pool": self.pool,
            "instanceTypes": list(self.have),
            "planned": list(self.planned),
            "nodeHour": None if have is None else round(have, 4),
            "plannedNodeHour": None if want is None else round(want, 4),
            "nodes": self.nodes,
            "monthlyDifferenceAtFullSize": None if diff is None else round(diff, 2),
        }


def _yaml() -> YAML:
    """The round-trip loader/dumper, set to the stack files' layout (2-space maps, lists indented under their key)."""
    y = YAML()
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _gpu(pool: dict[str, Any], catalog: Catalog) -> tuple[str, int] | None:
    types = pool.get("instanceTypes") or []
    if not types or types[0] not in catalog.instance_types:
        return None
    t = catalog.instance(types[0])
    return t.gpu.name, t.gpus


def _sharing(pool: dict[str, Any]) -> tuple[str, Any]:
    s = pool.get("sharing") or {}
    return str(s.get("mode", "none")), s.get("migConfig", s.get("replicas"))


def _matches(planned: dict[str, Any], base: dict[str, Any], catalog: Catalog) -> bool:
    """Same class, tier, GPU model and GPUs per node; same sharing unless reserved; a `-baseline` pool only by name."""
    if planned["name"].endswith("-baseline"):
        return bool(base.get("name") == planned["name"])
    if base.get("workloadClass") != planned["workloadClass"] or base.get("capacity") != planned["capacity"]:
        return False
    if _gpu(base, catalog) != _gpu(planned, catalog) or _gpu(base, catalog) is None:
        return False
    if planned["capacity"] == "reserved":
        return planned.get("reservation") == _plain(base.get("reservation"))
    if planned["capacity"] == "spot" and len(base.get("instanceTypes") or []) < 2:
        return False  # Spot on one type is reclaimed at once: the plan's Spot goes to a pool of its own types
    return _sharing(base) == _sharing(planned)


def _plain(value: Any) -> Any:
    """Round-trip nodes (quoted scalars, commented maps) as plain Python values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def _flow(mapping: dict[str, Any]) -> CommentedMap:
    out = CommentedMap(mapping)
    out.fa.set_flow_style()
    return out


def merge_pools(seq: CommentedSeq, planned: list[dict[str, Any]], catalog: Catalog) -> tuple[dict[str, str], Merge]:
    """Lay the planned pools over the base list in place; planned name -> the name it has in the merged stack."""
    used: set[int] = set()
    names: dict[str, str] = {}
    updated, added = [], []
    layouts: list[tuple[str, str, str]] = []
    types: list[TypesKept] = []
    taken = {str(p.get("name")) for p in seq}
    original = len(seq)  # only the base's own pools are matched, never one this merge added
    for p in planned:
        hit = next((i for i in range(original) if i not in used and _matches(p, seq[i], catalog)), None)
        if hit is None:
            name = p["name"] if p["name"] not in taken else f"{p['name']}-planned"
            body = dict(p, name=name)
            body["scaling"] = _flow(p["scaling"])
            if "sharing" in body:
                body["sharing"] = _flow(body["sharing"])
            seq.append(CommentedMap(body))
            taken.add(name)
            names[p["name"]] = name
            added.append(name)
            continue
        used.add(hit)
        base = seq[hit]
        scaling = base.get("scaling")
        if isinstance(scaling, dict):
            for k in ("min", "desired", "max"):
                scaling[k] = p["scaling"][k]
        else:
            base["scaling"] = _flow(p["scaling"])
        if p["capacity"] == "reserved" and _sharing(base) != _sharing(p):
            # Re-partitioning a pool evicts what runs there (sharing-layout-changed): it is a change of its own.
            layouts.append((str(base["name"]), _layout(base), _layout(p)))
        have = tuple(str(t) for t in base.get("instanceTypes") or [])
        if have != tuple(p["instanceTypes"]):
            types.append(TypesKept(str(base["name"]), have, tuple(p["instanceTypes"]), str(p["capacity"]), int(p["scaling"]["max"])))
        names[p["name"]] = str(base["name"])
        updated.append(str(base["name"]))
    kept = tuple(str(seq[i].get("name")) for i in range(original) if i not in used)
    return names, Merge(tuple(updated), tuple(added), kept, tuple(layouts), types_kept=tuple(types))


def _layout(pool: dict[str, Any]) -> str:
    mode, detail = _sharing(pool)
    return mode if detail is None else f"{mode} {detail}"


def quota_shares(
    plan: Plan, by_group: dict[tuple[str, str, str], list[str]], names: dict[str, str], tenants: list[Any], classes: dict[str, str]
) -> dict[str, dict[str, float]]:
    """Merged pool -> team -> weight of its quota.

    Declared demand names its teams (Spot pools: only the interruptible ones); a history names none, so a pool's
    current quota holders keep their proportions, and a new pool goes to the tenants that hold quota in its workload
    class (`classes`: pool -> class), in proportion to it; a class no tenant holds names the class itself (and
    merge_tenants refuses it: a tenant is the stack's to declare).
    """
    holders: dict[str, dict[str, float]] = {}
    by_class: dict[str, dict[str, float]] = {}
    for t in tenants:
        for q in t.get("quotas") or []:
            holders.setdefault(str(q["pool"]), {})[str(t["name"])] = float(q.get("gpus", 0))
            cls = classes.get(str(q["pool"]))
            if cls is not None:
                mine = by_class.setdefault(cls, {})
                mine[str(t["name"])] = mine.get(str(t["name"]), 0.0) + float(q.get("gpus", 0))
    shares: dict[str, dict[str, float]] = {}
    for g in plan.groups:
        if g.instance_type is None:
            continue
        for planned in by_group.get((g.workload_class, g.instance_type, g.gpu_model), []):
            pool = names[planned]
            spot = planned.endswith("-spot")
            if g.teams:
                weights = {t: w for t, w in g.teams.items() if not spot or t in g.interruptible_teams}
            elif holders.get(pool) and sum(holders[pool].values()) > 0:
                weights = dict(holders[pool])
            elif sum(by_class.get(g.workload_class, {}).values()) > 0:
                weights = dict(by_class[g.workload_class])
            else:
                weights = {g.workload_class: max(g.p95, 1e-9)}
            mine = shares.setdefault(pool, {})
            for team, w in weights.items():
                mine[team] = mine.get(team, 0.0) + w
    return shares


def _no_tenant(team: str) -> str:
    if team in WORKLOAD_CLASSES:  # a history names no teams: its pools go to the tenants holding quota in the class
        return f"no tenant holds quota in workload class '{team}' to share the plan's pools of that class with"
    return f"the plan gives quota to team '{team}', which is no tenant of this stack"


def _quotas(tenants: CommentedSeq) -> dict[tuple[str, str], int]:
    """(tenant, pool) -> GPUs of every quota."""
    return {(str(t["name"]), str(q["pool"])): int(q.get("gpus", 0)) for t in tenants for q in t.get("quotas") or []}


def merge_tenants(
    seq: CommentedSeq, gpus: dict[str, int], shares: dict[str, dict[str, float]], file: str, eks: bool = True
) -> list[tuple[str, str, int, int]]:
    """Re-split the quota of every planned pool in place; other quotas and every tenant key stay.

    Returns (tenant, pool, before, after) of each quota that moved. A team the plan gives quota but the stack has no
    tenant for is refused, not invented: a tenant needs its people's access (`accessRoleArns` on EKS, whose access
    entries carry its groups; the gate's tenant-groups-have-access-entries fails one without), which no plan knows.
    """
    want: dict[str, dict[str, int]] = {pool: _split(gpus[pool], shares.get(pool, {})) for pool in gpus}
    known = {str(t["name"]): t for t in seq}
    before = _quotas(seq)
    missing = sorted({team for split in want.values() for team, n in split.items() if n > 0 and team not in known})
    if missing:
        keys = "name, groups, cohort, priority" + (", accessRoleArns" if eks else "")
        raise ConfigError([Problem(file, TENANTS, _no_tenant(team), f"add the tenant first ({keys})") for team in missing])
    for name, t in known.items():
        quotas = t.get("quotas")
        if quotas is None:
            quotas = t["quotas"] = CommentedSeq()
        have = {str(q["pool"]) for q in quotas}
        for i in range(len(quotas) - 1, -1, -1):
            q = quotas[i]
            pool = str(q["pool"])
            if pool not in want:
                continue
            n = want[pool].get(name, 0)
            if n == 0:
                del quotas[i]
                continue
            q["gpus"] = n
            if "lendingLimit" in q and q["lendingLimit"] > n:
                q["lendingLimit"] = n
        for pool, split in want.items():
            if pool not in have and split.get(name, 0) > 0:
                quotas.append(_flow({"pool": pool, "gpus": split[name]}))
    after = _quotas(seq)
    pairs = sorted(set(before) | set(after))
    return [(t, p, before.get((t, p), 0), after.get((t, p), 0)) for t, p in pairs if before.get((t, p), 0) != after.get((t, p), 0)]


def merged_stack(plan: Plan, base_text: str, base: PlatformSpec, catalog: Catalog, out: Path, base_file: str) -> tuple[str, Merge]:
    """The base stack's text with the plan merged in, validated like any stack (ConfigError when it would be invalid)."""
    if not base.is_eks:
        raise ConfigError(
            [Problem(base_file, f"{PROJECT}:cluster.provider", "--write-stack sizes EKS node groups", "allowed: an EKS base stack (--stack NAME)")]
        )
    y = _yaml()
    doc = y.load(base_text)
    cfg = doc["config"]
    planned, by_group = planned_pools(plan, base, catalog)
    if cfg.get(POOLS) is None:
        cfg[POOLS] = CommentedSeq()
    names, merge = merge_pools(cfg[POOLS], planned, catalog)
    pools = {str(p["name"]): p for p in cfg[POOLS]}
    gpus = {n: int(pools[n]["scaling"]["max"]) * catalog.instance(pools[n]["instanceTypes"][0]).gpus for n in set(names.values())}
    if cfg.get(TENANTS) is None:
        cfg[TENANTS] = CommentedSeq()
    classes = {str(p["name"]): str(p.get("workloadClass")) for p in cfg[POOLS]}
    shares = quota_shares(plan, by_group, names, list(cfg[TENANTS]), classes)
    moved = merge_tenants(cfg[TENANTS], gpus, shares, base_file, base.is_eks)
    merge = replace(merge, quota_changes=tuple(moved))
    cfg[DEMAND] = [
        {"workloadClass": t.workload_class, "p95": round(t.p95, 3), "sla": t.sla, "interruptible": t.interruptible}
        for t in plan.totals
        if any(p["workloadClass"] == t.workload_class for p in planned)
    ]
    buf = io.StringIO()
    y.dump(doc, buf)
    text = buf.getvalue()
    name = out.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
    spec_from_config(yaml.safe_load(text)["config"], stack=name, file=str(out))
    header = (
        f"# Written by `gpu-platform capacity plan --demand {plan.demand.source}` from {base_file}:\n"
        f"# {len(merge.updated)} pools resized, {len(merge.added)} added, {len(merge.kept)} kept as they were "
        f"({', '.join(merge.kept) or 'none'}); every other key and comment kept.\n"
        "# `-baseline` pools are reserved GPUs still to commit: buy the plan's instrument (a Savings Plan covers them as they run).\n"
    )
    return header + text, merge


def check_target(out: Path, force: bool, inputs: tuple[Path, ...]) -> None:
    """Refuse, before anything is written, a target that exists (without --force) or whose folder does not."""
    if out.exists() and not force:
        what = "is the base stack it was planned from" if any(out.resolve() == p.resolve() for p in inputs if p.exists()) else "exists"
        raise ConfigError([Problem(str(out), "--write-stack", f"{what}; not overwritten", "allowed: a new file, or --force to replace it")])
    if not out.parent.is_dir():
        raise ConfigError([Problem(str(out), "--write-stack", f"folder {out.parent} does not exist", "allowed: a file in an existing folder")])


def write_new(out: Path, text: str, force: bool, inputs: tuple[Path, ...]) -> None:
    """Write the planned stack to a new file; an existing file (the input stack above all) only with --force."""
    check_target(out, force, inputs)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError([Problem(str(out), "--write-stack", f"cannot be written: {exc.strerror}", "allowed: a writable path")]) from None
