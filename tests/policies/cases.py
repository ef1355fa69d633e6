"""Every rule's compliant and violating cases, as data the rule tests, the meta-test and the CrossGuard tests share.

A case starts from a repository stack's real offline plan, changes it the way a bad change would,
and says which rule must (or must not) fire and on which resource.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.demand import demand_configmap
from gpu_platform.spec.models import ClassDemand, PlatformSpec
from gpu_platform.versions import Lockfile, load_lockfile
from gpu_platform_policies import THRESHOLD_DEFAULTS, Context, Resource, Violation, evaluate
from tests.conftest import plan_for, spec_for

REPO = Path(__file__).resolve().parents[2]

Edit = Callable[[list[Resource]], list[Resource]]


@dataclass(frozen=True)
class Case:
    """One rule's expectation on one (possibly broken) copy of a stack's plan."""

    rule: str
    id: str
    stack: str
    edits: tuple[Edit, ...] = ()
    fires_on: str | None = None  # the resource the violation must name; None: the rule must stay silent
    message: str = ""  # a fragment the violation's message must contain
    lock: Callable[[Lockfile], Lockfile] | None = None
    stack_lock: Callable[[Lockfile], Lockfile] | None = None  # the stack's `versions` override, laid over the lockfile
    repo: Callable[[Path], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    key: str | None = None  # the stack key path the violation must name, where the case pins it


def resources(stack: str) -> list[Resource]:
    """A deep copy of a stack's offline plan as plain resources."""
    return [Resource(r.type, r.name, r.parent, copy.deepcopy(r.inputs), r.source) for r in plan_for(stack).resources]


def context(stack: str, lock: Lockfile | None = None, root: Path | None = None, stack_lock: Lockfile | None = None) -> Context:
    """The context `gpu-platform check` would build for a repository stack."""
    spec: PlatformSpec = spec_for(stack)
    return Context(
        lock=lock or load_lockfile(),
        catalog=load_catalog(),
        environment=spec.environment,
        thresholds={**THRESHOLD_DEFAULTS, **spec.policy.thresholds},
        root=root,
        stack_lock=stack_lock or lock or spec.lock,
    )


def run_case(case: Case, tmp: Path, enforcement: dict[str, Any] | None = None) -> list[Violation]:
    """The case's violations of its own rule, through the same evaluate() the CLI uses."""
    res = resources(case.stack)
    for edit in case.edits:
        res = edit(res)
    lock = case.lock(load_lockfile()) if case.lock else None
    root = None
    if case.repo is not None:
        root = tmp / "repo"
        case.repo(root)
    stack_lock = case.stack_lock(load_lockfile()) if case.stack_lock else None
    ctx = context(case.stack, lock, root, stack_lock)
    return [v for v in evaluate(res, ctx, enforcement, repository=case.repo is not None) if v.policy == case.rule]


def assert_case(case: Case, violations: list[Violation]) -> None:
    """The behaviour a user would notice: the rule names the resource and says why, or stays silent."""
    if case.fires_on is None:
        assert violations == [], f"{case.rule} fired on a compliant stack: {violations}"
        return
    hits = [v for v in violations if v.resource == case.fires_on and case.message in v.message]
    assert hits, f"{case.rule} did not report {case.fires_on!r} with {case.message!r}; got {violations}"
    if case.key is not None:
        assert any(v.key == case.key for v in hits), f"{case.rule} did not point at {case.key}; got {[v.key for v in hits]}"


# --- edits ---------------------------------------------------------------------------------------


def _walk_to(node: Any, path: str, create: bool) -> tuple[Any, Any]:
    """(container, last key) for a dot path whose keys may themselves contain dots (label keys)."""
    parts = path.split(".")
    while True:
        if isinstance(node, list):
            key: Any = int(parts[0])
            rest = parts[1:]
        else:
            # the longest prefix that is an existing key, else one segment (or all that is left, at the end)
            cut = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in node), None)
            if cut is None:  # a new key: a label key (with "/") takes the rest of the path whole
                cut = len(parts) if any("/" in p for p in parts) else 1
            key, rest = ".".join(parts[:cut]), parts[cut:]
        if not rest:
            return node, key
        if not isinstance(node, list) and key not in node and create:
            node[key] = {}
        node, parts = node[key], rest


def set_in(name: str, path: str, value: Any) -> Edit:
    """Set inputs[path] of the named resource (dot path; integers index lists; label keys may contain dots)."""

    def edit(res: list[Resource]) -> list[Resource]:
        container, key = _walk_to(next(r for r in res if r.name == name).inputs, path, create=True)
        container[key] = value
        return res

    return edit


def drop_in(name: str, path: str) -> Edit:
    """Delete inputs[path] of the named resource."""

    def edit(res: list[Resource]) -> list[Resource]:
        container, key = _walk_to(next(r for r in res if r.name == name).inputs, path, create=False)
        del container[key]
        return res

    return edit


def drop(name: str) -> Edit:
    """Remove a resource from the plan."""

    def edit(res: list[Resource]) -> list[Resource]:
        assert any(r.name == name for r in res), name
        return [r for r in res if r.name != name]

    return edit


def add(resource: Resource) -> Edit:
    """Add a resource to the plan."""
    return lambda res: [*res, resource]


def edit_alerts(remove: str) -> Edit:
    """Drop one alert from the platform's PrometheusRule."""

    def edit(res: list[Resource]) -> list[Resource]:
        rule = next(r for r in res if r.name == "monitoring-gpu-rules")
        for group in rule.inputs["spec"]["groups"]:
            group["rules"] = [x for x in group["rules"] if x.get("alert") != remove]
        return res

    return edit


