"""Bad stack files: each gives one clear line (file, key path, what is wrong, what is allowed) and exit 2."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.cli import main
from gpu_platform.spec.duplicates import duplicate_keys
from gpu_platform.spec.loader import read_stack_config
from tests.conftest import stack_path
from tests.foundation.bad_stack import assert_one_clear_line, plan_errors, unlocated

Mutation = Callable[[dict[str, Any]], None]


def _cfg(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["config"]


def _pool(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in _cfg(doc)["gpu-platform:nodePools"] if p["name"] == name)


def set_pool(pool: str, **changes: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        _pool(doc, pool).update(changes)

    return mutate


def drop_pool_key(name: str, key: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        del _pool(doc, name)[key]

    return mutate


def set_cfg(key: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        _cfg(doc)[key] = value

    return mutate


def drop_cfg(key: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        del _cfg(doc)[key]

    return mutate


def edit(path: str, value: Any) -> Mutation:
    """Set a dotted path inside the config, e.g. 'gpu-platform:cluster.name'."""

    def mutate(doc: dict[str, Any]) -> None:
        head, *rest = path.split(".")
        node = _cfg(doc)[head]
        for part in rest[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = rest[-1]
        if last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def chain(*mutations: Mutation) -> Mutation:
    """Several mutations applied in order."""

    def mutate(doc: dict[str, Any]) -> None:
        for m in mutations:
            m(doc)

    return mutate


def tenant_quota(tenant: int, quota: int, **changes: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        _cfg(doc)["gpu-platform:tenants"][tenant]["quotas"][quota].update(changes)

    return mutate


def dup_pool(name: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        _cfg(doc)["gpu-platform:nodePools"].append(copy.deepcopy(_pool(doc, name)))

    return mutate


def add_pool_like(like: str, **changes: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        _cfg(doc)["gpu-platform:nodePools"].append({**copy.deepcopy(_pool(doc, like)), **changes})

    return mutate


# (id, base stack, mutation, expected key path, expected fragment of the message)
CASES: list[tuple[str, str, Mutation, str, str]] = [
    ("typo-top-key", "prod", lambda d: _cfg(d).__setitem__("gpu-platform:nodePool", []), "gpu-platform:nodePool", "did you mean 'nodePools'"),
    (
        "typo-pool-key",
        "prod",
        set_pool("infer-l4-spot", instanceType=["g6.xlarge"]),
        "gpu-platform:nodePools[4].instanceType",
        "did you mean 'instanceTypes'",
    ),
    (
        "typo-cluster-key",
        "prod",
        edit("gpu-platform:cluster.endpointPrivateAcess", True),
        "gpu-platform:cluster.endpointPrivateAcess",
        "did you mean 'endpointPrivateAccess'",
    ),
    (
        "wrong-type-scaling",
        "prod",
        set_pool("infer-l4-spot", scaling={"min": "zero", "desired": 4, "max": 24}),
        "gpu-platform:nodePools[4].scaling.min",
        "'zero': input should be a valid integer",
    ),
    ("wrong-type-efa", "prod", set_pool("infer-l4-spot", efa="maybe"), "gpu-platform:nodePools[4].efa", "allowed: true or false"),
    (
        "unknown-critical-receiver",
        "prod",
        edit("gpu-platform:monitoring.alertmanager.criticalReceiver", "gpu-oncal"),
        "gpu-platform:monitoring.alertmanager.criticalReceiver",
        "unknown receiver 'gpu-oncal' (did you mean 'gpu-oncall'?); allowed: gpu-oncall, gpu-platform-slack, null",
    ),
    (
        "inline-receiver-credential",
        "prod",
        edit("gpu-platform:monitoring.alertmanager.receivers.0.routingKey", "abc123"),
        "gpu-platform:monitoring.alertmanager.receivers[0].routingKey",
        "unknown key 'routingKey'; allowed: channel, name, secret, type",
    ),
    (
        "min-gt-max",
        "prod",
        set_pool("infer-l4-spot", scaling={"min": 30, "desired": 30, "max": 24}),
        "gpu-platform:nodePools[4].scaling",
        "min <= desired <= max",
    ),
    (
        "desired-gt-max",
        "dev",
        set_pool("dev-l4-spot", scaling={"min": 0, "desired": 9, "max": 6}),
        "gpu-platform:nodePools[0].scaling",
        "min <= desired <= max",
    ),
    (
        "unknown-instance-type",
        "prod",
        set_pool("infer-l4-spot", instanceTypes=["g6.2xlarge", "g6.3xlarge"]),
        "gpu-platform:nodePools[4].instanceTypes[1]",
        "'g6.3xlarge' is unknown (did you mean",
    ),
    (
        "mixed-gpu-models",
        "prod",
        set_pool("infer-l4-spot", instanceTypes=["g6.2xlarge", "g5.2xlarge"]),
        "gpu-platform:nodePools[4].instanceTypes[1]",
        "same GPU model",
    ),
    (
        "mig-profile-wrong-gpu",
        "prod",
        set_pool("infer-h100-mig", sharing={"mode": "mig", "migConfig": "all-1g.5gb"}),
        "gpu-platform:nodePools[2].sharing.migConfig",
        "does not exist for H100-80GB",
    ),
    (
        "mig-on-l4",
        "prod",
        set_pool("infer-l4-spot", sharing={"mode": "mig", "migConfig": "all-1g.10gb"}),
        "gpu-platform:nodePools[4].sharing.mode",
        "L4 does not support mig",
    ),
    (
        "replicas-zero",
        "dev",
        set_pool("dev-l4-spot", sharing={"mode": "time-slicing", "replicas": 0}),
        "gpu-platform:nodePools[0].sharing.replicas",
        "out of range",
    ),
    (
        "replicas-too-many",
        "dev",
        set_pool("dev-l4-spot", sharing={"mode": "mps", "replicas": 500}),
        "gpu-platform:nodePools[0].sharing.replicas",
        "2..48",
    ),
    (
        "replicas-missing",
        "dev",
        set_pool("dev-l4-spot", sharing={"mode": "time-slicing"}),
        "gpu-platform:nodePools[0].sharing.replicas",
        "required for time-slicing",
    ),
    (
        "mig-and-timeslicing",
        "prod",
        set_pool("infer-h100-mig", sharing={"mode": "time-slicing", "replicas": 4, "migConfig": "all-3g.40gb"}),
        "gpu-platform:nodePools[2].sharing.migConfig",
        "never share a pool",
    ),
    (
        "sharing-mode-typo",
        "dev",
        set_pool("dev-l4-spot", sharing={"mode": "timeslicing", "replicas": 4}),
        "gpu-platform:nodePools[0].sharing.mode",
        "'timeslicing' is not a valid choice",
    ),
    (
        "reserved-without-reservation",
        "prod",
        drop_pool_key("train-h100-reserved", "reservation"),
        "gpu-platform:nodePools[0].reservation",
        "must name its reservation",
    ),
    (
        "reserved-not-always-on",
        "prod",
        set_pool("train-h100-reserved", scaling={"min": 2, "desired": 4, "max": 4}),
        "gpu-platform:nodePools[0].scaling",
        "always on",
    ),
    (
        "reservation-bad-id",
        "prod",
        set_pool("train-h100-reserved", reservation={"id": "odcr-123"}),
        "gpu-platform:nodePools[0].reservation.id",
        "wrong format",
    ),
    (
        "spot-with-reservation",
        "prod",
        set_pool("infer-l4-spot", reservation={"id": "cr-0a1b2c3d4e5f60718"}),
        "gpu-platform:nodePools[4].reservation",
        "takes no reservation",
    ),
    (
        "tenant-named-like-a-whole-nodes-queue",
        "prod",
        edit("gpu-platform:tenants.1.name", "llm-training-whole-nodes"),
        "gpu-platform:tenants[1].name",
        "the suffix of the tenants' whole-node ClusterQueues",
    ),
    (
        "whole-nodes-on-autoscaled-pool",
        "prod",
        set_pool("train-h100-ondemand", wholeNodes=True),
        "gpu-platform:nodePools[1].wholeNodes",
        "Kueue's topology placement needs its nodes to exist",
    ),
    (
        "network-topology-on-unlabelled-type",
        "staging",
        set_pool("train-a100", networkTopology=True),
        "gpu-platform:nodePools[0].networkTopology",
        "needs an EKS EFA pool with wholeNodes",
    ),
    (
        "fallback-on-on-demand-pool",
        "prod",
        set_pool("infer-l4-ondemand", fallback=True),
        "gpu-platform:nodePools[5].fallback",
        "allowed: on spot pools only",
    ),
    (
        "fallback-group-name-taken",
        "prod",
        add_pool_like("infer-l4-ondemand", name="infer-l4-spot-fallback"),
        "gpu-platform:nodePools[4].name",
        "which another pool is named",
    ),
    (
        "capacity-block-on-g6",
        "prod",
        set_pool(
            "infer-l4-ondemand",
            capacity="capacity-block",
            instanceTypes=["g6.2xlarge"],
            reservation={"id": "cr-0a1b2c3d4e5f60719"},
            scaling={"min": 0, "desired": 0, "max": 12},  # the 12 GPUs serving's quota holds: the one mistake is the type
            availabilityZones=["us-east-1a"],
        ),
        "gpu-platform:nodePools[5].instanceTypes[0]",
        "not sold as a Capacity Block",
    ),
    (
        "efa-on-small-type",
        "prod",
        set_pool("infer-l4-ondemand", efa=True, instanceTypes=["g6.2xlarge"], availabilityZones=["us-east-1a"]),
        "gpu-platform:nodePools[5].efa",
        "no EFA network interface",
    ),
    (
        "efa-multi-az",
        "prod",
        set_pool("train-h100-ondemand", availabilityZones=["us-east-1a", "us-east-1b"]),
        "gpu-platform:nodePools[1].availabilityZones",
        "exactly one zone",
    ),
    (
        "pool-zone-not-in-network",
        "prod",
        set_pool("train-h100-ondemand", availabilityZones=["us-east-1f"]),
        "gpu-platform:nodePools[1].availabilityZones[0]",
        "not one of the network's zones",
    ),
    ("duplicate-pool", "prod", dup_pool("infer-l4-spot"), "gpu-platform:nodePools[9].name", "duplicate pool name 'infer-l4-spot'"),
    ("bad-pool-name", "prod", set_pool("infer-l4-spot", name="Infer_L4"), "gpu-platform:nodePools[4].name", "wrong format"),
    (
        "unknown-workload-class",
        "prod",
        set_pool("infer-l4-spot", workloadClass="serving"),
        "gpu-platform:nodePools[4].workloadClass",
        "allowed: 'training', 'inference', 'batch' or 'development'",
    ),
    (
        "unknown-capacity-tier",
        "prod",
        set_pool("infer-l4-spot", capacity="preemptible"),
        "gpu-platform:nodePools[4].capacity",
        "'preemptible' is not a valid choice",
    ),
    (
        "quota-unknown-pool",
        "prod",
        tenant_quota(0, 0, pool="train-h100-reservd"),
        "gpu-platform:tenants[0].quotas[0].pool",
        "did you mean 'train-h100-reserved'",
    ),
    ("lending-above-quota", "prod", tenant_quota(0, 0, lendingLimit=99), "gpu-platform:tenants[0].quotas[0].lendingLimit", "allowed: 0..24"),
    (
        "tenant-in-system-ns",
        "prod",
        edit("gpu-platform:tenants.0.namespace", "kube-system"),
        "gpu-platform:tenants[0].namespace",
        "platform namespace",
    ),
    ("missing-region", "prod", drop_cfg("aws:region"), "aws:region", "required for an EKS stack"),
    (
        "single-az",
        "staging",
        edit("gpu-platform:network.availabilityZones", ["us-east-1a"]),
        "gpu-platform:network.availabilityZones",
        "at least 2 zones",
    ),
    (
        "az-other-region",
        "staging",
        edit("gpu-platform:network.availabilityZones", ["us-east-1a", "eu-west-1b"]),
        "gpu-platform:network.availabilityZones[1]",
        "not an Availability Zone of us-east-1",
    ),
    ("missing-cluster", "prod", drop_cfg("gpu-platform:cluster"), "gpu-platform:cluster", "required key is missing"),
    (
        "cluster-provider-typo",
        "prod",
        edit("gpu-platform:cluster.provider", "eksctl"),
        "gpu-platform:cluster.provider",
        "allowed: 'eks' or 'existing'",
    ),
    (
        "onprem-pool-with-instance-types",
        "onprem",
        set_pool("l40s-dev", instanceTypes=["g6e.xlarge"]),
        "gpu-platform:nodePools[2].instanceTypes",
        "only for pools of an EKS cluster",
    ),
    ("onprem-unknown-gpu", "onprem", set_pool("l40s-dev", gpuModel="L40"), "gpu-platform:nodePools[2].gpuModel", "did you mean 'L40S'"),
    ("onprem-spot", "onprem", set_pool("l40s-dev", capacity="spot"), "gpu-platform:nodePools[2].capacity", "not available on bare metal"),
    (
        "onprem-node-in-two-pools",
        "onprem",
        set_pool("l40s-dev", nodes=["l40s-01", "dgx-a100-01"]),
        "gpu-platform:nodePools[2].nodes[1]",
        "already in pool 'hgx-a100-mig'",
    ),
    (
        "reserved-label-domain",
        "prod",
        set_pool("infer-l4-spot", labels={"nvidia.com/gpu.product": "x"}),
        "gpu-platform:nodePools[4].labels.nvidia.com/gpu.product",
        "domain the platform manages",
    ),
    (
        "version-override-breaks-matrix",
        "prod",
        set_cfg("gpu-platform:versions", {"cuda": {"version": "13.1.0"}}),
        "gpu-platform:versions.cuda.version",
        "needs a newer driver than branch 580",
    ),
    (
        "version-override-fabric-manager",
        "prod",
        set_cfg("gpu-platform:versions", {"fabric_manager": {"version": "535.230.02"}}),
        "gpu-platform:versions.fabric_manager.version",
        "differs from the driver",
    ),
    (
        "version-override-latest",
        "prod",
        set_cfg("gpu-platform:versions", {"charts": {"kueue": {"version": "latest"}}}),
        "gpu-platform:versions.charts.kueue.version",
        "floating version 'latest'",
    ),
    (
        "kueue-preemption-invalid-for-field",
        "prod",
        edit("gpu-platform:queueing.kueue.preemption.withinClusterQueue", "Any"),
        "gpu-platform:queueing.kueue.preemption.withinClusterQueue",
        "allowed: 'Never', 'LowerPriority' or 'LowerOrNewerEqualPriority'",
    ),
    ("cidr-host-bits", "prod", edit("gpu-platform:network.cidr", "10.40.5.0/16"), "gpu-platform:network.cidr", "has host bits set"),
    ("cidr-bad-octet", "prod", edit("gpu-platform:network.cidr", "999.1.2.3/16"), "gpu-platform:network.cidr", "not an IPv4 network"),
    ("cidr-prefix-too-small", "prod", edit("gpu-platform:network.cidr", "10.0.0.0/8"), "gpu-platform:network.cidr", "outside /16../24"),
    (
        "public-cidr-bogus",
        "dev",
        edit("gpu-platform:cluster.publicAccessCidrs", ["bogus"]),
        "gpu-platform:cluster.publicAccessCidrs[0]",
        "not an IPv4 network",
    ),
    ("cluster-name-too-long", "prod", edit("gpu-platform:cluster.name", "gpu-" + "x" * 40), "gpu-platform:cluster.name", "at most 40 characters"),
    (
        "replicas-as-text",
        "dev",
        set_pool("dev-l4-spot", sharing={"mode": "time-slicing", "replicas": "4"}),
        "gpu-platform:nodePools[0].sharing.replicas",
        "allowed: an integer",
    ),
    ("efa-as-text", "prod", set_pool("train-h100-ondemand", efa="yes"), "gpu-platform:nodePools[1].efa", "allowed: true or false"),
    ("region-typo", "prod", set_cfg("aws:region", "us-east1"), "aws:region", "wrong format"),
    ("no-namespace-key", "prod", lambda d: _cfg(d).__setitem__("nodePools", []), "config.nodePools", "has no namespace"),
    # --- issue 12: values AWS or Kubernetes refuse, misleading messages, plain-text credentials ---
    # A misspelled region is blamed itself (once), not the zones: pulumi_aws.Region lists the regions.
    ("region-misspelled", "prod", set_cfg("aws:region", "us-esat-1"), "aws:region", "unknown AWS region 'us-esat-1' (did you mean 'us-east-1'?)"),
    ("region-does-not-exist", "dev", set_cfg("aws:region", "us-west-9"), "aws:region", "unknown AWS region 'us-west-9'"),
    (
        "zone-local-zone",
        "prod",
        edit("gpu-platform:network.availabilityZones", ["us-east-1a", "us-east-1b", "us-east-1-bos-1a"]),
        "gpu-platform:network.availabilityZones[2]",
        "is a Local or Wavelength Zone",
    ),
    (
        "zone-is-the-region",
        "dev",
        edit("gpu-platform:network.availabilityZones", ["us-west-2a", "us-west-2"]),
        "gpu-platform:network.availabilityZones[1]",
        "'us-west-2' is not an Availability Zone of us-west-2",
    ),
    (
        "zone-longer-region-prefix",
        "dev",
        edit("gpu-platform:network.availabilityZones", ["us-west-2a", "us-west-21b"]),
        "gpu-platform:network.availabilityZones[1]",
        "not an Availability Zone of us-west-2",
    ),
    (
        "both-endpoints-off",
        "prod",
        chain(edit("gpu-platform:cluster.endpointPrivateAccess", False), edit("gpu-platform:cluster.endpointPublicAccess", False)),
        "gpu-platform:cluster.endpointPublicAccess",
        "both endpointPrivateAccess and endpointPublicAccess are off (EKS needs one)",
    ),
    (
        "system-instance-type-typo",
        "prod",
        edit("gpu-platform:cluster.systemNodes", {"instanceType": "m7i.2xlarg", "min": 3, "desired": 3, "max": 6}),
        "gpu-platform:cluster.systemNodes.instanceType",
        "unknown EC2 instance type 'm7i.2xlarg' (did you mean 'm7i.2xlarge'?)",
    ),
    (
        "system-instance-type-invented",
        "dev",
        edit("gpu-platform:cluster.systemNodes", {"instanceType": "m9z.large", "min": 1, "desired": 2, "max": 3}),
        "gpu-platform:cluster.systemNodes.instanceType",
        "unknown EC2 instance type 'm9z.large'",
    ),
    (
        "label-node-role-domain",
        "prod",
        set_pool("infer-l4-spot", labels={"node-role.kubernetes.io/gpu": "true"}),
        "gpu-platform:nodePools[4].labels.node-role.kubernetes.io/gpu",
        "the kubelet refuses node label 'node-role.kubernetes.io/gpu'",
    ),
    (
        "label-k8s-io-subdomain",
        "dev",
        set_pool("dev-l4-spot", labels={"team.k8s.io/owner": "ml"}),
        "gpu-platform:nodePools[0].labels.team.k8s.io/owner",
        "the kubelet refuses node label",
    ),
    (
        "label-value-with-space",
        "prod",
        set_pool("infer-l4-spot", labels={"example.com/team": "ML Research"}),
        "gpu-platform:nodePools[4].labels.example.com/team",
        "label value 'ML Research' has characters Kubernetes refuses",
    ),
    (
        "label-prefix-uppercase",
        "prod",
        set_pool("infer-l4-spot", labels={"Example.com/team": "ml"}),
        "gpu-platform:nodePools[4].labels.Example.com/team",
        "prefix 'Example.com' is not a lowercase DNS subdomain",
    ),
    (
        "label-value-too-long",
        "dev",
        set_pool("dev-l4-spot", labels={"example.com/purpose": "x" * 64}),
        "gpu-platform:nodePools[0].labels.example.com/purpose",
        "is 64 characters",
    ),
    (
        "label-name-ends-with-dash",
        "onprem",
        set_pool("l40s-dev", labels={"example.com/rack-": "r12"}),
        "gpu-platform:nodePools[2].labels.example.com/rack-",
        "has characters Kubernetes refuses",
    ),
    (
        "label-empty-value-on-eks",
        "prod",
        set_pool("infer-l4-spot", labels={"example.com/canary": ""}),
        "gpu-platform:nodePools[4].labels.example.com/canary",
        "EKS labelValue has no empty form",
    ),
    (
        "label-key-longer-than-eks-allows",
        "prod",
        set_pool("infer-l4-spot", labels={"research.example.com/" + "k" * 50: "x"}),
        "gpu-platform:nodePools[4].labels.research.example.com/" + "k" * 50,
        "at most 63 with the prefix (EKS labelKey)",
    ),
    (
        "rule-label-value-invalid",
        "staging",
        set_cfg("gpu-platform:monitoring", {"ruleLabels": {"release": "kube prometheus stack"}}),
        "gpu-platform:monitoring.ruleLabels.release",
        "has characters Kubernetes refuses",
    ),
    ("tag-aws-prefix", "prod", set_cfg("gpu-platform:tags", {"aws:owner": "ml"}), "gpu-platform:tags.aws:owner", "reserved prefix 'aws:'"),
    ("tag-bad-characters", "dev", set_cfg("gpu-platform:tags", {"owner": "ml<team>"}), "gpu-platform:tags.owner", "characters AWS refuses (< >)"),
    ("tag-value-too-long", "dev", set_cfg("gpu-platform:tags", {"note": "n" * 257}), "gpu-platform:tags.note", "tag value is 257 characters"),
    (
        "secret-aws-access-key-in-tags",
        "prod",
        set_cfg("gpu-platform:tags", {"cost-center": "ml", "ci-user": "AKIAIOSFODNN7EXAMPLE"}),
        "gpu-platform:tags.ci-user",
        "looks like an AWS access key id in plain text",
    ),
    (
        "secret-aws-secret-key-in-tags",
        "dev",
        set_cfg("gpu-platform:tags", {"deploy": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}),
        "gpu-platform:tags.deploy",
        "looks like an AWS secret access key",
    ),
    (
        "secret-github-token-in-label",
        "prod",
        set_pool("infer-l4-spot", labels={"example.com/ci": "ghp_" + "a1B2" * 9}),
        "gpu-platform:nodePools[4].labels.example.com/ci",
        "looks like a GitHub token",
    ),
    (
        "secret-named-password-in-tags",
        "staging",
        set_cfg("gpu-platform:tags", {"db-password": "Hunter2Hunter2x"}),
        "gpu-platform:tags.db-password",
        "looks like a credential (the key is named 'db-password')",
    ),
    (
        "secret-slack-token-in-rule-labels",
        "dev",
        set_cfg("gpu-platform:monitoring", {"ruleLabels": {"release": "kube-prometheus-stack", "hook": "xoxb-1234567890-abcdefghij"}}),
        "gpu-platform:monitoring.ruleLabels.hook",
        "looks like a Slack token",
    ),
    (
        "secret-aws-provider-key-plain",
        "prod",
        set_cfg("aws:secretKey", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        "aws:secretKey",
        "wJal…(40 characters) looks like an AWS secret access key in plain text",
    ),
    (
        "versions-typo-top-level",
        "prod",
        set_cfg("gpu-platform:versions", {"nvidia_drivr": {"branch": "570"}}),
        "gpu-platform:versions.nvidia_drivr",
        "did you mean 'nvidia_driver'",
    ),
    (
        "versions-typo-in-chart",
        "prod",
        set_cfg("gpu-platform:versions", {"charts": {"kueue": {"verison": "0.19.2"}}}),
        "gpu-platform:versions.charts.kueue.verison",
        "did you mean 'version'",
    ),
    (
        "secure-value-where-plan-needs-it",
        "dev",
        set_pool("dev-l4-spot", instanceTypes=[{"secure": "v1:AAAA:ciphertext"}]),
        "gpu-platform:nodePools[0].instanceTypes[0]",
        "is a secret (secure:) value, which the offline tools cannot decrypt",
    ),
    (
        "secure-region",
        "dev",
        set_cfg("aws:region", {"secure": "v1:AAAA:ciphertext"}),
        "aws:region",
        "is a secret (secure:) value",
    ),
]


@pytest.mark.parametrize(("case", "base", "mutate", "key", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_bad_stack_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, base: str, mutate: Mutation, key: str, fragment: str
) -> None:
    assert_one_clear_line(tmp_path, capsys, case, base, mutate, key, fragment)


@pytest.mark.parametrize(
    ("case", "text", "fragment"),
    [
        ("empty", "", "file is empty"),
        ("comments-only", "# nothing here\n", "file is empty"),
        ("invalid-yaml", "config:\n  gpu-platform:environment: [prod\n", "invalid YAML"),
        ("tab-indent", "config:\n\tgpu-platform:environment: prod\n", "invalid YAML"),
        ("list-at-top", "- config\n", "top level is a list"),
        ("no-config", "secretsprovider: passphrase\n", "config: missing or not a mapping"),
        ("top-level-typo", "confg: {}\n", "did you mean 'config'"),
        ("not-utf8", "\udcff\udcfe", "not UTF-8 text"),
    ],
)
def test_malformed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, text: str, fragment: str) -> None:
    path = tmp_path / f"Pulumi.{case}.yaml"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    code, err = plan_errors(capsys, path)
    assert code == 2
    assert "Traceback" not in err
    unlocated(err.splitlines()[0], path)  # `<file>: ` or `<file>:<line>: `
    assert fragment in err


def test_missing_stack_names_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--stack", "does-not-exist"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("stacks/Pulumi.does-not-exist.yaml: --stack: no stack 'does-not-exist'; allowed: dev, multi, onprem, prod, staging")


def test_all_problems_reported_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(stack_path("prod").read_text())
    set_pool("infer-l4-spot", scaling={"min": 30, "desired": 30, "max": 24})(doc)
    set_pool("infer-h100-mig", sharing={"mode": "mig", "migConfig": "all-1g.5gb"})(doc)
    path = tmp_path / "Pulumi.two.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, err = plan_errors(capsys, path)
    assert code == 2
    assert len(err.strip().splitlines()) == 2


DUPLICATE_TENANTS = """config:
  aws:region: us-west-2
  gpu-platform:environment: dev
  gpu-platform:tenants:
    - name: ml-sandbox
  gpu-platform:tenants: []
