"""Cases of the workload-path rules (issue 16): claims that bind, tenant namespaces that reach their data.

Kept apart from cases.py so these cases read together; cases.py appends them to CASES.
"""

from __future__ import annotations

from tests.policies.cases import Case, drop, drop_in, set_in

KPS = "monitoring-release"
SERVING_NS = "tenant-serving-namespace"
SERVING_AWS = "tenant-serving-netpol-allow-aws-services"
AGENT_ONLY = [{"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"port": 80}]}]
FSX_CLASS = "fsx-lustre-storageclass-fsx-lustre"
PROM_CLAIM = "values.prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec"

PATH_CASES: list[Case] = [
    Case("volume-claims-bind", "prod-compliant", "prod"),
    Case("volume-claims-bind", "onprem-compliant", "onprem"),
    # Today's main: no class named, no class created, no driver (EKS >= 1.30 has no default class).
    Case(
        "volume-claims-bind",
        "no-class-no-driver",
        "prod",
        (drop_in(KPS, f"{PROM_CLAIM}.storageClassName"), drop("platform-storageclass-gp3"), drop("ebs-csi-addon")),
        KPS,
        "names no StorageClass",
    ),
    Case("volume-claims-bind", "unknown-class", "prod", (set_in(KPS, f"{PROM_CLAIM}.storageClassName", "gp2"),), KPS, "'gp2' does not exist"),
    Case("volume-claims-bind", "no-ebs-addon", "prod", (drop("ebs-csi-addon"),), KPS, "no driver named 'ebs.csi.aws.com'"),
    Case("volume-claims-bind", "no-iam-policy", "prod", (drop("ebs-csi-policy-ebs"),), KPS, "lacks AmazonEBSCSIDriverPolicy"),
    Case(
        "volume-claims-bind", "no-pod-identity", "prod", (set_in("ebs-csi-addon", "podIdentityAssociations", []),), KPS, "no Pod Identity association"
    ),
    Case("volume-claims-bind", "no-agent", "prod", (drop("cluster-addon-eks-pod-identity-agent"),), KPS, "eks-pod-identity-agent add-on is missing"),
    # FSx for Lustre (prod asks for it): a tenant's claim on the class binds only with the add-on, its role, and
    # parameters aws-fsx-csi-driver's CreateVolume and FSx CreateFileSystem accept.
    Case("volume-claims-bind", "no-fsx-addon", "prod", (drop("fsx-lustre-addon"),), FSX_CLASS, "no driver named 'fsx.csi.aws.com'"),
    Case("volume-claims-bind", "fsx-no-policy", "prod", (drop("fsx-lustre-policy-fsx"),), FSX_CLASS, "lacks AmazonFSxFullAccess"),
    Case(
        "volume-claims-bind",
        "fsx-throughput-of-persistent-1",
        "prod",
        (set_in(FSX_CLASS, "parameters.perUnitStorageThroughput", "200"),),
        FSX_CLASS,
        "200 is not valid for PERSISTENT_2",
    ),
    Case(
        "volume-claims-bind",
        "fsx-throughput-not-a-number",
        "prod",
        (set_in(FSX_CLASS, "parameters.perUnitStorageThroughput", "250MBps"),),
        FSX_CLASS,
        "is not a number (CreateVolume: InvalidArgument)",
    ),
    Case(
        "volume-claims-bind",
        "fsx-misspelt-parameter",
        "prod",
        (set_in(FSX_CLASS, "parameters.deploymenttype", "SCRATCH_2"),),
        FSX_CLASS,
        "deploymenttype: not a parameter aws-fsx-csi-driver reads",
    ),
    Case("tenant-data-egress", "prod-compliant", "prod"),
    Case("tenant-data-egress", "onprem-compliant", "onprem"),
    Case(
        "tenant-data-egress",
        "no-aws-paths",
        "prod",
        (drop(SERVING_AWS),),
        SERVING_NS,
        "cannot reach S3",
    ),
    Case(
        "tenant-data-egress",
        "s3-off",
        "prod",
        (
            set_in(
                SERVING_AWS,
                "spec.egress",
                [{"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"port": 80}]}],
            ),
        ),
        SERVING_NS,
        "cannot reach S3",
    ),
    Case(
        "tenant-data-egress",
        "no-dns",
        "onprem",
        (drop("tenant-nlp-netpol-allow-dns"),),
        "tenant-nlp-namespace",
        "cannot reach DNS",
    ),
]
