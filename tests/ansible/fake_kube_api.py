"""A fake Kubernetes API server for the calls cordon, drain, uncordon and the advertise wait make.

kubernetes.core 6.2.0 (k8s_drain, k8s_info, k8s_taint) talks to it through the `kubernetes` Python library
exactly as to a real server: `get_api_client` builds a DynamicClient, whose discovery reads
GET /version, /api, /apis and /api/v1; k8s_drain then calls CoreV1Api read_node, patch_node,
list_pod_for_all_namespaces(field_selector=spec.nodeName=<node>), create_namespaced_pod_eviction
and read_namespaced_pod (plugins/modules/k8s_drain.py, K8sDrainAnsible); k8s_info reads or lists
Nodes (a labelSelector of existence and equality requirements); k8s_taint reads the Node and patches
spec.taints (plugins/modules/k8s_taint.py, K8sTaintAnsible).

Responses follow the Kubernetes API reference (kubernetes.io/docs/reference/kubernetes-api/):
Node (cluster-resources/node-v1: get, patch with application/strategic-merge-patch+json), Pod
(workload-resources/pod-v1: list across namespaces with fieldSelector, get, "create eviction of a
Pod" POST /api/v1/namespaces/{ns}/pods/{name}/eviction -> 201 Created), errors as a v1 Status with
the HTTP code and reason (404 NotFound; 429 TooManyRequests when a PodDisruptionBudget forbids the
eviction, concepts/scheduling-eviction/api-eviction "the API server responds with 429 Too Many
Requests"). An evicted pod is gone at once (its grace period is not simulated). Every request is
recorded, in order, for the tests to read.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RESOURCES = [
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node", "verbs": ["get", "list", "patch", "update", "watch"]},
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": ["delete", "get", "list", "patch", "watch"]},
    {"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]},
]


def node(name: str, gpus: int) -> dict[str, Any]:
    """A Ready Node whose device plugin advertises `gpus` nvidia.com/gpu."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}, "resourceVersion": "1"},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "96", "memory": "1000Gi", "nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    namespace: str, name: str, node_name: str, owner_kind: str | None = "ReplicaSet", pdb_blocks: bool = False, never_terminates: bool = False
) -> dict[str, Any]:
    """A running Pod on `node_name`, owned by `owner_kind` (None: a bare pod); `never_terminates`: it
    outlives its eviction (a process that ignores SIGTERM within a grace period longer than the wait)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", "annotations": {}}
    if owner_kind:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner_kind, "name": f"{name}-owner", "uid": f"owner-{name}", "controller": True}]
    if pdb_blocks:
        meta["annotations"]["fake-kube-api/pdb-blocks-eviction"] = "true"
    if never_terminates:
        meta["annotations"]["fake-kube-api/never-terminates"] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
        "status": {"phase": "Running"},
    }


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    """A v1 Status, the body of every API error."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


