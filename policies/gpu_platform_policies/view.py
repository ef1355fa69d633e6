"""Shared readings of the resource view: GPU pools, Kubernetes objects, Helm values, images.

Every helper reads only type tokens and wire inputs, so it behaves the same on the offline plan
and under CrossGuard.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform.behaviour.wiring import UNKNOWN
from gpu_platform.catalog import Catalog
from gpu_platform.engine import auto_name
from gpu_platform.pools import (
    ANNOTATION_TAINTS,
    DRA_GPU_RESOURCE,
    GPU_RESOURCE,
    LABEL_ALLOCATION,
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_GPU_MODEL,
    LABEL_MIG_CONFIG,
    LABEL_POOL,
    LABEL_SHARING,
    LABEL_SPOT_FALLBACK,
    LABEL_TIER,
    LABEL_WORKLOAD,
    SHARED_GPU_RESOURCE,
)
from gpu_platform_policies.model import PlanView, Resource

# Pulumi's auto-name for a resource the program does not name: the logical name, a dash, 7 random hex
# digits (pulumi-terraform-bridge tfbridge.AutoName -> resource.NewUniqueHex(name + "-", 7, maxlen)).
_AUTO_SUFFIX = r"-[0-9a-f]{7}"

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = "aws:ec2/subnet:Subnet"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_ADDON = "aws:eks/addon:Addon"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
CUSTOM_RESOURCE = "kubernetes:apiextensions.k8s.io:CustomResource"
LABEL_TENANT = "gpu-platform.io/tenant"
# The platform labels its own namespaces (operator, Kueue, Volcano, monitoring, wherever the stack
# puts them) with this; tenants' namespaces carry LABEL_TENANT.
LABEL_SYSTEM = "gpu-platform.io/system"
# The namespaces Kubernetes itself creates (Kubernetes docs, "Namespaces" > "Initial namespaces").
KUBERNETES_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
TAINT_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
MIG_OFF = "all-disabled"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def is_provider_name_of(value: Any, resource: Resource) -> bool:
    """Whether `value` is the name the provider gave `resource`.

    That is its given `name` input, its logical name (the offline engine's ARNs end in it), the offline
    engine's auto-name (engine.auto_name), or in a real preview a Pulumi auto-name of its logical name.
    """
    if not isinstance(value, str) or value == UNKNOWN:
        return False
    known = (resource.inputs.get("name"), resource.name, auto_name(resource.type, resource.name))
    return value in known or re.fullmatch(re.escape(resource.name) + _AUTO_SUFFIX, value) is not None


def get(node: Any, *path: str, default: Any = None) -> Any:
    """`node[path[0]][path[1]]...`, or `default` where any step is missing or not a mapping."""
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


def truthy(value: Any) -> bool:
    """Wire booleans arrive as bools or as the strings "true"/"false"."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def configuration_values(addon: Resource) -> dict[str, Any]:
    """An EKS add-on's `configurationValues` (a JSON string, botocore eks CreateAddonRequest) as data; {} when unreadable."""
    raw = addon.inputs.get("configurationValues")
    try:
        values = json.loads(raw) if isinstance(raw, str) else (raw or {})
    except ValueError:
        return {}
    return values if isinstance(values, dict) else {}


def launch_template_of(plan: PlanView, ng: Resource) -> Resource | None:
    """The launch template a node group runs: followed by its `launchTemplate` reference, else its sibling under the pool."""
    identity = plan.wiring.target(ng, "launchTemplate")
    lt = plan.wiring.resource(identity, LAUNCH_TEMPLATE)
    return lt or next((r for r in plan.of_type(LAUNCH_TEMPLATE) if ng.parent and r.parent == ng.parent), None)


def instance_types_of(plan: PlanView, ng: Resource) -> list[str]:
    """A node group's instance types; a Capacity Block's lives in its launch template."""
    types = [str(t) for t in ng.inputs.get("instanceTypes") or []]
    if types:
        return types
    lt = launch_template_of(plan, ng)
    return [str(lt.inputs["instanceType"])] if lt is not None and lt.inputs.get("instanceType") else []


# --- GPU pools -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """A GPU pool as the plan shows it: an EKS node group, or the node patches of one on-prem pool."""

    name: str
    resource: str
    platform: str  # "eks" or "onprem"
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]
    gpu_model: str | None
    capacity_type: str  # EKS capacityType (SPOT, ON_DEMAND, CAPACITY_BLOCK) or "ON_DEMAND" on-prem
    nodes: int
    gpus_per_node: int | None
    min_nodes: int = 0  # nodes the pool never scales below (on-prem: all of them)

    @property
    def workload_class(self) -> str | None:
        """The `gpu-platform.io/workload-class` label."""
        return self.labels.get(LABEL_WORKLOAD)

    @property
    def tier(self) -> str:
        """Capacity tier: the label, else what the EKS capacity type implies."""
        label = self.labels.get(LABEL_TIER)
        if label:
            return label
        return {"SPOT": "spot", "CAPACITY_BLOCK": "capacity-block"}.get(self.capacity_type, "on-demand")

    @property
    def spot(self) -> bool:
        """Interruptible capacity, by what AWS is asked for or what the pool claims."""
        return self.capacity_type == "SPOT" or self.tier == "spot"

    @property
    def spot_fallback(self) -> bool:
        """A Spot pool's own on-demand fallback group (gpu_platform.pools.fallback_pool): not Spot, yet labelled `spot-fallback`.

        It holds Spot-admitted work only while Spot cannot launch, so it is no class's floor.
        """
        return not self.spot and LABEL_SPOT_FALLBACK in self.labels

    @property
    def sharing(self) -> str:
        """Sharing mode label (none, time-slicing, mps, mig)."""
        return self.labels.get(LABEL_SHARING, "none")

    @property
    def mig_config(self) -> str | None:
        """The mig-manager layout the pool selects, or None when MIG is off or unset."""
        value = self.labels.get(LABEL_MIG_CONFIG)
        return None if value in (None, MIG_OFF) else value

    @property
    def device_plugin_config(self) -> str:
        """The device-plugin config key the pool selects."""
        return self.labels.get(LABEL_DEVICE_PLUGIN_CONFIG, "default")

    @property
    def replicas(self) -> int | None:
        """Time-slicing/MPS replicas, read from the selected config name (`time-slicing-4`)."""
        m = re.fullmatch(r"(?:time-slicing|mps)-(\d+)", self.device_plugin_config)
        return int(m.group(1)) if m else None

    @property
    def max_gpus(self) -> int | None:
        """Physical GPUs at the pool's maximum size (None when the GPU count is unknown)."""
        return None if self.gpus_per_node is None else self.nodes * self.gpus_per_node

    def resources_per_gpu(self, catalog: Catalog) -> dict[str, int] | None:
        """Extended resources one GPU offers under the pool's sharing mode (None when unknown); a DRA pool's claimed GPUs."""
        if self.labels.get(LABEL_ALLOCATION) == "dra":
            return {DRA_GPU_RESOURCE: 1}
        if self.sharing in ("time-slicing", "mps"):
            return {SHARED_GPU_RESOURCE: self.replicas} if self.replicas else None
        if self.sharing == "mig":
            gpu = catalog.gpus.get(self.gpu_model or "")
            layout = gpu.mig_configs.get(self.mig_config or "") if gpu else None
            return None if layout is None else {f"nvidia.com/mig-{p}": n for p, n in layout.items()}
        return {GPU_RESOURCE: 1}

    def capacity(self, catalog: Catalog) -> dict[str, int] | None:
        """Every extended resource the pool offers at its maximum size (None when unknown)."""
        per_gpu = self.resources_per_gpu(catalog)
        if per_gpu is None or self.max_gpus is None:
            return None
        return {name: n * self.max_gpus for name, n in per_gpu.items()}


