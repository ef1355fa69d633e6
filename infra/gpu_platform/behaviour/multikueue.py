"""Kueue MultiKueue as the manager's controllers treat a worker's kubeconfig and dispatch a workload (Kueue at the lockfile's release).

- pkg/controller/admissionchecks/multikueue/multikueuecluster.go `validateKubeconfig` and `validateRestConfig`: a
  kubeconfig read from a MultiKueueCluster's Secret (key `kubeconfig`, in Kueue's namespace: `getKubeConfigFromSecret`)
  is refused, with the cluster's Active condition False and reason `InsecureKubeConfig`, for a `tokenFile`,
  `insecure-skip-tls-verify`, a `certificate-authority` file path, an empty server, a server host that is neither an
  IP nor a DNS-1123 name, basic auth, an `exec` plugin or an `auth-provider` (`kubeconfig_errors`). No feature gate
  lifts it in v0.19 (MultiKueueAllowInsecureKubeconfigs is deprecated and locked off).
- pkg/controller/workloaddispatcher/incrementaldispatcher.go: with dispatcherName
  `kueue.x-k8s.io/multikueue-dispatcher-incremental`, once a workload holds quota on the manager and its MultiKueue
  check is Pending, the dispatcher nominates the next `stepSize` workers of the MultiKueueConfig's `clusters`, in that
  order (feature gate MultiKueueIncrementalDispatcherRespectConfigOrder, beta and on), and appends another `stepSize`
  every `incrementalDispatcherRoundTimeout` (5 minutes, a constant) until a nominated worker admits it; earlier
  nominees stay nominated; the first worker to admit gets it (`status.clusterName`), the copies elsewhere are removed
  (`dispatch`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import yaml

ROUND_TIMEOUT_S = 5 * 60  # incrementaldispatcher.go incrementalDispatcherRoundTimeout
DEFAULT_STEP_SIZE = 3  # incrementaldispatcher.go DefaultStepSize (apis/config/v1beta2/defaults.go)
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _named(entries: Any, name: str | None, field: str) -> Mapping[str, Any]:
    """The `field` of the kubeconfig list entry called `name` (clusters, users, contexts)."""
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, Mapping) and e.get("name") == name and isinstance(e.get(field), Mapping):
            return e[field]
    return {}


def kubeconfig_errors(text: str) -> list[str]:
    """Why Kueue's MultiKueue would refuse this kubeconfig (empty when it connects with it)."""
    try:
        doc = yaml.safe_load(text)  # JSON is YAML: client-go's clientcmd.Load reads either
    except yaml.YAMLError as exc:
        return [f"not a kubeconfig: {str(exc).splitlines()[0]}"]
    if not isinstance(doc, Mapping):
        return ["not a kubeconfig: not a mapping"]
    context = _named(doc.get("contexts"), doc.get("current-context"), "context")
    cluster = _named(doc.get("clusters"), context.get("cluster"), "cluster")
    user = _named(doc.get("users"), context.get("user"), "user")
    name = context.get("cluster", "?")
    if not context:
        return ["no current-context"]
    out: list[str] = []
    if user.get("tokenFile"):
        out.append("tokenFile is not allowed")
    if cluster.get("insecure-skip-tls-verify"):
        out.append(f"insecure TLS verification is not allowed for cluster {name}")
    if cluster.get("certificate-authority"):
        out.append(f"certificate-authority file paths are not allowed, use certificate-authority-data for cluster {name}")
    server = str(cluster.get("server") or "")
    if not server:
        out.append(f"server URL is required for cluster {name}")
    else:
        host = urlsplit(server if "://" in server else f"https://{server}").hostname or ""
        if not _is_ip(host) and not (len(host) <= 253 and _DNS1123_SUBDOMAIN.match(host)):
            out.append(f"untrusted server endpoint {server}")
    if user.get("username") or user.get("password"):
        out.append("basic auth is not allowed")
    if user.get("exec"):
        out.append("exec plugins are not allowed")
    if user.get("auth-provider"):
        out.append("auth providers are not allowed")
    return out


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def kubeconfig_server(text: str) -> str | None:
    """The server URL of the current context, or None when the kubeconfig does not say."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(doc, Mapping):
        return None
    context = _named(doc.get("contexts"), doc.get("current-context"), "context")
    server = _named(doc.get("clusters"), context.get("cluster"), "cluster").get("server")
    return str(server) if server else None


def manager_config(values: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Kueue Configuration a release's values give the manager (`managerConfig.controllerManagerConfigYaml`)."""
    text = (values.get("managerConfig") or {}).get("controllerManagerConfigYaml") if isinstance(values.get("managerConfig"), Mapping) else None
    if not isinstance(text, str):
        return {}
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return doc if isinstance(doc, Mapping) else {}


def step_size(config: Mapping[str, Any]) -> int | None:
    """Workers nominated per round, or None where the manager does not run the incremental dispatcher."""
    mk = config.get("multiKueue")
    if not isinstance(mk, Mapping) or mk.get("dispatcherName") != "kueue.x-k8s.io/multikueue-dispatcher-incremental":
        return None
    inc = mk.get("incrementalDispatcherConfig")
    if not isinstance(inc, Mapping):
        return DEFAULT_STEP_SIZE
    step = inc.get("stepSize")
    return int(step) if isinstance(step, int) and step >= 1 else DEFAULT_STEP_SIZE


@dataclass(frozen=True)
class Round:
    """One nomination: when (seconds after the workload reserved quota on the manager) and who is nominated by then."""

    at_s: int
    nominated: tuple[str, ...]


@dataclass(frozen=True)
class Dispatch:
    """Where a workload ends up: the worker that admitted it and when, and the rounds on the way (None: nowhere)."""

    worker: str | None
    at_s: int | None
    rounds: tuple[Round, ...]


def dispatch(clusters: Sequence[str], step: int, admits_at: Callable[[str], int | None], horizon_s: int = 24 * 3600) -> Dispatch:
    """The incremental dispatcher's walk over `clusters` (MultiKueueConfig order) for one workload.

    `admits_at(worker)`: seconds after its nomination at which that worker's own Kueue would admit the workload
    (None: never, e.g. no quota of that flavor there). Nominated workers race; the first admission wins.
    """
    nominated: list[str] = []
    rounds: list[Round] = []
    first: dict[str, int] = {}
    t = 0
    while t <= horizon_s:
        fresh = [c for c in clusters if c not in nominated][:step]
        if fresh:
            nominated += fresh
            for c in fresh:
                first[c] = t
            rounds.append(Round(t, tuple(nominated)))
        window_end = t + ROUND_TIMEOUT_S if [c for c in clusters if c not in nominated] else horizon_s
        best: tuple[int, int, str] | None = None
        for order, c in enumerate(nominated):
            delay = admits_at(c)
            if delay is None:
                continue
            when = first[c] + delay
            if when <= window_end and (best is None or (when, order) < best[:2]):
                best = (when, order, c)
        if best is not None:
            return Dispatch(best[2], best[0], tuple(rounds))
        if not fresh and window_end >= horizon_s:
            break
        t = window_end
    return Dispatch(None, None, tuple(rounds))
