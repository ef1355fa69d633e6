"""Journey: `explain` tells a tenant whether its pods reach DNS, the API server and their data.

The network stage asks gpu_platform.behaviour.networkpolicy (Kubernetes docs "Network Policies": a
connection needs the source's egress and the destination's ingress; isolation only where a policy selects
the pod; rules are a union) about each path gpu_platform.k8s.tenant_network.destinations lists, over the
same NetworkPolicies `render` writes.
"""

from __future__ import annotations

import pytest
import yaml

from gpu_platform.explain.stages import explain
from gpu_platform.explain.view import StackView
from tests.conftest import ROOT
from tests.journeys.journey import view, walk

EXAMPLE = yaml.safe_load((ROOT / "examples" / "workloads" / "batch-spot.yaml").read_text())


def _network(e):  # type: ignore[no-untyped-def]
    step = e.step("network")
    assert step is not None, "stage network: explain did not reach the network stage: " + " -> ".join(s.stage for s in e.steps)
    return step


def test_a_prod_batch_job_reaches_dns_api_pod_identity_and_s3() -> None:
    step = _network(walk("prod", EXAMPLE))
    assert step.result == "ok", f"stage network: {step.detail}"
    for path in (
        "DNS (kube-dns) 172.20.0.10:53/UDP",
        "Kubernetes API (kubernetes.default) 172.20.0.1:443/TCP",
        "Kubernetes API endpoint ENI (by hostname) 10.40.0.20:443",
        "EKS Pod Identity agent 169.254.170.23:80",
        "S3 (gateway endpoint)",
    ):
        assert path in step.detail, f"stage network: {path} missing from {step.detail}"


@pytest.mark.parametrize(
    ("dropped", "closed"),
    # Without allow-kubernetes-api the ENIs stay reachable (allow-aws-services opens the VPC on 443), kubernetes.default does not.
    [
        ("allow-dns", "DNS (kube-dns)"),
        ("allow-aws-services", "EKS Pod Identity agent"),
        ("allow-s3", "S3 (gateway endpoint)"),
        ("allow-kubernetes-api", "Kubernetes API (kubernetes.default)"),
    ],
)
def test_a_closed_path_is_named_as_a_warning(dropped: str, closed: str) -> None:
    """Without one of the platform's policies the default deny closes that path, and explain says which."""
    base = view("prod")
    namespace = EXAMPLE["metadata"]["namespace"]

    class Without(StackView):
        @property  # type: ignore[misc]
        def objects(self):  # type: ignore[no-untyped-def,override]
            return [
                o
                for o in base.objects
                if not (o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == dropped and o["metadata"]["namespace"] == namespace)
            ]

    step = _network(explain(Without(base.spec, base.catalog), EXAMPLE))
    assert step.result == "warning", f"stage network: expected a warning without {dropped}: {step.detail}"
    unreachable = step.detail.split("; they reach")[0]
    assert closed in unreachable, f"stage network: {closed} not named as unreachable: {step.detail}"


def test_an_onprem_workload_reaches_its_api_servers_and_declared_egress() -> None:
    spec = view("onprem").spec
    tenant = next(t for t in spec.tenants if t.network.egress)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "reader", "namespace": tenant.ns},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "reader"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]},
            }
        },
    }
    step = _network(walk("onprem", job))
    assert step.result == "ok", f"stage network: {step.detail}"
    assert "Kubernetes API" in step.detail and "network.egress[0]" in step.detail, step.detail
