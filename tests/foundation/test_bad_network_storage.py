"""Bad values of the tenant network and storage settings (issue 16): one line naming file and key path, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.foundation.bad_stack import assert_one_clear_line


def _tenant(doc: dict[str, Any], index: int) -> dict[str, Any]:
    return doc["config"]["gpu-platform:tenants"][index]


CASES: list[tuple[str, str, Any, str, str]] = [
    (
        "existing-vpc-without-cidr",
        "prod",
        lambda d: d["config"].__setitem__(
            "gpu-platform:network",
            {"mode": "existing", "vpcId": "vpc-0a1b2c3d", "subnets": {"us-east-1a": "subnet-0a1b2c3d", "us-east-1b": "subnet-0e1f2a3b"}},
        ),
        "gpu-platform:network.cidr",
        "required when network.mode is existing",
    ),
    (
        "egress-bad-cidr",
        "prod",
        lambda d: _tenant(d, 0).__setitem__("network", {"egress": [{"cidrs": ["10.0.0.1/8"], "ports": [443]}]}),
        "gpu-platform:tenants[0].network.egress[0].cidrs[0]",
        "not an IPv4 network",
    ),
    # Kubernetes takes only an `except` strictly inside its ipBlock's cidr (ValidateIPBlock); one that covers the
    # cidr was dropped, which opened the very range the stack excluded.
    (
        "egress-except-covers-the-cidr",
        "prod",
        lambda d: _tenant(d, 0).__setitem__("network", {"egress": [{"cidrs": ["10.20.0.0/24"], "except": ["10.0.0.0/8"], "ports": [443]}]}),
        "gpu-platform:tenants[0].network.egress[0].except[0]",
        "10.0.0.0/8 is not strictly inside any of cidrs",
    ),
    (
        "egress-except-equals-the-cidr",
        "prod",
        lambda d: _tenant(d, 0).__setitem__("network", {"egress": [{"cidrs": ["10.20.0.0/24"], "except": ["10.20.0.0/24"], "ports": [443]}]}),
        "gpu-platform:tenants[0].network.egress[0].except[0]",
        "10.20.0.0/24 is also one of cidrs, which opens it whole",
    ),
    (
        "egress-except-is-another-cidr",
        "prod",
        lambda d: _tenant(d, 0).__setitem__(
            "network", {"egress": [{"cidrs": ["0.0.0.0/0", "10.1.0.0/16"], "except": ["10.1.0.0/16"], "ports": [443]}]}
        ),
        "gpu-platform:tenants[0].network.egress[0].except[0]",
        "10.1.0.0/16 is also one of cidrs, which opens it whole",
    ),
    (
        "egress-port-zero",
        "prod",
        lambda d: _tenant(d, 0).__setitem__("network", {"egress": [{"cidrs": ["0.0.0.0/0"], "ports": [0]}]}),
        "gpu-platform:tenants[0].network.egress[0].ports[0]",
        "",
    ),
    (
        "egress-no-ports",
        "prod",
        lambda d: _tenant(d, 0).__setitem__("network", {"egress": [{"cidrs": ["0.0.0.0/0"], "ports": []}]}),
        "gpu-platform:tenants[0].network.egress[0].ports",
        "no ports",
    ),
    (
        "egress-protocol",
        "prod",
        lambda d: _tenant(d, 0).__setitem__("network", {"egress": [{"cidrs": ["0.0.0.0/0"], "ports": [443], "protocol": "ICMP"}]}),
        "gpu-platform:tenants[0].network.egress[0].protocol",
        "",
    ),
    (
        "ingress-namespace-not-dns",
        "prod",
        lambda d: _tenant(d, 2).__setitem__("network", {"ingress": {"namespaces": ["Ingress_Nginx"]}}),
        "gpu-platform:tenants[2].network.ingress.namespaces[0]",
        "",
    ),
    (
        "ingress-ports-without-source",
        "prod",
        lambda d: _tenant(d, 2).__setitem__("network", {"ingress": {"ports": [8080]}}),
        "gpu-platform:tenants[2].network.ingress.ports",
        "ports given but no source",
    ),
    (
        "ingress-vpc-on-every-port",
        "prod",
        lambda d: _tenant(d, 2).__setitem__("network", {"ingress": {"vpc": True}}),
        "gpu-platform:tenants[2].network.ingress.ports",
        "admits the whole VPC on every port",
    ),
    (
        "ingress-vpc-onprem",
        "onprem",
        lambda d: _tenant(d, 1).__setitem__("network", {"ingress": {"vpc": True}}),
        "gpu-platform:tenants[1].network.ingress.vpc",
        "only on EKS stacks",
    ),
    (
        "onprem-without-api-servers",
        "onprem",
        lambda d: d["config"]["gpu-platform:cluster"].pop("apiServerCidrs"),
        "gpu-platform:cluster.apiServerCidrs",
        "required for tenants on an existing cluster",
    ),
    (
        "api-servers-on-eks",
        "prod",
        lambda d: d["config"]["gpu-platform:cluster"].__setitem__("apiServerCidrs", ["10.40.0.10/32"]),
        "gpu-platform:cluster.apiServerCidrs",
        "only for cluster.provider existing",
    ),
    (
        "onprem-prometheus-without-class",
        "onprem",
        lambda d: (d["config"].pop("gpu-platform:storage"), d["config"]["gpu-platform:monitoring"].__setitem__("prometheus", "install")),
        "gpu-platform:storage.className",
        "required where the stack installs Prometheus",
    ),
    (
        "bad-class-name",
        "prod",
        lambda d: d["config"].__setitem__("gpu-platform:storage", {"className": "GP3 fast"}),
        "gpu-platform:storage.className",
        "",
    ),
    # storage.fsxLustre: the parameters its class would carry, judged as aws-fsx-csi-driver and FSx judge them.
    (
        "fsx-throughput-for-the-deployment-type",
        "prod",
        lambda d: _fsx(d, {"enabled": True, "deploymentType": "PERSISTENT_1", "perUnitStorageThroughput": 250}),
        "gpu-platform:storage.fsxLustre.perUnitStorageThroughput",
        "250 is not valid for PERSISTENT_1",
    ),
    (
        "fsx-throughput-on-scratch",
        "prod",
        lambda d: _fsx(d, {"enabled": True, "deploymentType": "SCRATCH_2", "perUnitStorageThroughput": 125}),
        "gpu-platform:storage.fsxLustre.perUnitStorageThroughput",
        "only PERSISTENT_1 and PERSISTENT_2 take it",
    ),
    (
        "fsx-unknown-deployment-type",
        "prod",
        lambda d: _fsx(d, {"enabled": True, "deploymentType": "PERSISTENT_3"}),
        "gpu-platform:storage.fsxLustre.deploymentType",
        "",
    ),
    (
        "fsx-zone-outside-the-cluster",
        "prod",
        lambda d: _fsx(d, {"enabled": True, "zone": "us-west-2a"}),
        "gpu-platform:storage.fsxLustre.zone",
        "not a zone of the cluster",
    ),
    (
        "fsx-on-an-existing-cluster",
        "onprem",
        lambda d: d["config"]["gpu-platform:storage"].__setitem__("fsxLustre", {"enabled": True}),
        "gpu-platform:storage.fsxLustre.enabled",
        "EKS stacks only",
    ),
]


def _fsx(doc: dict[str, Any], fsx: dict[str, Any]) -> None:
    doc["config"]["gpu-platform:storage"] = {"fsxLustre": fsx}


@pytest.mark.parametrize(("case", "base", "mutate", "key", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_bad_value_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, base: str, mutate: Any, key: str, fragment: str
) -> None:
    assert_one_clear_line(tmp_path, capsys, case, base, mutate, key, fragment)