def privileged_deployment(namespace: str) -> Resource:
    """A Deployment with one privileged container, built inside the tenant's component (or the platform's), as the program would."""
    return Resource(
        "kubernetes:apps/v1:Deployment",
        f"debug-{namespace}",
        "platform" if namespace in ("kube-system", "gpu-operator") else f"tenant-{namespace}",
        {
            "metadata": {"name": "debug", "namespace": namespace},
            "spec": {"template": {"spec": {"containers": [{"name": "sh", "image": "busybox:1.36", "securityContext": {"privileged": True}}]}}},
        },
    )


def write_inventory(group_vars: dict[str, Any]) -> Callable[[Path], None]:
    """A repository copy whose prod inventory has these group_vars/all values."""

    def make(root: Path) -> None:
        import yaml

        gv = root / "ansible" / "inventories" / "prod" / "group_vars"
        gv.mkdir(parents=True)
        (gv / "all.yml").write_text(yaml.safe_dump(group_vars))
        (root / "ansible" / "inventories" / "prod" / "hosts.yml").write_text("all:\n  hosts:\n    gpu-01: {}\n")

    return make


def support_ended(component: str, key: str, ends: str) -> Callable[[Lockfile], Lockfile]:
    """A lockfile copy whose recorded end of support for `component.key` is `ends`."""

    def make(lock: Lockfile) -> Lockfile:
        support = {c: dict(entries) for c, entries in lock.support.items()}
        support[component][key] = support[component][key].model_copy(update={"ends": date.fromisoformat(ends)})
        return lock.model_copy(update={"support": support})

    return make


def copy_node_os_offers(edit: tuple[str, str, str] | None = None) -> Callable[[Path], None]:
    """A repository copy with the real Packer template and role vars, one of them edited (path, old, new)."""

    def make(root: Path) -> None:
        sources = [Path("ansible/packer/gpu-node.pkr.hcl"), *sorted(Path("ansible/roles").glob("*/vars/main.yml"))]
        for rel in sources:
            text = (REPO / rel).read_text()
            if edit and rel.as_posix() == edit[0]:
                assert edit[1] in text, edit
                text = text.replace(edit[1], edit[2])
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)

    return make


def kubelet_cgroup_v2_from(minor: str) -> Callable[[Lockfile], Lockfile]:
    """A lockfile copy whose kubelet refuses cgroup v1 from `minor` on."""

    def make(lock: Lockfile) -> Lockfile:
        compat = lock.compatibility.model_copy(update={"kubelet": {"cgroup_v2_from": minor}})
        return lock.model_copy(update={"compatibility": compat})

    return make


def write_ini_inventory(text: str, name: str = "hosts.ini") -> Callable[[Path], None]:
    """A repository copy whose prod inventory is an INI file with this text."""

    def make(root: Path) -> None:
        inv = root / "ansible" / "inventories" / "prod"
        inv.mkdir(parents=True)
        (inv / name).write_text(text)

    return make


INI_DRIVER_PIN = "[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11\n\n[gpu_nodes:vars]\nnvidia_driver_version=535.104.05\n"


def public_cidrs(*cidrs: str) -> tuple[Edit, ...]:
    """The cluster's API endpoint made public to these CIDRs."""
    return (set_in("cluster-eks", "vpcConfig.endpointPublicAccess", True), set_in("cluster-eks", "vpcConfig.publicAccessCidrs", list(cidrs)))


def lock_edit(**changes: Any) -> Callable[[Lockfile], Lockfile]:
    """A lockfile copy with nested fields replaced (`eks__ami_driver_branch="535"`)."""

    def make(lock: Lockfile) -> Lockfile:
        for dotted, value in changes.items():
            section, key = dotted.split("__")
            lock = lock.model_copy(update={section: getattr(lock, section).model_copy(update={key: value})})
        return lock

    return make


def declare_demand(stack: str, *entries: tuple[str, float, str, bool]) -> Edit:
    """Add the ConfigMap the program emits for a stack declaring `demand` (class, p95, sla, interruptible)."""
    demand = tuple(ClassDemand.model_validate({"workloadClass": c, "p95": p, "sla": sla, "interruptible": i}) for c, p, sla, i in entries)
    manifest = demand_configmap(spec_for(stack).model_copy(update={"demand": demand}))
    assert manifest is not None
    return add(Resource("kubernetes:core/v1:ConfigMap", "platform-capacity-demand", "platform", manifest))


LT = "pool-train-h100-reserved-lt"
NG = "pool-train-h100-reserved-ng"
SPOT_NG = "pool-infer-l4-spot-ng"
L4_OD_NG = "pool-infer-l4-ondemand-ng"
BLOCK_START = "gpu-platform:capacity-block-start"
BLOCK_END = "gpu-platform:capacity-block-end"
BLOCK_NG = "pool-train-h100-block-ng"
SG_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
A100_NG = "pool-infer-a100-mig-ng"
LABELS = "labels"
ONPREM_PATCH = "pool-hgx-a100-mig-dgx-a100-01"
ONPREM_H100 = "pool-hgx-h100-train-dgx-h100-01"

