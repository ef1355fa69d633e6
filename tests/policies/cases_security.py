"""Cases of the security and GPU-hygiene rules: each starts from a repository stack's plan and changes one thing.

Kept apart so the security and GPU-hygiene rules' cases read together; tests/policies/cases.py joins every module's cases into CASES.
"""

from __future__ import annotations

from gpu_platform_policies import Resource
from tests.policies.builders import (
    DROP,
    LT,
    NG,
    ONPREM_H100,
    ONPREM_PATCH,
    SG_INGRESS,
    SPOT_NG,
    Case,
    Edit,
    add,
    at,
    compliant,
    drop,
    fires,
    privileged_deployment,
    silent,
)


def public_cidrs(*cidrs: str) -> Edit:
    """The cluster's API endpoint made public to these CIDRs."""
    return at("cluster-eks", {"vpcConfig.endpointPublicAccess": True, "vpcConfig.publicAccessCidrs": list(cidrs)})


SECURITY_CASES: list[Case] = [
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
        says="pool hgx-a100-mig time-slices or MPS-shares ('time-slicing-4') and uses MIG ('all-1g.10gb'); choose one",
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
]