def parse_taints(raw: Any) -> tuple[tuple[str, str, str], ...]:
    """(key, value, effect) of each taint, effects as Kubernetes writes them on a node (EKS NO_SCHEDULE -> NoSchedule)."""
    out = []
    for t in raw or []:
        if isinstance(t, Mapping):
            effect = str(t.get("effect", ""))
            out.append((str(t.get("key", "")), str(t.get("value", "")), TAINT_EFFECTS.get(effect, effect)))
    return tuple(out)


def _declared_taints(r: Resource) -> tuple[tuple[str, str, str], ...]:
    """On-prem taints: the node patch declares them in its annotation (the Ansible role k8s_node_taints merges them in)."""
    raw = (get(r.inputs, "metadata", "annotations", default={}) or {}).get(ANNOTATION_TAINTS)
    try:
        return parse_taints(json.loads(raw)) if isinstance(raw, str) else ()
    except ValueError:
        return ()


def is_gpu_node_group(r: Resource, catalog: Catalog) -> bool:
    """A node group is a GPU pool when its AMI, its labels or its instance types say so."""
    if r.type != NODE_GROUP:
        return False
    types = r.inputs.get("instanceTypes") or []
    return (
        "NVIDIA" in str(r.inputs.get("amiType", ""))
        or LABEL_GPU_MODEL in (r.inputs.get("labels") or {})
        or any(t in catalog.instance_types for t in types)
    )


