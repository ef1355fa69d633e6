"""Every rule's compliant and violating cases, as data the rule tests, the meta-test and the CrossGuard tests share.

A case starts from a repository stack's real offline plan, changes it the way a bad change would,
and says which rule must (or must not) fire and on which resource.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.demand import demand_configmap
from gpu_platform.spec.models import ClassDemand, PlatformSpec
from gpu_platform.versions import Lockfile, load_lockfile
from gpu_platform_policies import THRESHOLD_DEFAULTS, Context, Resource, Violation, evaluate
from gpu_platform_policies.evaluate import not_applicable
from tests.conftest import plan_for, spec_for
from tests.policies.builders import DROP, Case, Edit, add, at, compliant, drop, fires, silent

REPO = Path(__file__).resolve().parents[2]


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


def edited(case: Case) -> list[Resource]:
    """The case's stack plan with its edits applied."""
    res = resources(case.stack)
    for edit in case.edits:
        res = edit(res)
    return res


def run_case(case: Case, tmp: Path, enforcement: dict[str, Any] | None = None) -> list[Violation]:
    """The case's violations of its own rule, through the same evaluate() the CLI uses."""
    res = edited(case)
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
        if case.idle is not None:  # silent because it did not run: `check` must say so, with this reason
            reason = dict(not_applicable(edited(case), context(case.stack))).get(case.rule)
            assert reason == case.idle, f"{case.rule} is not reported not applicable with {case.idle!r}; got {reason!r}"
        return
    hits = [v for v in violations if v.resource == case.fires_on and case.message in v.message]
    assert hits, f"{case.rule} did not report {case.fires_on!r} with {case.message!r}; got {violations}"
    if case.key is not None:
        assert any(v.key == case.key for v in hits), f"{case.rule} did not point at {case.key}; got {[v.key for v in hits]}"


# --- edits ---------------------------------------------------------------------------------------


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


def public_cidrs(*cidrs: str) -> Edit:
    """The cluster's API endpoint made public to these CIDRs."""
    return at("cluster-eks", {"vpcConfig.endpointPublicAccess": True, "vpcConfig.publicAccessCidrs": list(cidrs)})


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
ONPREM_PATCH = "pool-hgx-a100-mig-dgx-a100-01"
ONPREM_H100 = "pool-hgx-h100-train-dgx-h100-01"
GROUP_VARS = "ansible/inventories/prod/group_vars/all.yml"
HOSTS_YML = "ansible/inventories/prod/hosts.yml"


def on_spot(node_group: str) -> Edit:
    """The node group moved to Spot capacity, with the tier label the program derives from it."""
    return at(node_group, {"capacityType": "SPOT", "labels.gpu-platform.io/capacity-tier": "spot"})


def block_dates(start: str, end: str) -> Edit:
    """The Capacity Block pool's declared reservation dates (the tags the program writes from reservation.start/end)."""
    return at(BLOCK_NG, {f"tags.{BLOCK_START}": start, f"tags.{BLOCK_END}": end})


H200_ON_NG = at(NG, {"labels.gpu-platform.io/gpu-model": "H200-141GB"})
INFERENCE_24 = declare_demand("prod", ("inference", 24, "inference", False))  # 24 GPUs at P95, not interruptible
PLAIN_INVENTORY = write_inventory({"ansible_user": "gpu-admin"})  # reads every pin from the lockfile
LAB_OVERLAY = write_inventory({"gpu_platform_versions_overlay": "debian12-lab"})
RHEL8_IN_PACKER = ("ansible/packer/gpu-node.pkr.hcl", '"ubuntu2404", "rhel9"]', '"ubuntu2404", "rhel8", "rhel9"]')

