"""A MultiKueue stack's own rules (`gpu-platform:workers`), and every worker judged as the stack it builds.

Each worker is checked with the same `check_spec` a single-cluster stack gets (federation.worker_spec), and
its problems are pointed back at the worker's keys: `nodePools[1].x` -> `workers[0].nodePools[1].x`, a quota
`tenants[2].quotas[0]` -> `workers[0].quotas.<tenant>[0]`.
"""

from __future__ import annotations

import re

from gpu_platform.catalog import Catalog
from gpu_platform.errors import Problem, did_you_mean, one_of
from gpu_platform.federation import worker_spec
from gpu_platform.pools import gpu_of
from gpu_platform.spec.checks import check_spec
from gpu_platform.spec.models import NodePool, PlatformSpec, Worker

P = "gpu-platform:"
# Keys a worker sets itself; a problem under any other key is the shared setting's, reported once for the manager.
WORKER_KEYS = ("nodePools", "cluster", "network")
MAX_WORKERS = 20  # Kueue's MultiKueueConfig CRD (chart templates/crd): spec.clusters maxItems 20
# A worker's name prefixes its resources' logical names, from which Pulumi auto-names IAM roles (64 characters at most:
# name + "-" + 7 hex digits); the longest role logical name the program builds adds about 30 characters.
MAX_WORKER_NAME = 20


def check_federation(spec: PlatformSpec, catalog: Catalog, file: str) -> list[Problem]:
    """Problems of a manager stack and of each of its workers (none for a single-cluster stack)."""
    if not spec.workers:
        if spec.queueing.kueue.multi_kueue_quota_multiplier != 1:
            why = "a quota multiplier for a MultiKueue manager, but the stack declares no workers"
            return [Problem(file, f"{P}queueing.kueue.multiKueueQuotaMultiplier", why, "allowed: 1 (or unset) without workers")]
        return []
    out: list[Problem] = []
    if not spec.queueing.kueue.enabled:
        out.append(Problem(file, f"{P}queueing.kueue.enabled", "workers need Kueue: MultiKueue is Kueue's", "allowed: true with workers"))
    if spec.queueing.volcano.enabled:
        why = "Volcano jobs bypass Kueue, so MultiKueue would never dispatch them"
        out.append(Problem(file, f"{P}queueing.volcano.enabled", why, "allowed: false with workers"))
    if not spec.is_eks:
        why = "a MultiKueue manager is an EKS cluster of this stack (its NAT egress is what the workers' API endpoints admit)"
        out.append(Problem(file, f"{P}cluster.provider", why, "allowed: eks with workers"))
    elif spec.network.mode != "new":
        why = "the manager's network must be new: the workers' API endpoints admit its NAT gateways' addresses, which it creates"
        out.append(Problem(file, f"{P}network.mode", why, "allowed: new with workers"))
    if spec.node_pools:
        why = "a MultiKueue manager runs no GPU work: its workload copies are dispatched to the workers"
        out.append(Problem(file, f"{P}nodePools", why, "allowed: [] with workers (put the pools under workers[].nodePools)"))
    for i, t in enumerate(spec.tenants):
        if t.quotas:
            why = f"tenant '{t.name}' has quotas on the manager; its manager quota is the sum of its workers' quotas"
            out.append(Problem(file, f"{P}tenants[{i}].quotas", why, "allowed: [] with workers (set workers[].quotas.<tenant>)"))
    if len(spec.workers) > MAX_WORKERS:
        why = f"{len(spec.workers)} workers; a MultiKueueConfig lists at most {MAX_WORKERS} (its CRD's spec.clusters maxItems)"
        out.append(Problem(file, f"{P}workers", why, f"allowed: 1..{MAX_WORKERS} workers"))
    names = [spec.cluster.name, *(w.cluster.name for w in spec.workers)]
    for i, w in enumerate(spec.workers):
        at = f"{P}workers[{i}]"
        if len(w.name) > MAX_WORKER_NAME:
            why = f"'{w.name}' is {len(w.name)} characters; it prefixes the worker's resource names, and IAM role names end at 64"
            out.append(Problem(file, f"{at}.name", why, f"allowed: at most {MAX_WORKER_NAME} characters"))
        if [x.name for x in spec.workers].index(w.name) != i:
            out.append(Problem(file, f"{at}.name", f"duplicate worker name '{w.name}'", "allowed: unique worker names"))
        if names.index(w.cluster.name) != i + 1:
            why = f"cluster name '{w.cluster.name}' is already the {'manager' if names.index(w.cluster.name) == 0 else 'another worker'}'s"
            out.append(Problem(file, f"{at}.cluster.name", why, "allowed: one cluster per worker, none the manager"))
        out += _existing_worker(w, at, file) if w.cluster.provider == "existing" else _eks_worker(w, at, file)
        for j, pool in enumerate(w.node_pools):
            if pool.whole_nodes:
                why = "whole-node queues (Topology-Aware Scheduling) are not mirrored on the manager yet"
                out.append(Problem(file, f"{at}.nodePools[{j}].wholeNodes", why, "allowed: false or unset on workers"))
        tenants = {t.name for t in spec.tenants}
        for tenant in w.quotas:
            if tenant not in tenants:
                out.append(Problem(file, f"{at}.quotas.{tenant}", f"unknown tenant '{tenant}'{did_you_mean(tenant, tenants)}", one_of(tenants)))
        out += _worker_problems(spec, i, catalog, file)
    out += _same_pools(spec, catalog, file)
    return list(dict.fromkeys(out))


