"""Cases of the workload-path rules (issue 16): claims that bind, tenant namespaces that reach their data.

Kept apart from cases.py so these cases read together; cases.py appends them to CASES.
"""

from __future__ import annotations

from tests.policies.builders import DROP, Case, Edit, at, compliant, drop, fires, silent

KPS = "monitoring-release"
SERVING_NS = "tenant-serving-namespace"
SERVING_AWS = "tenant-serving-netpol-allow-aws-services"
SERVING_S3 = "tenant-serving-netpol-allow-s3"
AGENT_ONLY = [{"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"port": 80}]}]
FSX_CLASS = "fsx-lustre-storageclass-fsx-lustre"
PROM_CLAIM = "values.prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec"


def s3_policy_names(cidr: str) -> Edit:
    """serving's `allow-s3` with TCP 443 to `cidr` in place of the prefix list's CIDRs."""
    return at(SERVING_S3, {"spec.egress": [{"to": [{"ipBlock": {"cidr": cidr}}], "ports": [{"protocol": "TCP", "port": 443}]}]})


PATH_CASES: list[Case] = [
    *compliant("volume-claims-bind", "prod", "onprem"),
    # Today's main: no class named, no class created, no driver (EKS >= 1.30 has no default class).
    fires(
        "volume-claims-bind",
        "no-class-no-driver",
        at(KPS, {f"{PROM_CLAIM}.storageClassName": DROP}),
        drop("platform-storageclass-gp3"),
        drop("ebs-csi-addon"),
        on=KPS,
        says="names no StorageClass",
    ),
    fires(
        "volume-claims-bind",
        "unknown-class",
        at(KPS, {f"{PROM_CLAIM}.storageClassName": "gp2"}),
        on=KPS,
        says="Prometheus's volumeClaimTemplate stays Pending: class: StorageClass 'gp2' does not exist",
    ),
    fires("volume-claims-bind", "no-ebs-addon", drop("ebs-csi-addon"), on=KPS, says="no driver named 'ebs.csi.aws.com'"),
    fires("volume-claims-bind", "no-iam-policy", drop("ebs-csi-policy-ebs"), on=KPS, says="lacks AmazonEBSCSIDriverPolicy"),
    fires("volume-claims-bind", "no-pod-identity", at("ebs-csi-addon", {"podIdentityAssociations": []}), on=KPS, says="no Pod Identity association"),
    fires("volume-claims-bind", "no-agent", drop("cluster-addon-eks-pod-identity-agent"), on=KPS, says="eks-pod-identity-agent add-on is missing"),
    # FSx for Lustre (prod asks for it): a tenant's claim on the class binds only with the add-on, its role, and
    # parameters aws-fsx-csi-driver's CreateVolume and FSx CreateFileSystem accept.
    fires("volume-claims-bind", "no-fsx-addon", drop("fsx-lustre-addon"), on=FSX_CLASS, says="no driver named 'fsx.csi.aws.com'"),
    fires("volume-claims-bind", "fsx-no-policy", drop("fsx-lustre-policy-fsx"), on=FSX_CLASS, says="lacks AmazonFSxFullAccess"),
    fires(
        "volume-claims-bind",
        "fsx-throughput-of-persistent-1",
        at(FSX_CLASS, {"parameters.perUnitStorageThroughput": "200"}),
        on=FSX_CLASS,
        says="200 is not valid for PERSISTENT_2",
    ),
    fires(
        "volume-claims-bind",
        "fsx-throughput-not-a-number",
        at(FSX_CLASS, {"parameters.perUnitStorageThroughput": "250MBps"}),
        on=FSX_CLASS,
        says="is not a number (CreateVolume: InvalidArgument)",
    ),
    fires(
        "volume-claims-bind",
        "fsx-misspelt-parameter",
        at(FSX_CLASS, {"parameters.deploymenttype": "SCRATCH_2"}),
        on=FSX_CLASS,
        says="deploymenttype: not a parameter aws-fsx-csi-driver reads",
    ),
    *compliant("tenant-data-egress", "prod", "onprem"),
    fires(
        "tenant-data-egress",
        "no-aws-paths",
        drop(SERVING_AWS),
        on=SERVING_NS,
        says="pods in serving cannot reach the EKS Pod Identity agent (169.254.170.23:80)",
    ),
    fires(
        "tenant-data-egress",
        "no-s3-policy",
        drop(SERVING_S3),
        on=SERVING_NS,
        says="pods in serving cannot reach S3 (52.216.8.10:443 through the gateway endpoint)",
    ),
    # allow-s3 present, but its rule is never applied to egress (policyTypes): no path to S3.
    fires(
        "tenant-data-egress",
        "s3-policy-ingress-only",
        at(SERVING_S3, {"spec.policyTypes": ["Ingress"]}),
        on=SERVING_NS,
        says="pods in serving cannot reach S3 (52.216.8.10:443 through the gateway endpoint)",
    ),
    # allow-s3 naming what cannot be S3's prefix list: the probe would pass by construction, so the ranges are judged.
    fires(
        "tenant-data-egress",
        "s3-policy-names-a-private-range",
        s3_policy_names("192.0.2.0/24"),
        on=SERVING_NS,
        says="allow-s3 in serving names 192.0.2.0/24, which is not a public range",
    ),
    fires(
        "tenant-data-egress",
        "s3-policy-names-everything",
        s3_policy_names("0.0.0.0/0"),
        on=SERVING_NS,
        says="allow-s3 in serving names 0.0.0.0/0, which is every address",
    ),
    # The probe follows the prefix list the policy names (a real preview's region): a list elsewhere is judged there.
    silent("tenant-data-egress", "s3-prefix-list-of-the-preview", s3_policy_names("3.5.0.0/19")),
    fires(
        "tenant-data-egress",
        "no-dns",
        drop("tenant-nlp-netpol-allow-dns"),
        on="tenant-nlp-namespace",
        says="pods in nlp cannot reach DNS (kube-dns",
        stack="onprem",
    ),
]
