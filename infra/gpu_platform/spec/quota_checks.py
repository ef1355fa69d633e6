"""Tenants' GPU quotas against the pools that back them, in the GPUs the user wrote.

Part of the spec's cross-checks, so `plan`, `render`, `explain`, `capacity` and `check` all refuse a
quota the pool cannot hold (the README promises `plan` checks quotas within pools). The gate's
`kueue-quota-fits-pool` judges the same thing on the rendered ClusterQueues (where it also catches a
program that converts GPUs wrongly); both read the stack's `max-quota-overcommit` threshold, and a
stack that disables that rule accepts an overcommitted pool here too, so the two never disagree.
"""

from __future__ import annotations

from gpu_platform.catalog import Catalog
from gpu_platform.errors import Problem
from gpu_platform.pools import gpus_per_node, max_gpus, node_counts
from gpu_platform.spec.models import NodePool, PlatformSpec

P = "gpu-platform:"
QUOTA_RULE = "kueue-quota-fits-pool"
OVERCOMMIT = "max-quota-overcommit"
DEFAULT_OVERCOMMIT = 1.0


def pool_gpus(pool: NodePool, catalog: Catalog, eks: bool) -> int | None:
    """Physical GPUs of a pool at its maximum size; None when its size is unclear (the pool checks say why)."""
    if eks:
        known = bool(pool.instance_types) and pool.instance_types[0] in catalog.instance_types and pool.scaling is not None
    else:  # an on-prem pool is its listed nodes, each with gpusPerNode GPUs of gpuModel
        known = not pool.instance_types and pool.gpus_per_node is not None and pool.gpu_model in catalog.gpus and bool(pool.nodes)
    return max_gpus(pool, catalog) if known else None


def size_words(pool: NodePool, catalog: Catalog) -> str:
    """`3 nodes x 2 GPUs` at maximum size, as the user sized the pool."""
    nodes, per = node_counts(pool)[2], gpus_per_node(pool, catalog)
    return f"{nodes} node{'s' if nodes != 1 else ''} x {per} GPU{'s' if per != 1 else ''}"


def check_quotas_within_pools(spec: PlatformSpec, catalog: Catalog, file: str) -> list[Problem]:
    """One problem per pool whose tenants' quotas add up to more GPUs than it has at maximum size (times the overcommit threshold)."""
    if spec.policy.enforcement.get(QUOTA_RULE) == "disabled":
        return []
    factor = float(spec.policy.thresholds.get(OVERCOMMIT, DEFAULT_OVERCOMMIT))
    out: list[Problem] = []
    by_pool: dict[str, list[tuple[int, int, str, int]]] = {}
    for i, t in enumerate(spec.tenants):
        for j, q in enumerate(t.quotas):
            by_pool.setdefault(q.pool, []).append((i, j, t.name, q.gpus))
    for k, pool in enumerate(spec.node_pools):
        held = by_pool.get(pool.name, [])
        gpus = pool_gpus(pool, catalog, spec.is_eks)
        if not held or gpus is None:
            continue
        total = sum(n for *_, n in held)
        limit = gpus * factor
        if total <= limit:
            continue
        # The quota that takes the pool over its size is the one to look at.
        running = [sum(n for *_, n in held[: m + 1]) for m in range(len(held))]
        i, j, _, _ = held[next(m for m, total_so_far in enumerate(running) if total_so_far > limit)]
        shares = ", ".join(f"{name} {n}" for _, _, name, n in held)
        over = f" x max-quota-overcommit {factor:g}" if factor != DEFAULT_OVERCOMMIT else ""
        out.append(
            Problem(
                file,
                f"{P}tenants[{i}].quotas[{j}].gpus",
                f"quotas on pool '{pool.name}' add up to {total} GPUs ({shares}) but the pool has {gpus} GPUs at max size "
                f"({size_words(pool, catalog)}{over})",
                f"allowed: at most {int(limit)} GPUs in all on '{pool.name}': lower the quotas or raise {P}nodePools[{k}]"
                + (".scaling.max" if pool.scaling is not None else ".nodes"),
            )
        )
    return out