@dataclass
class Cluster:
    """The objects the fake serves, and every request it answered."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Called under the lock after each request has changed the objects (the CLI writes its log).
    after_request: Callable[[], None] | None = None

    def calls(self) -> list[str]:
        """ "METHOD path" of every request after discovery, in order."""
        return [f"{r['method']} {r['path']}" for r in self.requests if not re.match(r"^/(version|api|apis|api/v1)$", r["path"])]


def _decoded_taint(taint: dict[str, Any]) -> dict[str, Any]:
    """A Taint as the API server decodes it: its known fields (key, value, effect, timeAdded); unknown
    fields (the Python client's snake_case `time_added`) and nulls are dropped."""
    return {k: v for k, v in taint.items() if k in ("key", "value", "effect", "timeAdded") and v is not None}


def _selects(query: str, labels: dict[str, str]) -> bool:
    """A labelSelector of `key`, `key=value` or `!key` requirements, comma-separated (equality and existence only)."""
    found = re.search(r"(?:^|&)labelSelector=([^&]*)", query)
    if not found:
        return True
    for req in filter(None, urllib.parse.unquote(found.group(1)).split(",")):
        key, _, value = req.partition("=")
        if key.startswith("!"):
            if key[1:] in labels:
                return False
        elif key not in labels or (value and labels[key] != value.lstrip("=")):
            return False
    return True


def _handler(cluster: Cluster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method: str) -> None:
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null") if length else None
            with cluster.lock:
                cluster.requests.append(
                    {"method": method, "path": path, "query": query, "content_type": self.headers.get("Content-Type"), "body": body}
                )
                code, out = self._route(method, path, query, body)
                if cluster.after_request:
                    cluster.after_request()
            self._send(code, out)

        def _route(self, method: str, path: str, query: str, body: Any) -> tuple[int, dict[str, Any]]:
            if path == "/version":
                return 200, {"major": "1", "minor": "35", "gitVersion": "v1.35.3", "platform": "linux/amd64"}
            if path == "/api":
                return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
            if path == "/apis":
                return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
            if path == "/api/v1":
                return 200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": RESOURCES}
            if path == "/api/v1/nodes" and method == "GET":
                items = [n for n in cluster.nodes.values() if _selects(query, n["metadata"].get("labels") or {})]
                return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items}
            m = re.fullmatch(r"/api/v1/nodes/([^/]+)", path)
            if m:
                found = cluster.nodes.get(m.group(1))
                if found is None:
                    return 404, status(404, "NotFound", f'nodes "{m.group(1)}" not found')
                if method == "PATCH":
                    # strategic-merge and merge patch agree on a scalar field (spec.unschedulable) and on
                    # spec.taints, a list without patch strategy: the patch's list replaces the node's.
                    patch = dict((body or {}).get("spec", {}))
                    if "taints" in patch:
                        patch["taints"] = [_decoded_taint(t) for t in patch["taints"] or []]
                        if not patch["taints"]:
                            del patch["taints"]
                            found["spec"].pop("taints", None)  # omitempty
                    found["spec"].update(patch)
                    if found["spec"].get("unschedulable") is False:
                        del found["spec"]["unschedulable"]  # omitempty: false is not serialised
                return 200, found
            if path == "/api/v1/pods" and method == "GET":
                selector = dict(p.split("=", 1) for p in re.findall(r"fieldSelector=([^&]+)", query.replace("%3D", "=")))
                on = selector.get("spec.nodeName")
                items = [p for p in cluster.pods if on is None or p["spec"]["nodeName"] == on]
                return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
            m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)(/eviction)?", path)
            if m:
                ns, name, eviction = m.groups()
                found_pod = next((p for p in cluster.pods if p["metadata"]["namespace"] == ns and p["metadata"]["name"] == name), None)
                if found_pod is None:
                    return 404, status(404, "NotFound", f'pods "{name}" not found')
                if eviction and method == "POST":
                    if found_pod["metadata"].get("annotations", {}).get("fake-kube-api/pdb-blocks-eviction"):
                        return 429, status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
                    if not found_pod["metadata"].get("annotations", {}).get("fake-kube-api/never-terminates"):
                        cluster.pods.remove(found_pod)
                    return 201, {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
                if method == "GET":
                    return 200, found_pod
            return 404, status(404, "NotFound", f"the server could not find the requested resource ({method} {path})")

        def do_GET(self) -> None:
            self._handle("GET")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

        def do_POST(self) -> None:
            self._handle("POST")

    return Handler


class FakeKubeApi:
    """The fake API server on 127.0.0.1, in a thread, with a kubeconfig that points at it."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(cluster))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, path: Path) -> Path:
        """Write a kubeconfig for this server (a bearer token; the fake checks none) to `path`."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path.write_text(json.dumps(config))
        return path

    def __enter__(self) -> FakeKubeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        """Serve in this thread until the process is killed (the CLI)."""
        self._server.serve_forever()

    def snapshot(self) -> dict[str, Any]:
        """A copy of the nodes and pods as they are now."""
        with self.cluster.lock:
            return copy.deepcopy({"nodes": self.cluster.nodes, "pods": self.cluster.pods})


def main(argv: list[str] | None = None) -> None:
    """Serve a cluster from a JSON file until killed (the driver_upgrade Molecule scenario starts it).

    --state: {"nodes": {name: Node}, "pods": [Pod]}; --log: rewritten after every request with
    {"requests": [...], "nodes": ..., "pods": ...}; --kubeconfig: written once the server listens.
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    args = parser.parse_args(argv)
    state = json.loads(args.state.read_text())
    cluster = Cluster(nodes=state["nodes"], pods=state["pods"])
    api = FakeKubeApi(cluster)

    def record() -> None:
        args.log.write_text(json.dumps({"requests": cluster.requests, "nodes": cluster.nodes, "pods": cluster.pods}))

    cluster.after_request = record
    api.kubeconfig(args.kubeconfig)
    api.serve_forever()


if __name__ == "__main__":
    main()