"""


@pytest.mark.parametrize(
    ("case", "text", "key", "fragment"),
    [
        # PyYAML keeps the last of two equal keys; Go yaml.v3 (the Pulumi CLI) refuses them.
        ("second-tenants-drops-all", DUPLICATE_TENANTS, "gpu-platform:tenants", "duplicate key 'gpu-platform:tenants' on line 4 and line 6"),
        (
            "duplicate-pool-key",
            "config:\n  gpu-platform:nodePools:\n    - name: a\n      capacity: spot\n      capacity: reserved\n",
            "gpu-platform:nodePools[0].capacity",
            "duplicate key 'capacity' on line 4 and line 5",
        ),
        ("duplicate-config", "config: {}\nconfig:\n  gpu-platform:environment: dev\n", "config", "duplicate key 'config' on line 1 and line 2"),
        (
            "duplicate-nested-mapping",
            "config:\n  gpu-platform:cluster:\n    systemNodes: {min: 1, min: 3}\n",
            "gpu-platform:cluster.systemNodes.min",
            "duplicate key 'min' on line 3 and line 3",
        ),
    ],
)
def test_duplicate_keys_name_both_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, text: str, key: str, fragment: str) -> None:
    path = tmp_path / f"Pulumi.{case}.yaml"
    path.write_text(text)
    code, err = plan_errors(capsys, path)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert unlocated(lines[0], path)[1].startswith(f"{key}: "), lines[0]
    assert fragment in lines[0]
    assert "; allowed: each key once per mapping" in lines[0]


def test_a_key_that_overrides_a_yaml_merge_is_not_a_duplicate(tmp_path: Path) -> None:
    """`<<: *defaults` then `b: 3` is YAML's override, not a repeat (the loader parses once, and looks for
    repeats before construction merges the anchor's keys into the same mapping)."""
    path = tmp_path / "Pulumi.dev.yaml"
    merged = "config:\n  gpu-platform:probe:\n    <<: &defaults {a: 1, b: 2}\n    b: 3\n"
    path.write_text(stack_path("dev").read_text().replace("config:\n", merged, 1))
    config = read_stack_config(path)
    assert config["gpu-platform:probe"] == {"a": 1, "b": 3}