def pool_of(r: Resource, catalog: Catalog) -> Pool | None:
    """The GPU pool one node group or one node patch belongs to (None for other resources)."""
    if r.type == NODE_GROUP and is_gpu_node_group(r, catalog):
        labels = dict(r.inputs.get("labels") or {})
        types = [t for t in r.inputs.get("instanceTypes") or [] if t in catalog.instance_types]
        model = labels.get(LABEL_GPU_MODEL) or (catalog.instance(types[0]).gpu.name if types else None)
        return Pool(
            name=labels.get(LABEL_POOL, r.name),
            resource=r.name,
            platform="eks",
            labels=labels,
            taints=parse_taints(r.inputs.get("taints")),
            gpu_model=model,
            capacity_type=str(r.inputs.get("capacityType", "ON_DEMAND")),
            nodes=int(get(r.inputs, "scalingConfig", "maxSize", default=0) or 0),
            gpus_per_node=catalog.instance(types[0]).gpus if types else None,
            min_nodes=int(get(r.inputs, "scalingConfig", "minSize", default=0) or 0),
        )
    if r.type == NODE_PATCH:
        labels = dict(get(r.inputs, "metadata", "labels", default={}) or {})
        if LABEL_GPU_MODEL not in labels and LABEL_POOL not in labels:
            return None
        count = labels.get("gpu-platform.io/gpus-per-node")
        return Pool(
            name=labels.get(LABEL_POOL, r.name),
            resource=r.name,
            platform="onprem",
            labels=labels,
            taints=_declared_taints(r),
            gpu_model=labels.get(LABEL_GPU_MODEL),
            capacity_type="ON_DEMAND",
            nodes=1,
            gpus_per_node=int(count) if count and str(count).isdigit() else None,
            min_nodes=1,
        )
    return None


def pools(plan: PlanView, catalog: Catalog) -> list[Pool]:
    """Every GPU pool of the plan; on-prem node patches of one pool are merged into one entry."""
    out: list[Pool] = []
    onprem: dict[str, list[Pool]] = {}
    for r in plan.of_type(NODE_GROUP, NODE_PATCH):
        p = pool_of(r, catalog)
        if p is None:
            continue
        if p.platform == "eks":
            out.append(p)
        else:
            onprem.setdefault(p.name, []).append(p)
    for name, members in onprem.items():
        first = members[0]
        parent = next((r.parent for r in plan.of_type(NODE_PATCH) if r.name == first.resource and r.parent), None)
        counts = {m.gpus_per_node for m in members}
        out.append(
            Pool(
                name=name,
                resource=parent or first.resource,
                platform="onprem",
                labels=first.labels,
                taints=first.taints,
                gpu_model=first.gpu_model,
                capacity_type="ON_DEMAND",
                nodes=len(members),
                gpus_per_node=counts.pop() if len(counts) == 1 else None,
                min_nodes=len(members),
            )
        )
    return out


# --- Kubernetes objects --------------------------------------------------------------------------


def kind_of(r: Resource) -> str | None:
    """The Kubernetes kind of a resource (from its type token, or its inputs for custom resources)."""
    if not r.type.startswith("kubernetes:") or r.type.startswith("kubernetes:helm.sh/"):
        return None
    if r.type == CUSTOM_RESOURCE or r.type.endswith(":CustomResource"):
        kind = r.inputs.get("kind")
        return str(kind) if kind else None
    return r.type.rsplit(":", 1)[-1]


def api_group(r: Resource) -> str:
    """The API group of a Kubernetes resource (`kueue.x-k8s.io`, `monitoring.coreos.com`, "" for core)."""
    api_version = r.inputs.get("apiVersion")
    if api_version:
        return str(api_version).rsplit("/", 1)[0] if "/" in str(api_version) else ""
    middle = r.type.split(":")[1] if r.type.count(":") >= 2 else ""
    group = middle.rsplit("/", 1)[0]
    return "" if group == "core" else group


