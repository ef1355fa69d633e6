"""Every volume claim the releases render (helm template of the real charts) names a StorageClass the stack has."""

from __future__ import annotations

import pytest

from gpu_platform.behaviour.prometheus_operator import statefulset_claims
from tests.conftest import spec_for
from tests.k8s.helpers import objects
from tests.k8s.test_charts import rendered


@pytest.mark.parametrize("stack", ["prod", "onprem"])
def test_every_rendered_claim_names_the_stacks_class(stack: str) -> None:
    """PVCs and StatefulSet volumeClaimTemplates as the charts render them, and the claims prometheus-operator builds
    from Prometheus/Alertmanager `storage` (statefulset.go `makeStatefulSet`)."""
    spec = spec_for(stack)
    claims: list[tuple[str, dict]] = []
    for out in rendered(stack).values():
        for o in out.objects:
            if o["kind"] == "PersistentVolumeClaim":
                claims.append((f"{out.release.chart} PVC {o['metadata']['name']}", o["spec"]))
            elif o["kind"] == "StatefulSet":
                claims += [
                    (f"{out.release.chart} StatefulSet {o['metadata']['name']}", t["spec"]) for t in o["spec"].get("volumeClaimTemplates") or []
                ]
            elif o["kind"] in ("Prometheus", "Alertmanager"):
                claims += [(f"{out.release.chart} {o['kind']} {c['metadata']['name']}", c["spec"]) for c in statefulset_claims(o)]
    created = {o["metadata"]["name"] for o in objects(stack, "StorageClass")}
    for what, claim in claims:
        assert claim.get("storageClassName") == spec.storage_class, f"{what}: storageClassName {claim.get('storageClassName')!r}"
        if spec.is_eks:
            assert claim["storageClassName"] in created, f"{what}: class {claim['storageClassName']} is not created by the stack"
    if spec.monitoring.prometheus == "install":
        assert any("Prometheus" in w for w, _ in claims), "Prometheus keeps its data on a claim"