def _existing_worker(w: Worker, at: str, file: str) -> list[Problem]:
    """An existing cluster as a worker: the API server and CA the manager's kubeconfig is built from, no AWS region."""
    out = []
    for key, value in (("endpoint", w.endpoint), ("caData", w.ca_data)):
        if value is None:
            why = f"an existing worker needs its API server's {key}: the manager's static kubeconfig for it is built from them"
            out.append(Problem(file, f"{at}.{key}", why, f"allowed: {'https://<host>[:port]' if key == 'endpoint' else 'base64 CA data'}"))
    if w.region is not None:
        out.append(Problem(file, f"{at}.region", "an existing worker has no AWS region", "allowed: remove it"))
    return out


def _eks_worker(w: Worker, at: str, file: str) -> list[Problem]:
    """An EKS worker: its region, and a public endpoint the manager and the deployers reach."""
    out = []
    if w.region is None:
        out.append(Problem(file, f"{at}.region", "an EKS worker needs its AWS region", "allowed: an AWS region such as us-west-2"))
    for key, value in (("endpoint", w.endpoint), ("caData", w.ca_data), ("storageClass", w.storage_class)):
        if value is not None:
            why = f"an EKS worker's {key} comes from the cluster and the gp3 class the program creates"
            out.append(Problem(file, f"{at}.{key}", why, "allowed: remove it"))
    if not w.cluster.endpoint_public_access:
        why = "the manager reaches a worker's API over its public endpoint, restricted to the manager's NAT addresses"
        out.append(Problem(file, f"{at}.cluster.endpointPublicAccess", why, "allowed: true (docs/multi-cluster.md, 'Network path')"))
    elif not w.cluster.public_access_cidrs:
        # Empty means open to all on EKS; here the program would list the manager's NAT addresses alone, locking
        # out whoever runs `pulumi up` (it reaches the worker's API the same way).
        why = "no publicAccessCidrs: the endpoint would admit the manager alone, not whoever runs `pulumi up`"
        out.append(Problem(file, f"{at}.cluster.publicAccessCidrs", why, "allowed: the deployers' egress CIDRs (the manager's are added)"))
    return out


def _worker_problems(spec: PlatformSpec, i: int, catalog: Catalog, file: str) -> list[Problem]:
    """The worker's stack problems, at the worker's keys; shared settings' problems are the manager's to report."""
    ws = worker_spec(spec, i)
    tenant_of = {j: t.name for j, t in enumerate(ws.tenants)}
    shared = {(p.path, p.message) for p in check_spec(spec, catalog, file)}
    out: list[Problem] = []
    for p in check_spec(ws, catalog, file):
        path = worker_path(p.path, i, tenant_of)
        if path is not None:  # the key, and every key its message and advice name, at the worker's keys
            out.append(Problem(p.file, path, _at_worker(p.message, i, tenant_of), _at_worker(p.allowed, i, tenant_of)))
        elif (p.path, p.message) not in shared:
            # A shared setting that is wrong only on this worker (an FSx zone outside its region, load balancers
            # where its controller is off): at the shared key, naming the worker.
            out.append(Problem(p.file, p.path, f"on worker '{spec.workers[i].name}': {p.message}", p.allowed))
    return out


KEY_IN_TEXT = re.compile(r"gpu-platform:[A-Za-z][\w.\[\]-]*[\w\]]")


def _at_worker(text: str, i: int, tenant_of: dict[int, str]) -> str:
    """A problem's text with each worker key it names (`gpu-platform:nodePools[0].scaling.max`) at the worker's keys."""
    return KEY_IN_TEXT.sub(lambda m: worker_path(m.group(0), i, tenant_of) or m.group(0), text)


def worker_path(path: str, i: int, tenant_of: dict[int, str]) -> str | None:
    """A worker spec's key path at the worker's keys, or None for a shared key."""
    if path == "aws:region":
        return f"{P}workers[{i}].region"
    short = path.removeprefix(P)
    if re.split(r"[.\[]", short, maxsplit=1)[0] in WORKER_KEYS:
        return f"{P}workers[{i}].{short}"
    quota = re.match(r"tenants\[(\d+)\]\.quotas(.*)$", short)
    if quota and int(quota.group(1)) in tenant_of:
        return f"{P}workers[{i}].quotas.{tenant_of[int(quota.group(1))]}{quota.group(2)}"
    return None


def _layout(pool: NodePool, catalog: Catalog) -> tuple[str, ...]:
    """What a quota of GPUs on the pool means: GPU model, sharing layout, allocation."""
    try:
        gpu = gpu_of(pool, catalog).name
    except KeyError:  # an unknown instance type or GPU model: the pool's own check names it
        gpu = "?"
    sharing = pool.sharing
    return (gpu, sharing.mode, str(sharing.replicas), str(sharing.mig_config), pool.allocation)


def _same_pools(spec: PlatformSpec, catalog: Catalog, file: str) -> list[Problem]:
    """Pools of one name are one flavor on the manager, so they must mean the same GPUs on every worker."""
    first: dict[str, tuple[str, tuple[str, ...]]] = {}
    out: list[Problem] = []
    for i, w in enumerate(spec.workers):
        for j, pool in enumerate(w.node_pools):
            layout = _layout(pool, catalog)
            if pool.name not in first:
                first[pool.name] = (w.name, layout)
            elif first[pool.name][1] != layout:
                owner, want = first[pool.name]
                why = f"pool '{pool.name}' is {'/'.join(layout)} here but {'/'.join(want)} on worker '{owner}'"
                out.append(Problem(file, f"{P}workers[{i}].nodePools[{j}].name", why, "allowed: one GPU model and layout per pool name (rename it)"))
    return out