CASES: list[Case] = [
    # security
    *compliant("imdsv2-required", "prod"),
    fires(
        "imdsv2-required",
        "optional-tokens",
        at(LT, {"metadataOptions.httpTokens": "optional"}),
        on=LT,
        says="metadataOptions.httpTokens is 'optional'",
    ),
    fires(
        "imdsv2-required",
        "hop-limit-2",
        at(LT, {"metadataOptions.httpPutResponseHopLimit": 2}),
        on=LT,
        says="metadataOptions.httpPutResponseHopLimit is 2",
    ),
    *compliant("ebs-encrypted", "prod"),
    fires(
        "ebs-encrypted", "unencrypted-root", at(LT, {"blockDeviceMappings.0.ebs.encrypted": "false"}), on=LT, says="volume /dev/xvda is not encrypted"
    ),
    silent("eks-endpoint-restricted", "prod-public-to-deployers-only"),
    silent("eks-endpoint-restricted", "prod-private", at("cluster-eks", {"vpcConfig.endpointPublicAccess": False})),
    silent("eks-endpoint-restricted", "dev-public-with-cidrs", stack="dev"),
    silent("eks-endpoint-restricted", "prod-public-office-ranges", public_cidrs("203.0.113.0/24", "198.51.100.0/24", "198.51.100.128/25")),
    fires(
        "eks-endpoint-restricted",
        "two-halves-are-the-internet",
        public_cidrs("0.0.0.0/1", "128.0.0.0/1"),
        on="cluster-eks",
        says="together cover 0.0.0.0/0, the whole internet",
    ),
    fires(
        "eks-endpoint-restricted",
        "broad-ranges-add-up",
        public_cidrs("3.0.0.0/8", "52.0.0.0/9", "203.0.113.0/24"),
        on="cluster-eks",
        says="together cover 25,166,080 addresses",
    ),
    fires(
        "eks-endpoint-restricted",
        "prod-public-open",
        at("cluster-eks", {"vpcConfig.endpointPublicAccess": True, "vpcConfig.publicAccessCidrs": DROP}),
        on="cluster-eks",
        says="vpcConfig.endpointPublicAccess is on with no publicAccessCidrs (open to the internet)",
    ),
    fires(
        "eks-endpoint-restricted",
        "prod-public-world-cidr",
        at("cluster-eks", {"vpcConfig.endpointPublicAccess": True, "vpcConfig.publicAccessCidrs": ["0.0.0.0/0"]}),
        on="cluster-eks",
        says="publicAccessCidrs (0.0.0.0/0) together cover 0.0.0.0/0, the whole internet",
    ),
    fires(
        "documentation-cidr",
        "prod-placeholder-range",
        on="cluster-eks",
        says=(
            "vpcConfig.publicAccessCidrs[0] is 198.51.100.0/27 (gpu-platform:cluster.publicAccessCidrs), "
            "inside the documentation range 198.51.100.0/24"
        ),
        key="gpu-platform:cluster.publicAccessCidrs[0]",
    ),
    silent("documentation-cidr", "prod-real-egress", at("cluster-eks", {"vpcConfig.publicAccessCidrs": ["34.192.10.0/27"]})),
    silent("documentation-cidr", "staging-is-not-production", stack="staging"),
    silent("eks-api-reachable", "prod-public-to-deployers"),
    silent("eks-api-reachable", "onprem-existing-cluster", stack="onprem"),
    fires(
        "eks-api-reachable",
        "private-only-in-new-vpc",
        at("cluster-eks", {"vpcConfig.endpointPublicAccess": False}),
        on="cluster-eks",
        says="private-only in a VPC this plan creates",
    ),
    fires(
        "eks-api-reachable",
        "private-only-existing-vpc-no-deployer-rule",
        at("cluster-eks", {"vpcConfig.endpointPublicAccess": False}),
        drop("network-vpc"),
        on="cluster-eks",
        says="no security-group rule opens TCP 443",
    ),
    silent(
        "eks-api-reachable",
        "private-only-existing-vpc-deployer-rule",
        at("cluster-eks", {"vpcConfig.endpointPublicAccess": False}),
        drop("network-vpc"),
        add(Resource(SG_INGRESS, "cluster-deployer-0", "cluster", {"cidrIpv4": "10.200.0.0/16", "ipProtocol": "tcp", "fromPort": 443})),
    ),
    *compliant("eks-secrets-encryption", "prod"),
    fires(
        "eks-secrets-encryption",
        "no-encryption",
        at("cluster-eks", {"encryptionConfig": DROP}),
        on="cluster-eks",
        says="encryptionConfig does not cover 'secrets'",
    ),
    *compliant("no-privileged-containers", "prod"),
    silent("no-privileged-containers", "system-namespace-allowed", add(privileged_deployment("kube-system"))),
    fires(
        "no-privileged-containers",
        "tenant-privileged",
        add(privileged_deployment("serving")),
        on="debug-serving",
        says="template.spec.containers[0].securityContext.privileged is privileged in namespace serving",
    ),
    *compliant("tenant-default-deny", "prod"),
    silent("tenant-default-deny", "custom-monitoring-namespace", at("monitoring-namespace", {"metadata.name": "observability"})),
    fires(
        "tenant-default-deny",
        "unlabelled-namespace-counts-as-tenant",
        at("monitoring-namespace", {"metadata.name": "observability", "metadata.labels": {}}),
        on="monitoring-namespace",
        says="tenant namespace observability has no default-deny",
    ),
    *compliant("tenant-default-deny", "onprem"),
    fires(
        "tenant-default-deny",
        "eks-enforcement-off",
        at("cluster-addon-vpc-cni", {"configurationValues": DROP}),
        on="cluster-addon-vpc-cni",
        says='vpc-cni configurationValues has no enableNetworkPolicy "true": tenant NetworkPolicies are accepted but not enforced',
    ),
    fires(
        "tenant-default-deny",
        "eks-enforcement-false",
        at("cluster-addon-vpc-cni", {"configurationValues": '{"enableNetworkPolicy": "false"}'}),
        on="cluster-addon-vpc-cni",
        says='vpc-cni configurationValues has no enableNetworkPolicy "true": tenant NetworkPolicies are accepted but not enforced',
    ),
    fires(
        "tenant-default-deny",
        "no-default-deny",
        drop("tenant-serving-netpol-default-deny"),
        on="tenant-serving-namespace",
        says="tenant namespace serving has no default-deny NetworkPolicy",
    ),
    fires(
        "tenant-default-deny",
        "deny-with-allow-rule",
        at("tenant-serving-netpol-default-deny", {"spec.ingress": [{"from": [{"podSelector": {}}]}]}),
        on="tenant-serving-namespace",
        says="tenant namespace serving has no default-deny NetworkPolicy",
    ),
    # GPU hygiene
    *compliant("gpu-pool-tainted", "prod", "onprem"),
    fires(
        "gpu-pool-tainted",
        "untainted-node-group",
        at(NG, {"taints": []}),
        on=NG,
        says="GPU pool train-h100-reserved has no nvidia.com/gpu taint with effect NoSchedule",
    ),
    fires(
        "gpu-pool-tainted",
        "untainted-node-patch",
        at(ONPREM_H100, {"metadata.annotations.gpu-platform.io/taints": "[]"}),
        on=ONPREM_H100,
        says="GPU pool hgx-h100-train has no nvidia.com/gpu taint with effect NoSchedule",
        stack="onprem",
    ),
    *compliant("node-patch-owns-only-its-keys", "onprem"),
    fires(
        "node-patch-owns-only-its-keys",
        "taints-in-the-patch",
        at(ONPREM_H100, {"spec.taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}),
        on=ONPREM_H100,
        says="the patch owns spec.taints whole: a forced apply replaces what other managers put there",
        stack="onprem",
    ),
    *compliant("spot-pool-interruptible", "prod"),
    fires(
        "spot-pool-interruptible",
        "no-interruptible-taint",
        at(SPOT_NG, {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]}),
        on=SPOT_NG,
        says="Spot pool infer-l4-spot has no gpu-platform.io/interruptible NoSchedule taint",
    ),
    fires(
        "spot-pool-interruptible",
        "no-interruptible-label",
        at(SPOT_NG, {"labels.gpu-platform.io/interruptible": DROP}),
        on=SPOT_NG,
        says="Spot pool infer-l4-spot has no label gpu-platform.io/interruptible=true",
    ),
    *compliant("training-whole-gpus", "prod"),
    fires(
        "training-whole-gpus",
        "time-sliced-training",
        at(NG, {"labels.gpu-platform.io/sharing": "time-slicing", "labels.nvidia.com/device-plugin.config": "time-slicing-4"}),
        on=NG,
        says="training pool train-h100-reserved shares its GPUs (time-slicing); training needs whole GPUs",
    ),
    fires(
        "training-whole-gpus",
        "mig-training",
        at(NG, {"labels.nvidia.com/mig.config": "all-3g.40gb"}),
        on=NG,
        says="selects MIG layout 'all-3g.40gb'; allowed: MIG off (all-disabled)",
    ),
    *compliant("mig-config-valid", "prod", "onprem"),
    fires(
        "mig-config-valid",
        "a100-40gb-layout-on-a100-80gb",
        at("pool-infer-a100-mig-ng", {"labels.nvidia.com/mig.config": "all-1g.5gb"}),
        on="pool-infer-a100-mig-ng",
        says="pool infer-a100-mig: MIG layout 'all-1g.5gb' does not exist for A100-80GB",
        key="gpu-platform:nodePools[3].sharing.migConfig",
    ),
    fires(
        "mig-config-valid",
        "mig-on-l4",
        at("pool-infer-l4-ondemand-ng", {"labels.nvidia.com/mig.config": "all-1g.10gb"}),
        on="pool-infer-l4-ondemand-ng",
        says="pool infer-l4-ondemand: L4 does not support MIG",
        key="gpu-platform:nodePools[5].sharing.mode",
    ),
    *compliant("sharing-modes-exclusive", "prod", "dev"),
    fires(
        "sharing-modes-exclusive",
        "time-slicing-on-mig-pool",
        at(ONPREM_PATCH, {"metadata.labels.nvidia.com/device-plugin.config": "time-slicing-4"}),
        on=ONPREM_PATCH,
        says="choose one",
        stack="onprem",
    ),
    *compliant("sharing-replicas-bounds", "dev"),
    fires(
        "sharing-replicas-bounds",
        "too-many-replicas-label",
        at("pool-dev-l4-spot-ng", {"labels.nvidia.com/device-plugin.config": "time-slicing-32"}),
        on="pool-dev-l4-spot-ng",
        says="pool dev-l4-spot: time-slicing replicas 32 (from 'time-slicing-32')",
        stack="dev",
    ),
    fires(
        "sharing-replicas-bounds",
        "one-replica-configmap",
        at(
            "gpu-operator-sharing-config",
            {"data.time-slicing-4": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 1}\n"},
        ),
        on="gpu-operator-sharing-config",
        says="device-plugin config 'time-slicing-4': timeSlicing replicas 1",
        stack="dev",
    ),
    # versions
    *compliant("charts-pinned", "prod"),
    fires(
        "charts-pinned",
        "chart-drift",
        at("gpu-operator-release", {"version": "v25.10.0"}),
        on="gpu-operator-release",
        says="chart 'gpu-operator' version 'v25.10.0' differs from the lockfile's charts.gpu-operator.version 'v26.7.0'",
    ),
    fires("charts-pinned", "unpinned-chart", at("kueue-release", {"version": DROP}), on="kueue-release", says="chart 'kueue' has no version"),
    fires(
        "charts-pinned",
        "range-chart",
        at("kueue-release", {"version": "^0.19"}),
        on="kueue-release",
        says="chart 'kueue' version '^0.19' is not an exact version",
    ),
    *compliant("images-pinned", "prod"),
    fires(
        "images-pinned",
        "image-drift",
        at("autoscaler-release", {"values.image.tag": "v1.33.0"}),
        on="autoscaler-release",
        says="differs from the lockfile",
    ),
    fires(
        "images-pinned",
        "untagged-image",
        add(privileged_deployment("kube-system")),
        at("debug-kube-system", {"spec.template.spec.containers.0.image": "docker.io/library/busybox"}),
        on="debug-kube-system",
        says="spec.template.spec.containers[0].image: image docker.io/library/busybox has no tag or digest",
    ),
    *compliant("no-floating-versions", "prod"),
    fires(
        "no-floating-versions",
        "latest-driver",
        at("gpu-operator-release", {"values.driver.version": "latest"}),
        on="gpu-operator-release",
        says="values.driver.version is 'latest'",
    ),
    fires(
        "no-floating-versions",
        "latest-image",
        at("autoscaler-release", {"values.image.tag": "latest"}),
        on="autoscaler-release",
        says="values.image.tag is 'latest'",
    ),
    *compliant("eks-versions-match-lockfile", "prod"),
    fires(
        "eks-versions-match-lockfile",
        "ami-drift",
        at(NG, {"releaseVersion": "1.33.4-20250101"}),
        on=NG,
        says="releaseVersion '1.33.4-20250101' differs from the lockfile's '1.35.6-20260714'",
    ),
    fires(
        "eks-versions-match-lockfile",
        "addon-drift",
        at("cluster-addon-coredns", {"addonVersion": "v1.11.0-eksbuild.1"}),
        on="cluster-addon-coredns",
        says="add-on coredns version 'v1.11.0-eksbuild.1' differs from the lockfile's 'v1.13.2-eksbuild.4'",
    ),
    *compliant("driver-supports-gpu", "prod", "onprem"),
    fires(
        "driver-supports-gpu",
        "h200-on-535-ami",
        H200_ON_NG,
        on=NG,
        says="pool train-h100-reserved: H200-141GB needs driver branch >= 550, but eks.ami_driver_branch is 535",
        lock=lock_edit(eks__ami_driver_branch="535"),
    ),
    fires(
        "driver-supports-gpu",
        "stack-override-of-ami-branch",
        H200_ON_NG,
        on=NG,
        says="needs driver branch >= 550, but the stack's versions override of eks.ami_driver_branch is 535",
        stack_lock=lock_edit(eks__ami_driver_branch="535"),
    ),
    fires(
        "driver-supports-gpu",
        "override-cannot-relax-the-matrix",
        H200_ON_NG,
        on=NG,
        says="needs driver branch >= 550",
        stack_lock=lock_edit(
            eks__ami_driver_branch="535",
            compatibility__gpu_min_driver_branch={**load_lockfile().compatibility.gpu_min_driver_branch, "H200-141GB": "450"},
        ),
    ),
    *compliant("fabric-manager-matches-driver", "onprem"),
    fires(
        "fabric-manager-matches-driver",
        "fm-drift",
        on="pool-hgx-h100-train",
        says="pool hgx-h100-train (H100-80GB, NVSwitch): fabric manager '535.247.01' differs from driver '580.173.02'",
        stack="onprem",
        lock=lock_edit(fabric_manager__version="535.247.01"),
    ),
    *compliant("versions-in-support", "prod"),
    fires(
        "versions-in-support",
        "eks-1.33-past-standard-support",
        at("cluster-eks", {"version": "1.33"}),
        on="cluster-eks",
        says="Kubernetes 1.33 left standard support on 2026-07-29",
    ),
    fires(
        "versions-in-support",
        "ami-driver-570-past-eol",
        on=NG,
        says="eks.ami_driver_branch) 570 left standard support on 2026-02-28",
        lock=lock_edit(eks__ami_driver_branch="570"),
    ),
    fires(
        "versions-in-support",
        "ami-release-without-support-entry",
        at(NG, {"releaseVersion": "1.35.6-20990101"}),
        on=NG,
        says="no end-of-support entry (support.eks_ami)",
    ),
    *compliant("efa-device-plugin", "prod"),
    silent("efa-device-plugin", "no-efa-pool-no-plugin-needed", stack="dev"),
    fires("efa-device-plugin", "efa-pool-without-plugin", drop("efa-device-plugin-release"), on=NG, says="no aws-efa-k8s-device-plugin release"),
    fires(
        "efa-device-plugin",
        "plugin-not-tolerating-gpu-taint",
        at("efa-device-plugin-release", {"values.tolerations": []}),
        on=NG,
        says="does not tolerate the pool's taint nvidia.com/gpu=present:NoSchedule",
    ),
    fires(
        "efa-device-plugin",
        "plugin-selecting-other-nodes",
        at("efa-device-plugin-release", {"values.nodeSelector": {"gpu-platform.io/pool": "infer-l4-spot"}}),
        on="pool-train-h100-ondemand-ng",
        says="nodeSelector gpu-platform.io/pool does not match",
    ),
    *compliant("kueue-admits-efa", "prod"),
    fires(
        "kueue-admits-efa",
        "efa-not-excluded",
        at("kueue-release", {"values.managerConfig.controllerManagerConfigYaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"}),
        on="kueue-release",
        says="vpc.amazonaws.com/efa, which no ClusterQueue covers",
    ),
    # capacity
    *compliant("production-capacity-floor", "prod"),
    silent(
        "production-capacity-floor",
        "dev-spot-only-is-fine",
        on_spot("pool-dev-l4-ondemand-ng"),
        stack="dev",
    ),
    fires(
        "production-capacity-floor",
        "spot-only-training",
        *(on_spot(ng) for ng in (NG, "pool-train-h100-ondemand-ng", "pool-train-h100-block-ng")),
        on="pool-train-h100-block-ng",
        says="training has only Spot",
    ),
    fires(
        "production-capacity-floor",
        "on-demand-that-scales-to-zero",
        at("pool-batch-l40s-ondemand-ng", {"scalingConfig.minSize": 0}),
        on="pool-batch-l40s-ondemand-ng",
        says="workload class batch has no floor in production: its non-Spot pools (batch-l40s-ondemand) can all scale to zero",
        key="gpu-platform:nodePools[7].scaling.min",
    ),
    *compliant("spot-exposure", "prod"),
    fires(
        "spot-exposure",
        "dev-spot-heavy",
        on="pool-dev-l4-spot-ng",
        says="development: 10 of 12 GPUs at max size are Spot (83%)",
        stack="dev",
        key="gpu-platform:nodePools[0].capacity",
    ),
    # capacity against declared demand (prod inference: 26 stable GPUs, 24 Spot, 44 non-Spot at max)
    silent("demand-coverage", "prod-no-demand", idle="the stack declares no gpu-platform:demand"),
    silent("demand-coverage", "covered", declare_demand("prod", ("inference", 40, "inference", False))),
    fires(
        "demand-coverage",
        "p95-outgrew-the-floor",
        declare_demand("prod", ("inference", 100, "online", False)),
        on="pool-infer-a100-mig-ng",
        says="inference (online SLA): stable capacity 26 GPUs covers 26% of P95 demand 100",
    ),
    silent("demand-spot-exposure", "batch-under-cap", declare_demand("prod", ("batch", 40, "batch", True))),
    fires(
        "demand-spot-exposure",
        "inference-over-cap",
        declare_demand("prod", ("inference", 40, "inference", False)),
        on=SPOT_NG,
        says="60% of P95 demand 40; cap is 30%",
    ),
    # The L4 Spot flavor reaches the L4 on-demand group (its fallback group); raised to 24 GPUs it covers 24 on Spot.
    silent(
        "spot-fallback-for-non-interruptible",
        "fallback-covers-spot",
        INFERENCE_24,
        at(L4_OD_NG, {"scalingConfig.maxSize": 24}),
    ),
    silent("spot-fallback-for-non-interruptible", "interruptible-needs-none", declare_demand("prod", ("inference", 60, "inference", True))),
    # Only reachable on-demand counts: the 32 H100/A100 MIG GPUs of the class are not where L4 Spot pods can go.
    fires(
        "spot-fallback-for-non-interruptible",
        "fallback-short",
        INFERENCE_24,
        on=SPOT_NG,
        says="only 12 on-demand GPUs to fall back to",
    ),
    # The issue-17 regression: a Spot flavor pinned to its own pool certifies headroom no pod can reach.
    fires(
        "spot-fallback-for-non-interruptible",
        "fallback-unreachable",
        INFERENCE_24,
        at(L4_OD_NG, {"scalingConfig.maxSize": 24}),
        at("kueue-flavor-infer-l4-spot", {"spec.nodeLabels": {"gpu-platform.io/pool": "infer-l4-spot"}}),
        on=SPOT_NG,
        says="only 0 on-demand GPUs to fall back to",
    ),
    *compliant("capacity-block-in-dates", "prod"),
    fires(
        "capacity-block-in-dates",
        "no-dates",
        at(BLOCK_NG, {f"tags.{BLOCK_END}": DROP}),
        on=BLOCK_NG,
        says="Capacity Block pool train-h100-block declares no dates",
    ),
    fires(
        "capacity-block-in-dates",
        "block-ended",
        block_dates("2025-01-06", "2025-02-03"),
        on=BLOCK_NG,
        says="Capacity Block of pool train-h100-block ended on 2025-02-03",
    ),
    fires(
        "capacity-block-in-dates",
        "quota-before-start",
        block_dates("2099-01-05", "2099-02-02"),
        on=BLOCK_NG,
        says="Capacity Block of pool train-h100-block starts on 2099-01-05 but its flavor carries quota now",
    ),
    # What the platform renders before a block starts: the flavor at 0 quota.
    silent(
        "capacity-block-in-dates",
        "no-quota-before-start",
        block_dates("2099-01-05", "2099-02-02"),
        at("kueue-clusterqueue-llm-training", {"spec.resourceGroups.1.flavors.1.resources.0.nominalQuota": 0}),
    ),
    *compliant("kueue-quota-fits-pool", "prod"),
    fires(
        "kueue-quota-fits-pool",
        "quota-above-capacity",
        at("kueue-clusterqueue-serving", {"spec.resourceGroups.2.flavors.1.resources.0.nominalQuota": 999}),
        on="kueue-clusterqueue-serving",
        says="add up to 999 GPUs (kueue-clusterqueue-serving) but the pool has 12 GPUs at max size",
        key="gpu-platform:tenants[2].quotas",
    ),
    # MIG quota is said in the GPUs the tenant wrote, with the slices Kueue counts beside them.
    fires(
        "kueue-quota-fits-pool",
        "mig-quota-above-capacity",
        at("kueue-clusterqueue-serving", {"spec.resourceGroups.1.flavors.0.resources.0.nominalQuota": 64}),
        on="kueue-clusterqueue-serving",
        says="add up to 32 GPUs (64 nvidia.com/mig-1g.10gb, 2 per GPU in layout all-balanced) (kueue-clusterqueue-serving) but the pool has 16 GPUs",
    ),
    *compliant("pool-has-flavor", "prod"),
    fires(
        "pool-has-flavor",
        "no-flavor",
        drop("kueue-flavor-batch-l40s-spot"),
        on="pool-batch-l40s-spot-ng",
        says="pool batch-l40s-spot has no ResourceFlavor with nodeLabels gpu-platform.io/pool: batch-l40s-spot",
    ),
    *compliant("tenant-has-quota-and-queue", "prod"),
    # The documented monitoring.namespace may be any name: the platform's system label decides, not a list.
    silent("tenant-has-quota-and-queue", "custom-monitoring-namespace", at("monitoring-namespace", {"metadata.name": "observability"})),
    fires(
        "tenant-has-quota-and-queue",
        "no-quota",
        drop("tenant-serving-quota"),
        on="tenant-serving-namespace",
        says="tenant namespace serving has no ResourceQuota",
    ),
    fires(
        "tenant-has-quota-and-queue",
        "no-queue",
        drop("kueue-localqueue-serving"),
        on="tenant-serving-namespace",
        says="tenant namespace serving has no Kueue LocalQueue",
    ),
    # rollout
    *compliant("fixed-capacity-update-strategy", "prod"),
    # Unset is DEFAULT (surge): Spot capacity has spare instances to launch replacements on.
    silent("fixed-capacity-update-strategy", "spot-may-surge", at(SPOT_NG, {"updateConfig.updateStrategy": DROP})),
    fires(
        "fixed-capacity-update-strategy",
        "default-on-reserved",
        at(NG, {"updateConfig.updateStrategy": "DEFAULT"}),
        on=NG,
        says="updateStrategy is DEFAULT on reserved capacity",
    ),
    fires(
        "fixed-capacity-update-strategy",
        "unset-on-capacity-block",
        at(BLOCK_NG, {"updateConfig.updateStrategy": DROP}),
        on=BLOCK_NG,
        says="updateStrategy is DEFAULT on capacity-block capacity",
    ),
    *compliant("fixed-capacity-placement", "prod"),
    fires(
        "fixed-capacity-placement",
        "multi-zone-reserved",
        at(A100_NG, {"subnetIds": ["subnet-a", "subnet-b", "subnet-c"]}),
        on=A100_NG,
        says="3 subnets on reserved capacity",
    ),
    fires(
        "fixed-capacity-placement",
        "capacity-block-type-on-node-group",
        at(BLOCK_NG, {"instanceTypes": ["p5.48xlarge"]}),
        on=BLOCK_NG,
        says="put the instance type in the launch template only",
    ),
    fires(
        "fixed-capacity-placement",
        "capacity-block-never-zero",
        at(BLOCK_NG, {"scalingConfig.minSize": 2}),
        on=BLOCK_NG,
        says="scalingConfig.minSize is 2",
    ),
    *compliant("nodegroup-max-unavailable", "prod"),
    fires("nodegroup-max-unavailable", "four-at-once", at(NG, {"updateConfig.maxUnavailable": 4}), on=NG, says="updateConfig.maxUnavailable is 4"),
    fires(
        "nodegroup-max-unavailable",
        "half-the-pool",
        at(NG, {"updateConfig": {"maxUnavailablePercentage": 50}}),
        on=NG,
        says="updateConfig.maxUnavailablePercentage is 50",
    ),
    *compliant("driver-upgrade-policy", "prod"),
    fires(
        "driver-upgrade-policy",
        "auto-upgrade-in-prod",
        at("gpu-operator-release", {"values.driver.upgradePolicy.autoUpgrade": True}),
        on="gpu-operator-release",
        says="values.driver.upgradePolicy.autoUpgrade is true in production",
    ),
    fires(
        "driver-upgrade-policy",
        "operator-driver-without-drain",
        at("gpu-operator-release", {"values.driver.enabled": True, "values.driver.upgradePolicy.drain.enable": False}),
        on="gpu-operator-release",
        says="values.driver.upgradePolicy.drain.enable is not true",
        stack="staging",
    ),
    # observability
    *compliant("dcgm-exporter-monitored", "prod", "onprem"),
    fires(
        "dcgm-exporter-monitored",
        "not-scraped",
        drop("monitoring-dcgm-servicemonitor"),
        on="gpu-operator-release",
        says="no ServiceMonitor scrapes the DCGM exporter (values.dcgmExporter.serviceMonitor.enabled or a ServiceMonitor)",
    ),
    fires(
        "dcgm-exporter-monitored",
        "exporter-off",
        at("gpu-operator-release", {"values.dcgmExporter.enabled": False}),
        on="gpu-operator-release",
        says="values.dcgmExporter.enabled is false",
    ),
    *compliant("critical-alerts-routed", "prod"),
    silent("critical-alerts-routed", "staging-not-production", stack="staging"),
    fires(
        "critical-alerts-routed",
        "chart-default-null",
        at("monitoring-release", {"values.alertmanager.config": DROP}),
        on="monitoring-release",
        says="critical alerts route to receiver 'null', which notifies nobody",
    ),
    fires(
        "critical-alerts-routed",
        "critical-to-null",
        at("monitoring-release", {"values.alertmanager.config.route.routes.1.receiver": "null"}),
        on="monitoring-release",
        says="critical alerts route to receiver 'null', which notifies nobody",
    ),
    *compliant("critical-gpu-alerts", "prod"),
    fires(
        "critical-gpu-alerts",
        "no-dbe-alert",
        edit_alerts("GpuDoubleBitEccError"),
        on="stack",
        says="no PrometheusRule alert for double-bit ECC errors",
    ),
    fires("critical-gpu-alerts", "no-xid-alert", edit_alerts("GpuXidError"), on="stack", says="no PrometheusRule alert for XID errors"),
    # Ansible (repository rule)
    silent(
        "ansible-no-version-override",
        "lookup-is-fine",
        repo=write_inventory({"nvidia_driver_version": "{{ lookup('gpu_platform_versions', 'nvidia_driver.version') }}", "dcgm_enabled": True}),
    ),
    fires(
        "ansible-no-version-override",
        "literal-driver-version",
        on=GROUP_VARS,
        says="nvidia_driver_version sets '535.104.05'",
        repo=write_inventory({"nvidia_driver_version": "535.104.05"}),
    ),
    fires(
        "ansible-no-version-override",
        "copied-pinned-version",
        on=GROUP_VARS,
        says="driver_pkg repeats the pinned version '535.261.03-1'",
        repo=write_inventory({"driver_pkg": "535.261.03-1"}),
    ),
    # The golden image and the roles offer only OSes booting cgroup v2 (RHEL 8 boots v1; 1.35's kubelet refuses it).
    silent("ansible-node-os-cgroup-v2", "repository-as-is", repo=copy_node_os_offers()),
    fires(
        "ansible-node-os-cgroup-v2",
        "packer-offers-rhel8",
        on="ansible/packer/gpu-node.pkr.hcl",
        says="variable base_os validation offers rhel8, whose images boot cgroup v1",
        repo=copy_node_os_offers(RHEL8_IN_PACKER),
    ),
    fires(
        "ansible-node-os-cgroup-v2",
        "role-supports-rocky-8",
        on="ansible/roles/nvidia_driver/vars/main.yml",
        says="_nvidia_driver_supported_os.Rocky offers rhel8",
        repo=copy_node_os_offers(("ansible/roles/nvidia_driver/vars/main.yml", 'Rocky: ["9"]', 'Rocky: ["8", "9"]')),
    ),
    # Before 1.35 the kubelet still starts on cgroup v1: RHEL 8 may be offered.
    silent(
        "ansible-node-os-cgroup-v2",
        "rhel8-while-the-kubelet-accepts-v1",
        lock=kubelet_cgroup_v2_from("1.36"),
        repo=copy_node_os_offers(RHEL8_IN_PACKER),
    ),
    # The real inventories read the production pins (R580, supported until 2028-06-30).
    silent("ansible-driver-branch-in-support", "prod-on-the-lockfile-branch", repo=PLAIN_INVENTORY),
    fires(
        "ansible-driver-branch-in-support",
        "prod-selects-the-eol-lab-overlay",
        on=GROUP_VARS,
        says="driver branch 535 reached end of support on 2026-06-30",
        repo=LAB_OVERLAY,
    ),
    fires(
        "ansible-driver-branch-in-support",
        "lockfile-branch-past-its-end",
        on=HOSTS_YML,
        says="reached end of support on 2020-01-31",
        lock=support_ended("nvidia_driver_branches", "580", "2020-01-31"),
        repo=PLAIN_INVENTORY,
    ),
    silent("ansible-node-stack-in-support", "prod-on-the-lockfile-pins", repo=PLAIN_INVENTORY),
    fires(
        "ansible-node-stack-in-support",
        "lockfile-dcgm-past-its-year",
        on=HOSTS_YML,
        says="DCGM 4.6 (dcgm.version) reached end of support on 2020-01-31",
        lock=support_ended("dcgm", "4.6", "2020-01-31"),
        repo=PLAIN_INVENTORY,
    ),
    fires(
        "ansible-node-stack-in-support",
        "prod-selects-the-lab-overlay-cuda",
        on=GROUP_VARS,
        says="gpu_platform_versions_overlay=debian12-lab: CUDA 12.2 (cuda.version) reached end of support on 2026-06-30",
        repo=LAB_OVERLAY,
    ),
    fires(
        "ansible-driver-branch-in-support",
        "unknown-overlay",
        on=GROUP_VARS,
        says="gpu_platform_versions_overlay=debian13-lab is not an overlay in the lockfile; defined: debian12-lab",
        repo=write_inventory({"gpu_platform_versions_overlay": "debian13-lab"}),
    ),
    fires(
        "ansible-no-version-override",
        "ini-group-vars-pin",
        on="ansible/inventories/prod/hosts.ini",
        says="gpu_nodes:vars.nvidia_driver_version sets '535.104.05'",
        repo=write_ini_inventory(INI_DRIVER_PIN),
    ),
    fires(
        "ansible-no-version-override",
        "ini-host-var-pin-no-suffix",
        on="ansible/inventories/prod/hosts",
        says="gpu_nodes.hosts.gpu-01.cuda_version sets '12.8.0'",
        repo=write_ini_inventory("[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11 cuda_version='12.8.0'\n", name="hosts"),
    ),
    silent(
        "ansible-no-version-override",
        "ini-without-pins",
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