def test_repository_stacks_have_no_duplicate_keys() -> None:
    for name in ("dev", "staging", "prod", "onprem"):
        assert duplicate_keys(stack_path(name).read_text(), name) == []


def test_directory_as_config_says_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "Pulumi.dev.yaml").write_text(stack_path("dev").read_text())
    code, err = plan_errors(capsys, tmp_path)
    assert code == 2
    assert err.strip() == f"{tmp_path}: <root>: is a directory, not a stack file; allowed: a stack file, e.g. {tmp_path / 'Pulumi.dev.yaml'}"
    assert "file not found" not in err


@pytest.mark.parametrize(
    "mutate",
    [
        set_cfg("gpu-platform:tags", {"cost-center": "ml-dev", "owner-email": {"secure": "v1:AAAABBBB:ciphertext"}}),
        set_pool("dev-l4-spot", labels={"example.com/owner": {"secure": "v1:AAAABBBB:ciphertext"}}),
    ],
    ids=["tag-value", "label-value"],
)
def test_secure_values_are_accepted_like_pulumi_up_does(tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate: Mutation) -> None:
    """Pulumi `config/value.go` `isSecureValue`: a one-key `secure:` mapping is a secret that `pulumi up` decrypts."""
    doc = yaml.safe_load(stack_path("dev").read_text())
    mutate(doc)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = plan_errors(capsys, path)
    assert code == 0, err


def test_credential_is_masked_in_the_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    doc = yaml.safe_load(stack_path("dev").read_text())
    set_cfg("gpu-platform:tags", {"cost-center": "ml-dev", "deploy": secret})(doc)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = plan_errors(capsys, path)
    assert code == 2
    assert secret not in err and secret[4:] not in err
    assert "pulumi config set --secret" in err


def test_plain_labels_near_credential_words_are_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Credential detection must not refuse ordinary cost tags: a budget code, a feature switch, a commit id."""
    doc = yaml.safe_load(stack_path("dev").read_text())
    tags = {"token-budget": "Q4-2026-ml-team", "secret-scanning": "enabled", "git-commit": "0123456789abcdef0123456789abcdef01234567"}
    set_cfg("gpu-platform:tags", tags)(doc)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = plan_errors(capsys, path)
    assert code == 0, err