def objects(plan: PlanView, kind: str, group: str | None = None) -> list[Resource]:
    """Kubernetes objects of one kind (and API group, when given)."""
    return [r for r in plan if kind_of(r) == kind and (group is None or api_group(r) == group)]


def cluster_role_rules(plan: PlanView) -> dict[str, list[Any]]:
    """Each ClusterRole's rules by its name, as a roleRef names it."""
    return {object_name(r): get(r.inputs, "rules", default=[]) or [] for r in objects(plan, "ClusterRole", "rbac.authorization.k8s.io")}


# Kueue apis/kueue/v1beta2/multikueue_types.go MultiKueueControllerName.
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


def multikueue_checks(plan: PlanView) -> set[str]:
    """Names of the AdmissionChecks MultiKueue runs (controllerName `kueue.x-k8s.io/multikueue`)."""
    return {
        object_name(r) for r in objects(plan, "AdmissionCheck", "kueue.x-k8s.io") if get(r.inputs, "spec", "controllerName") == MULTIKUEUE_CONTROLLER
    }


def dispatched(plan: PlanView, cq: Resource) -> bool:
    """A ClusterQueue whose workloads MultiKueue dispatches to workers: its quota is backed by theirs, not by this cluster's nodes.

    Kueue v1beta2 ClusterQueue `admissionChecksStrategy.admissionChecks[].name` (the plain `admissionChecks` list is gone
    in v1beta2); the check is MultiKueue's when its AdmissionCheck's controllerName is MULTIKUEUE_CONTROLLER.
    """
    named = get(cq.inputs, "spec", "admissionChecksStrategy", "admissionChecks", default=[]) or []
    names = {c.get("name") for c in named if isinstance(c, Mapping)}
    return bool(names & multikueue_checks(plan))


def queue_quotas(cq: Resource) -> Iterator[tuple[str, str, Any]]:
    """(flavor, resource name, nominalQuota) of every entry of a ClusterQueue's resourceGroups, as written."""
    for group in get(cq.inputs, "spec", "resourceGroups", default=[]) or []:
        for flavor in group.get("flavors", []) if isinstance(group, Mapping) else []:
            for res in flavor.get("resources", []):
                yield str(flavor.get("name")), str(res.get("name")), res.get("nominalQuota")


def metadata(r: Resource) -> Mapping[str, Any]:
    """The object's metadata (empty when absent)."""
    meta = r.inputs.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def object_name(r: Resource) -> str:
    """metadata.name, else the logical name."""
    return str(metadata(r).get("name") or r.name)


def namespace_of(r: Resource) -> str | None:
    """metadata.namespace (Helm releases: their `namespace` input)."""
    if r.type.startswith("kubernetes:helm.sh/"):
        ns = r.inputs.get("namespace")
        return str(ns) if ns else None
    ns = metadata(r).get("namespace")
    return str(ns) if ns else None


def tenant_namespaces(plan: PlanView) -> dict[str, str]:
    """Tenant namespace name -> resource name, judged by the platform's own namespace labels.

    Labelled as a tenant's: a tenant. Labelled `gpu-platform.io/system: "true"` (or one of Kubernetes'
    initial namespaces): not. Anything else the stack creates counts as a tenant's, so leaving a label
    off never exempts a namespace from the isolation rules.
    """
    out: dict[str, str] = {}
    for r in objects(plan, "Namespace", ""):
        labels = metadata(r).get("labels") or {}
        name = object_name(r)
        if LABEL_TENANT in labels or not (truthy(labels.get(LABEL_SYSTEM)) or name in KUBERNETES_NAMESPACES):
            out[name] = r.name
    return out


def helm_releases(plan: PlanView, chart: str) -> list[Resource]:
    """Helm releases (v3 Release or v4 Chart) of one chart name."""
    return [r for r in plan.of_type(HELM_RELEASE, HELM_CHART) if chart_name(r) == chart]


def chart_name(r: Resource) -> str:
    """The chart a Helm release installs (its last path segment, for OCI or repo/chart forms)."""
    return str(r.inputs.get("chart", "")).rstrip("/").rsplit("/", 1)[-1]


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, key, value) of every mapping entry, depth first, through lists too."""
    if isinstance(node, Mapping):
        for k, v in node.items():
            here = f"{path}.{k}" if path else str(k)
            yield here, k, v
            yield from walk(v, here)
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}[{i}]")


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity as a number (plain integers and decimal strings; None otherwise)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    return None