CASES: list[Case] = [
    # security
    Case("imdsv2-required", "prod-compliant", "prod"),
    Case("imdsv2-required", "optional-tokens", "prod", (set_in(LT, "metadataOptions.httpTokens", "optional"),), LT, "httpTokens"),
    Case("imdsv2-required", "hop-limit-2", "prod", (set_in(LT, "metadataOptions.httpPutResponseHopLimit", 2),), LT, "HopLimit"),
    Case("ebs-encrypted", "prod-compliant", "prod"),
    Case("ebs-encrypted", "unencrypted-root", "prod", (set_in(LT, "blockDeviceMappings.0.ebs.encrypted", "false"),), LT, "not encrypted"),
    Case("eks-endpoint-restricted", "prod-public-to-deployers-only", "prod"),
    Case("eks-endpoint-restricted", "prod-private", "prod", (set_in("cluster-eks", "vpcConfig.endpointPublicAccess", False),)),
    Case("eks-endpoint-restricted", "dev-public-with-cidrs", "dev"),
    Case(
        "eks-endpoint-restricted",
        "prod-public-office-ranges",
        "prod",
        public_cidrs("203.0.113.0/24", "198.51.100.0/24", "198.51.100.128/25"),
    ),
    Case(
        "eks-endpoint-restricted",
        "two-halves-are-the-internet",
        "prod",
        public_cidrs("0.0.0.0/1", "128.0.0.0/1"),
        "cluster-eks",
        "together cover 0.0.0.0/0, the whole internet",
    ),
    Case(
        "eks-endpoint-restricted",
        "broad-ranges-add-up",
        "prod",
        public_cidrs("3.0.0.0/8", "52.0.0.0/9", "203.0.113.0/24"),
        "cluster-eks",
        "together cover 25,166,080 addresses",
    ),
    Case(
        "eks-endpoint-restricted",
        "prod-public-open",
        "prod",
        (set_in("cluster-eks", "vpcConfig.endpointPublicAccess", True), drop_in("cluster-eks", "vpcConfig.publicAccessCidrs")),
        "cluster-eks",
        "open to the internet",
    ),
    Case(
        "eks-endpoint-restricted",
        "prod-public-world-cidr",
        "prod",
        (set_in("cluster-eks", "vpcConfig.endpointPublicAccess", True), set_in("cluster-eks", "vpcConfig.publicAccessCidrs", ["0.0.0.0/0"])),
        "cluster-eks",
        "0.0.0.0/0",
    ),
    Case(
        "documentation-cidr",
        "prod-placeholder-range",
        "prod",
        (),
        "cluster-eks",
        "vpcConfig.publicAccessCidrs[0] is 198.51.100.0/27 (gpu-platform:cluster.publicAccessCidrs), inside the documentation range 198.51.100.0/24",
        key="gpu-platform:cluster.publicAccessCidrs[0]",
    ),
    Case("documentation-cidr", "prod-real-egress", "prod", (set_in("cluster-eks", "vpcConfig.publicAccessCidrs", ["34.192.10.0/27"]),)),
    Case("documentation-cidr", "staging-is-not-production", "staging"),
    Case("eks-api-reachable", "prod-public-to-deployers", "prod"),
    Case("eks-api-reachable", "onprem-existing-cluster", "onprem"),
    Case(
        "eks-api-reachable",
        "private-only-in-new-vpc",
        "prod",
        (set_in("cluster-eks", "vpcConfig.endpointPublicAccess", False),),
        "cluster-eks",
        "private-only in a VPC this plan creates",
    ),
    Case(
        "eks-api-reachable",
        "private-only-existing-vpc-no-deployer-rule",
        "prod",
        (set_in("cluster-eks", "vpcConfig.endpointPublicAccess", False), drop("network-vpc")),
        "cluster-eks",
        "no security-group rule opens TCP 443",
    ),
    Case(
        "eks-api-reachable",
        "private-only-existing-vpc-deployer-rule",
        "prod",
        (
            set_in("cluster-eks", "vpcConfig.endpointPublicAccess", False),
            drop("network-vpc"),
            add(Resource(SG_INGRESS, "cluster-deployer-0", "cluster", {"cidrIpv4": "10.200.0.0/16", "ipProtocol": "tcp", "fromPort": 443})),
        ),
    ),
    Case("eks-secrets-encryption", "prod-compliant", "prod"),
    Case("eks-secrets-encryption", "no-encryption", "prod", (drop_in("cluster-eks", "encryptionConfig"),), "cluster-eks", "secrets"),
    Case("no-privileged-containers", "prod-compliant", "prod"),
    Case("no-privileged-containers", "system-namespace-allowed", "prod", (add(privileged_deployment("kube-system")),)),
    Case("no-privileged-containers", "tenant-privileged", "prod", (add(privileged_deployment("serving")),), "debug-serving", "privileged"),
    Case("tenant-default-deny", "prod-compliant", "prod"),
    Case("tenant-default-deny", "custom-monitoring-namespace", "prod", (set_in("monitoring-namespace", "metadata.name", "observability"),)),
    Case(
        "tenant-default-deny",
        "unlabelled-namespace-counts-as-tenant",
        "prod",
        (set_in("monitoring-namespace", "metadata.name", "observability"), set_in("monitoring-namespace", "metadata.labels", {})),
        "monitoring-namespace",
        "tenant namespace observability has no default-deny",
    ),
    Case("tenant-default-deny", "onprem-compliant", "onprem"),
    Case(
        "tenant-default-deny",
        "eks-enforcement-off",
        "prod",
        (drop_in("cluster-addon-vpc-cni", "configurationValues"),),
        "cluster-addon-vpc-cni",
        "not enforced",
    ),
    Case(
        "tenant-default-deny",
        "eks-enforcement-false",
        "prod",
        (set_in("cluster-addon-vpc-cni", "configurationValues", '{"enableNetworkPolicy": "false"}'),),
        "cluster-addon-vpc-cni",
        "not enforced",
    ),
    Case(
        "tenant-default-deny",
        "no-default-deny",
        "prod",
        (drop("tenant-serving-netpol-default-deny"),),
        "tenant-serving-namespace",
        "default-deny",
    ),
    Case(
        "tenant-default-deny",
        "deny-with-allow-rule",
        "prod",
        (set_in("tenant-serving-netpol-default-deny", "spec.ingress", [{"from": [{"podSelector": {}}]}]),),
        "tenant-serving-namespace",
        "serving",
    ),
    # GPU hygiene
    Case("gpu-pool-tainted", "prod-compliant", "prod"),
    Case("gpu-pool-tainted", "onprem-compliant", "onprem"),
    Case("gpu-pool-tainted", "untainted-node-group", "prod", (set_in(NG, "taints", []),), NG, "nvidia.com/gpu"),
    Case(
        "gpu-pool-tainted",
        "untainted-node-patch",
        "onprem",
        (set_in(ONPREM_H100, "metadata.annotations.gpu-platform.io/taints", "[]"),),
        ONPREM_H100,
        "nvidia.com/gpu",
    ),
    Case("node-patch-owns-only-its-keys", "onprem-compliant", "onprem"),
    Case(
        "node-patch-owns-only-its-keys",
        "taints-in-the-patch",
        "onprem",
        (set_in(ONPREM_H100, "spec.taints", [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),),
        ONPREM_H100,
        "owns spec.taints whole",
    ),
    Case("spot-pool-interruptible", "prod-compliant", "prod"),
    Case(
        "spot-pool-interruptible",
        "no-interruptible-taint",
        "prod",
        (set_in(SPOT_NG, "taints", [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]),),
        SPOT_NG,
        "taint",
    ),
    Case(
        "spot-pool-interruptible",
        "no-interruptible-label",
        "prod",
        (drop_in(SPOT_NG, "labels.gpu-platform.io/interruptible"),),
        SPOT_NG,
        "label",
    ),
    Case("training-whole-gpus", "prod-compliant", "prod"),
    Case(
        "training-whole-gpus",
        "time-sliced-training",
        "prod",
        (set_in(NG, "labels.gpu-platform.io/sharing", "time-slicing"), set_in(NG, "labels.nvidia.com/device-plugin.config", "time-slicing-4")),
        NG,
        "whole GPUs",
    ),
    Case("training-whole-gpus", "mig-training", "prod", (set_in(NG, "labels.nvidia.com/mig.config", "all-3g.40gb"),), NG, "MIG"),
    Case("mig-config-valid", "prod-compliant", "prod"),
    Case("mig-config-valid", "onprem-compliant", "onprem"),
    Case(
        "mig-config-valid",
        "a100-40gb-layout-on-a100-80gb",
        "prod",
        (set_in("pool-infer-a100-mig-ng", "labels.nvidia.com/mig.config", "all-1g.5gb"),),
        "pool-infer-a100-mig-ng",
        "does not exist for A100-80GB",
        key="gpu-platform:nodePools[3].sharing.migConfig",
    ),
    Case(
        "mig-config-valid",
        "mig-on-l4",
        "prod",
        (set_in("pool-infer-l4-ondemand-ng", "labels.nvidia.com/mig.config", "all-1g.10gb"),),
        "pool-infer-l4-ondemand-ng",
        "does not support MIG",
        key="gpu-platform:nodePools[5].sharing.mode",
    ),
    Case("sharing-modes-exclusive", "prod-compliant", "prod"),
    Case("sharing-modes-exclusive", "dev-compliant", "dev"),
    Case(
        "sharing-modes-exclusive",
        "time-slicing-on-mig-pool",
        "onprem",
        (set_in(ONPREM_PATCH, "metadata.labels.nvidia.com/device-plugin.config", "time-slicing-4"),),
        ONPREM_PATCH,
        "choose one",
    ),
    Case("sharing-replicas-bounds", "dev-compliant", "dev"),
    Case(
        "sharing-replicas-bounds",
        "too-many-replicas-label",
        "dev",
        (set_in("pool-dev-l4-spot-ng", "labels.nvidia.com/device-plugin.config", "time-slicing-32"),),
        "pool-dev-l4-spot-ng",
        "32",
    ),
    Case(
        "sharing-replicas-bounds",
        "one-replica-configmap",
        "dev",
        (
            set_in(
                "gpu-operator-sharing-config",
                "data.time-slicing-4",
                "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 1}\n",
            ),
        ),
        "gpu-operator-sharing-config",
        "replicas 1",
    ),
    # versions
    Case("charts-pinned", "prod-compliant", "prod"),
    Case(
        "charts-pinned",
        "chart-drift",
        "prod",
        (set_in("gpu-operator-release", "version", "v25.10.0"),),
        "gpu-operator-release",
        "differs from the lockfile",
    ),
    Case("charts-pinned", "unpinned-chart", "prod", (drop_in("kueue-release", "version"),), "kueue-release", "no version"),
    Case("charts-pinned", "range-chart", "prod", (set_in("kueue-release", "version", "^0.19"),), "kueue-release", "not an exact version"),
    Case("images-pinned", "prod-compliant", "prod"),
    Case(
        "images-pinned",
        "image-drift",
        "prod",
        (set_in("autoscaler-release", "values.image.tag", "v1.33.0"),),
        "autoscaler-release",
        "differs from the lockfile",
    ),
    Case(
        "images-pinned",
        "untagged-image",
        "prod",
        (
            add(privileged_deployment("kube-system")),
            set_in("debug-kube-system", "spec.template.spec.containers.0.image", "docker.io/library/busybox"),
        ),
        "debug-kube-system",
        "no tag",
    ),
    Case("no-floating-versions", "prod-compliant", "prod"),
    Case(
        "no-floating-versions",
        "latest-driver",
        "prod",
        (set_in("gpu-operator-release", "values.driver.version", "latest"),),
        "gpu-operator-release",
        "latest",
    ),
    Case(
        "no-floating-versions", "latest-image", "prod", (set_in("autoscaler-release", "values.image.tag", "latest"),), "autoscaler-release", "latest"
    ),
    Case("eks-versions-match-lockfile", "prod-compliant", "prod"),
    Case("eks-versions-match-lockfile", "ami-drift", "prod", (set_in(NG, "releaseVersion", "1.33.4-20250101"),), NG, "releaseVersion"),
    Case(
        "eks-versions-match-lockfile",
        "addon-drift",
        "prod",
        (set_in("cluster-addon-coredns", "addonVersion", "v1.11.0-eksbuild.1"),),
        "cluster-addon-coredns",
        "coredns",
    ),
    Case("driver-supports-gpu", "prod-compliant", "prod"),
    Case("driver-supports-gpu", "onprem-compliant", "onprem"),
    Case(
        "driver-supports-gpu",
        "h200-on-535-ami",
        "prod",
        (set_in(NG, "labels.gpu-platform.io/gpu-model", "H200-141GB"),),
        NG,
        "needs driver branch >= 550",
        lock=lock_edit(eks__ami_driver_branch="535"),
    ),
    Case(
        "driver-supports-gpu",
        "stack-override-of-ami-branch",
        "prod",
        (set_in(NG, "labels.gpu-platform.io/gpu-model", "H200-141GB"),),
        NG,
        "needs driver branch >= 550, but the stack's versions override of eks.ami_driver_branch is 535",
        stack_lock=lock_edit(eks__ami_driver_branch="535"),
    ),
    Case(
        "driver-supports-gpu",
        "override-cannot-relax-the-matrix",
        "prod",
        (set_in(NG, "labels.gpu-platform.io/gpu-model", "H200-141GB"),),
        NG,
        "needs driver branch >= 550",
        stack_lock=lock_edit(
            eks__ami_driver_branch="535",
            compatibility__gpu_min_driver_branch={**load_lockfile().compatibility.gpu_min_driver_branch, "H200-141GB": "450"},
        ),
    ),
    Case("fabric-manager-matches-driver", "onprem-compliant", "onprem"),
    Case(
        "fabric-manager-matches-driver",
        "fm-drift",
        "onprem",
        fires_on="pool-hgx-h100-train",
        message="fabric manager",
        lock=lock_edit(fabric_manager__version="535.247.01"),
    ),
    Case("versions-in-support", "prod-compliant", "prod"),
    Case(
        "versions-in-support",
        "eks-1.33-past-standard-support",
        "prod",
        (set_in("cluster-eks", "version", "1.33"),),
        "cluster-eks",
        "Kubernetes 1.33 left standard support on 2026-07-29",
    ),
    Case(
        "versions-in-support",
        "ami-driver-570-past-eol",
        "prod",
        fires_on=NG,
        message="eks.ami_driver_branch) 570 left standard support on 2026-02-28",
        lock=lock_edit(eks__ami_driver_branch="570"),
    ),
    Case(
        "versions-in-support",
        "ami-release-without-support-entry",
        "prod",
        (set_in(NG, "releaseVersion", "1.35.6-20990101"),),
        NG,
        "no end-of-support entry (support.eks_ami)",
    ),
    Case("efa-device-plugin", "prod-compliant", "prod"),
    Case("efa-device-plugin", "no-efa-pool-no-plugin-needed", "dev"),
    Case(
        "efa-device-plugin",
        "efa-pool-without-plugin",
        "prod",
        (drop("efa-device-plugin-release"),),
        NG,
        "no aws-efa-k8s-device-plugin release",
    ),
    Case(
        "efa-device-plugin",
        "plugin-not-tolerating-gpu-taint",
        "prod",
        (set_in("efa-device-plugin-release", "values.tolerations", []),),
        NG,
        "does not tolerate the pool's taint nvidia.com/gpu=present:NoSchedule",
    ),
    Case(
        "efa-device-plugin",
        "plugin-selecting-other-nodes",
        "prod",
        (set_in("efa-device-plugin-release", "values.nodeSelector", {"gpu-platform.io/pool": "infer-l4-spot"}),),
        "pool-train-h100-ondemand-ng",
        "nodeSelector gpu-platform.io/pool does not match",
    ),
    Case("kueue-admits-efa", "prod-compliant", "prod"),
    Case(
        "kueue-admits-efa",
        "efa-not-excluded",
        "prod",
        (
            set_in(
                "kueue-release",
                "values.managerConfig.controllerManagerConfigYaml",
                "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n",
            ),
        ),
        "kueue-release",
        "vpc.amazonaws.com/efa, which no ClusterQueue covers",
    ),
    # capacity
    Case("production-capacity-floor", "prod-compliant", "prod"),
    Case(
        "production-capacity-floor",
        "dev-spot-only-is-fine",
        "dev",
        (
            set_in("pool-dev-l4-ondemand-ng", "capacityType", "SPOT"),
            set_in("pool-dev-l4-ondemand-ng", "labels.gpu-platform.io/capacity-tier", "spot"),
        ),
    ),
    Case(
        "production-capacity-floor",
        "spot-only-training",
        "prod",
        tuple(
            e
            for ng in (NG, "pool-train-h100-ondemand-ng", "pool-train-h100-block-ng")
            for e in (set_in(ng, "capacityType", "SPOT"), set_in(ng, "labels.gpu-platform.io/capacity-tier", "spot"))
        ),
        "pool-train-h100-block-ng",  # the class's first pool by name
        "training has only Spot",
    ),
    Case(
        "production-capacity-floor",
        "on-demand-that-scales-to-zero",
        "prod",
        (set_in("pool-batch-l40s-ondemand-ng", "scalingConfig.minSize", 0),),
        "pool-batch-l40s-ondemand-ng",
        "batch has no floor",
        key="gpu-platform:nodePools[7].scaling.min",
    ),
    Case("spot-exposure", "prod-compliant", "prod"),
    Case("spot-exposure", "dev-spot-heavy", "dev", fires_on="pool-dev-l4-spot-ng", message="development", key="gpu-platform:nodePools[0].capacity"),
    # capacity against declared demand (prod inference: 26 stable GPUs, 24 Spot, 44 non-Spot at max)
    Case("demand-coverage", "prod-no-demand", "prod"),
    Case("demand-coverage", "covered", "prod", (declare_demand("prod", ("inference", 40, "inference", False)),)),
    Case(
        "demand-coverage",
        "p95-outgrew-the-floor",
        "prod",
        (declare_demand("prod", ("inference", 100, "online", False)),),
        "pool-infer-a100-mig-ng",
        "covers 26% of P95 demand 100",
    ),
    Case("demand-spot-exposure", "batch-under-cap", "prod", (declare_demand("prod", ("batch", 40, "batch", True)),)),
    Case(
        "demand-spot-exposure",
        "inference-over-cap",
        "prod",
        (declare_demand("prod", ("inference", 40, "inference", False)),),
        SPOT_NG,
        "60% of P95 demand 40; cap is 30%",
    ),
    # The L4 Spot flavor reaches the L4 on-demand group (its fallback group); raised to 24 GPUs it covers 24 on Spot.
    Case(
        "spot-fallback-for-non-interruptible",
        "fallback-covers-spot",
        "prod",
        (declare_demand("prod", ("inference", 24, "inference", False)), set_in(L4_OD_NG, "scalingConfig.maxSize", 24)),
    ),
    Case("spot-fallback-for-non-interruptible", "interruptible-needs-none", "prod", (declare_demand("prod", ("inference", 60, "inference", True)),)),
    # Only reachable on-demand counts: the 32 H100/A100 MIG GPUs of the class are not where L4 Spot pods can go.
    Case(
        "spot-fallback-for-non-interruptible",
        "fallback-short",
        "prod",
        (declare_demand("prod", ("inference", 24, "inference", False)),),
        SPOT_NG,
        "only 12 on-demand GPUs to fall back to",
    ),
    # The issue-17 regression: a Spot flavor pinned to its own pool certifies headroom no pod can reach.
    Case(
        "spot-fallback-for-non-interruptible",
        "fallback-unreachable",
        "prod",
        (
            declare_demand("prod", ("inference", 24, "inference", False)),
            set_in(L4_OD_NG, "scalingConfig.maxSize", 24),
            set_in("kueue-flavor-infer-l4-spot", "spec.nodeLabels", {"gpu-platform.io/pool": "infer-l4-spot"}),
        ),
        SPOT_NG,
        "only 0 on-demand GPUs to fall back to",
    ),
    Case("capacity-block-in-dates", "prod-compliant", "prod"),
    Case("capacity-block-in-dates", "no-dates", "prod", (drop_in(BLOCK_NG, f"tags.{BLOCK_END}"),), BLOCK_NG, "declares no dates"),
    Case(
        "capacity-block-in-dates",
        "block-ended",
        "prod",
        (set_in(BLOCK_NG, f"tags.{BLOCK_START}", "2025-01-06"), set_in(BLOCK_NG, f"tags.{BLOCK_END}", "2025-02-03")),
        BLOCK_NG,
        "ended on 2025-02-03",
    ),
    Case(
        "capacity-block-in-dates",
        "quota-before-start",
        "prod",
        (set_in(BLOCK_NG, f"tags.{BLOCK_START}", "2099-01-05"), set_in(BLOCK_NG, f"tags.{BLOCK_END}", "2099-02-02")),
        BLOCK_NG,
        "starts on 2099-01-05",
    ),
    # What the platform renders before a block starts: the flavor at 0 quota.
    Case(
        "capacity-block-in-dates",
        "no-quota-before-start",
        "prod",
        (
            set_in(BLOCK_NG, f"tags.{BLOCK_START}", "2099-01-05"),
            set_in(BLOCK_NG, f"tags.{BLOCK_END}", "2099-02-02"),
            set_in("kueue-clusterqueue-llm-training", "spec.resourceGroups.1.flavors.1.resources.0.nominalQuota", 0),
        ),
    ),
    Case("kueue-quota-fits-pool", "prod-compliant", "prod"),
    Case(
        "kueue-quota-fits-pool",
        "quota-above-capacity",
        "prod",
        (set_in("kueue-clusterqueue-serving", "spec.resourceGroups.2.flavors.1.resources.0.nominalQuota", 999),),
        "kueue-clusterqueue-serving",
        "add up to 999 GPUs (kueue-clusterqueue-serving) but the pool has 12 GPUs at max size",
        key="gpu-platform:tenants[2].quotas",
    ),
    # MIG quota is said in the GPUs the tenant wrote, with the slices Kueue counts beside them.
    Case(
        "kueue-quota-fits-pool",
        "mig-quota-above-capacity",
        "prod",
        (set_in("kueue-clusterqueue-serving", "spec.resourceGroups.1.flavors.0.resources.0.nominalQuota", 64),),
        "kueue-clusterqueue-serving",
        "add up to 32 GPUs (64 nvidia.com/mig-1g.10gb, 2 per GPU in layout all-balanced) (kueue-clusterqueue-serving) but the pool has 16 GPUs",
    ),
    Case("pool-has-flavor", "prod-compliant", "prod"),
    Case("pool-has-flavor", "no-flavor", "prod", (drop("kueue-flavor-batch-l40s-spot"),), "pool-batch-l40s-spot-ng", "ResourceFlavor"),
    Case("tenant-has-quota-and-queue", "prod-compliant", "prod"),
    # The documented monitoring.namespace may be any name: the platform's system label decides, not a list.
    Case("tenant-has-quota-and-queue", "custom-monitoring-namespace", "prod", (set_in("monitoring-namespace", "metadata.name", "observability"),)),
    Case("tenant-has-quota-and-queue", "no-quota", "prod", (drop("tenant-serving-quota"),), "tenant-serving-namespace", "ResourceQuota"),
    Case("tenant-has-quota-and-queue", "no-queue", "prod", (drop("kueue-localqueue-serving"),), "tenant-serving-namespace", "LocalQueue"),
    # rollout
    Case("fixed-capacity-update-strategy", "prod-compliant", "prod"),
    Case("fixed-capacity-update-strategy", "spot-may-surge", "prod", (set_in(SPOT_NG, "updateConfig.updateStrategy", "DEFAULT"),)),
    Case(
        "fixed-capacity-update-strategy",
        "default-on-reserved",
        "prod",
        (set_in(NG, "updateConfig.updateStrategy", "DEFAULT"),),
        NG,
        "updateStrategy is DEFAULT on reserved capacity",
    ),
    Case(
        "fixed-capacity-update-strategy",
        "unset-on-capacity-block",
        "prod",
        (drop_in(BLOCK_NG, "updateConfig.updateStrategy"),),
        BLOCK_NG,
        "updateStrategy is DEFAULT on capacity-block capacity",
    ),
    Case("fixed-capacity-placement", "prod-compliant", "prod"),
    Case(
        "fixed-capacity-placement",
        "multi-zone-reserved",
        "prod",
        (set_in(A100_NG, "subnetIds", ["subnet-a", "subnet-b", "subnet-c"]),),
        A100_NG,
        "3 subnets on reserved capacity",
    ),
    Case(
        "fixed-capacity-placement",
        "capacity-block-type-on-node-group",
        "prod",
        (set_in(BLOCK_NG, "instanceTypes", ["p5.48xlarge"]),),
        BLOCK_NG,
        "launch template only",
    ),
    Case(
        "fixed-capacity-placement",
        "capacity-block-never-zero",
        "prod",
        (set_in(BLOCK_NG, "scalingConfig.minSize", 2),),
        BLOCK_NG,
        "minSize is 2",
    ),
    Case("nodegroup-max-unavailable", "prod-compliant", "prod"),
    Case("nodegroup-max-unavailable", "four-at-once", "prod", (set_in(NG, "updateConfig.maxUnavailable", 4),), NG, "maxUnavailable is 4"),
    Case(
        "nodegroup-max-unavailable", "half-the-pool", "prod", (set_in(NG, "updateConfig", {"maxUnavailablePercentage": 50}),), NG, "Percentage is 50"
    ),
    Case("driver-upgrade-policy", "prod-compliant", "prod"),
    Case(
        "driver-upgrade-policy",
        "auto-upgrade-in-prod",
        "prod",
        (set_in("gpu-operator-release", "values.driver.upgradePolicy.autoUpgrade", True),),
        "gpu-operator-release",
        "autoUpgrade",
    ),
    Case(
        "driver-upgrade-policy",
        "operator-driver-without-drain",
        "staging",
        (
            set_in("gpu-operator-release", "values.driver.enabled", True),
            set_in("gpu-operator-release", "values.driver.upgradePolicy.drain.enable", False),
        ),
        "gpu-operator-release",
        "drain",
    ),
    # observability
    Case("dcgm-exporter-monitored", "prod-compliant", "prod"),
    Case("dcgm-exporter-monitored", "onprem-compliant", "onprem"),
    Case("dcgm-exporter-monitored", "not-scraped", "prod", (drop("monitoring-dcgm-servicemonitor"),), "gpu-operator-release", "ServiceMonitor"),
    Case(
        "dcgm-exporter-monitored",
        "exporter-off",
        "prod",
        (set_in("gpu-operator-release", "values.dcgmExporter.enabled", False),),
        "gpu-operator-release",
        "enabled is false",
    ),
    Case("critical-alerts-routed", "prod-compliant", "prod"),
    Case("critical-alerts-routed", "staging-not-production", "staging"),
    Case(
        "critical-alerts-routed",
        "chart-default-null",
        "prod",
        (drop_in("monitoring-release", "values.alertmanager.config"),),
        "monitoring-release",
        "'null'",
    ),
    Case(
        "critical-alerts-routed",
        "critical-to-null",
        "prod",
        (set_in("monitoring-release", "values.alertmanager.config.route.routes.1.receiver", "null"),),
        "monitoring-release",
        "notifies nobody",
    ),
    Case("critical-gpu-alerts", "prod-compliant", "prod"),
    Case("critical-gpu-alerts", "no-dbe-alert", "prod", (edit_alerts("GpuDoubleBitEccError"),), "stack", "double-bit ECC"),
    Case("critical-gpu-alerts", "no-xid-alert", "prod", (edit_alerts("GpuXidError"),), "stack", "XID"),
    # Ansible (repository rule)
    Case(
        "ansible-no-version-override",
        "lookup-is-fine",
        "prod",
        repo=write_inventory({"nvidia_driver_version": "{{ lookup('gpu_platform_versions', 'nvidia_driver.version') }}", "dcgm_enabled": True}),
    ),
    Case(
        "ansible-no-version-override",
        "literal-driver-version",
        "prod",
        fires_on="ansible/inventories/prod/group_vars/all.yml",
        message="nvidia_driver_version",
        repo=write_inventory({"nvidia_driver_version": "535.104.05"}),
    ),
    Case(
        "ansible-no-version-override",
        "copied-pinned-version",
        "prod",
        fires_on="ansible/inventories/prod/group_vars/all.yml",
        message="repeats the pinned version",
        repo=write_inventory({"driver_pkg": "535.261.03-1"}),
    ),
    # The golden image and the roles offer only OSes booting cgroup v2 (RHEL 8 boots v1; 1.35's kubelet refuses it).
    Case("ansible-node-os-cgroup-v2", "repository-as-is", "prod", repo=copy_node_os_offers()),
    Case(
        "ansible-node-os-cgroup-v2",
        "packer-offers-rhel8",
        "prod",
        fires_on="ansible/packer/gpu-node.pkr.hcl",
        message="variable base_os validation offers rhel8, whose images boot cgroup v1",
        repo=copy_node_os_offers(("ansible/packer/gpu-node.pkr.hcl", '"ubuntu2404", "rhel9"]', '"ubuntu2404", "rhel8", "rhel9"]')),
    ),
    Case(
        "ansible-node-os-cgroup-v2",
        "role-supports-rocky-8",
        "prod",
        fires_on="ansible/roles/nvidia_driver/vars/main.yml",
        message="_nvidia_driver_supported_os.Rocky offers rhel8",
        repo=copy_node_os_offers(("ansible/roles/nvidia_driver/vars/main.yml", 'Rocky: ["9"]', 'Rocky: ["8", "9"]')),
    ),
    # Before 1.35 the kubelet still starts on cgroup v1: RHEL 8 may be offered.
    Case(
        "ansible-node-os-cgroup-v2",
        "rhel8-while-the-kubelet-accepts-v1",
        "prod",
        lock=kubelet_cgroup_v2_from("1.36"),
        repo=copy_node_os_offers(("ansible/packer/gpu-node.pkr.hcl", '"ubuntu2404", "rhel9"]', '"ubuntu2404", "rhel8", "rhel9"]')),
    ),
    # The real inventories read the production pins (R580, supported until 2028-06-30).
    Case("ansible-driver-branch-in-support", "prod-on-the-lockfile-branch", "prod", repo=write_inventory({"ansible_user": "gpu-admin"})),
    Case(
        "ansible-driver-branch-in-support",
        "prod-selects-the-eol-lab-overlay",
        "prod",
        fires_on="ansible/inventories/prod/group_vars/all.yml",
        message="driver branch 535 reached end of support on 2026-06-30",
        repo=write_inventory({"gpu_platform_versions_overlay": "debian12-lab"}),
    ),
    Case(
        "ansible-driver-branch-in-support",
        "lockfile-branch-past-its-end",
        "prod",
        fires_on="ansible/inventories/prod/hosts.yml",
        message="reached end of support on 2020-01-31",
        lock=support_ended("nvidia_driver_branches", "580", "2020-01-31"),
        repo=write_inventory({"ansible_user": "gpu-admin"}),
    ),
    Case("ansible-node-stack-in-support", "prod-on-the-lockfile-pins", "prod", repo=write_inventory({"ansible_user": "gpu-admin"})),
    Case(
        "ansible-node-stack-in-support",
        "lockfile-dcgm-past-its-year",
        "prod",
        fires_on="ansible/inventories/prod/hosts.yml",
        message="DCGM 4.6 (dcgm.version) reached end of support on 2020-01-31",
        lock=support_ended("dcgm", "4.6", "2020-01-31"),
        repo=write_inventory({"ansible_user": "gpu-admin"}),
    ),
    Case(
        "ansible-node-stack-in-support",
        "prod-selects-the-lab-overlay-cuda",
        "prod",
        fires_on="ansible/inventories/prod/group_vars/all.yml",
        message="gpu_platform_versions_overlay=debian12-lab: CUDA 12.2 (cuda.version) reached end of support on 2026-06-30",
        repo=write_inventory({"gpu_platform_versions_overlay": "debian12-lab"}),
    ),
    Case(
        "ansible-driver-branch-in-support",
        "unknown-overlay",
        "prod",
        fires_on="ansible/inventories/prod/group_vars/all.yml",
        message="gpu_platform_versions_overlay=debian13-lab is not an overlay in the lockfile; defined: debian12-lab",
        repo=write_inventory({"gpu_platform_versions_overlay": "debian13-lab"}),
    ),
    Case(
        "ansible-no-version-override",
        "ini-group-vars-pin",
        "prod",
        fires_on="ansible/inventories/prod/hosts.ini",
        message="gpu_nodes:vars.nvidia_driver_version sets '535.104.05'",
        repo=write_ini_inventory(INI_DRIVER_PIN),
    ),
    Case(
        "ansible-no-version-override",
        "ini-host-var-pin-no-suffix",
        "prod",
        fires_on="ansible/inventories/prod/hosts",
        message="gpu-01.cuda_version",
        repo=write_ini_inventory("[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11 cuda_version='12.8.0'\n", name="hosts"),
    ),
    Case(
        "ansible-no-version-override",
        "ini-without-pins",
        "prod",
        repo=write_ini_inventory("[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11\n\n[gpu_nodes:vars]\nansible_user=ops\n"),
    ),
]

# The controller rules' cases (issue 9) live in their own module; it imports the helpers above.
from tests.policies.cases_controllers import CONTROLLER_CASES  # noqa: E402

CASES += CONTROLLER_CASES

from tests.policies.cases_paths import PATH_CASES  # noqa: E402

CASES += PATH_CASES
# The network and identity path rules' cases (issue 16) live in their own module too.
from tests.policies.cases_network import NETWORK_CASES  # noqa: E402

CASES += NETWORK_CASES
