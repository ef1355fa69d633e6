"""Journey: Prometheus's data claim binds, so Prometheus runs (issue 16, item 7).

Relies on: Helm rendering the real kube-prometheus-stack chart (`helm template`, as pulumi-kubernetes'
helm.v3.Release installs it); prometheus-operator turning `Prometheus.spec.storage.volumeClaimTemplate` into the
StatefulSet's claim (behaviour.prometheus_operator `statefulset_claims`); the DefaultStorageClass admission
plugin, PV controller and external-provisioner (behaviour.storage `claim_binds`); the EBS CSI add-on's
controller getting AWS credentials from EKS Pod Identity (its association and role, with AmazonEBSCSIDriverPolicy).
"""

from __future__ import annotations

from gpu_platform.behaviour.prometheus_operator import statefulset_claims
from gpu_platform.behaviour.storage import claim_binds
from gpu_platform_policies import PlanView, Resource
from gpu_platform_policies.rules.paths import installed_drivers
from tests.conftest import plan_for, spec_for
from tests.journeys.helpers import chart_objects, manifests, stage


def test_prometheus_claim_binds_on_prod() -> None:
    stack = "prod"
    spec = spec_for(stack)
    prometheus = next(o for o in chart_objects(stack, "kube-prometheus-stack") if o["kind"] == "Prometheus")
    claims = statefulset_claims(prometheus)
    stage("the chart renders a data claim for Prometheus", len(claims) == 1, f"Prometheus.spec.storage is {prometheus['spec'].get('storage')}")
    claim = claims[0]["spec"]
    stage(
        "the claim names the stack's StorageClass",
        claim.get("storageClassName") == spec.storage_class,
        f"storageClassName is {claim.get('storageClassName')!r}",
    )
    classes = [o for o in manifests(stack) if o["kind"] == "StorageClass"]
    names = [c["metadata"]["name"] for c in classes]
    stage("the class exists", spec.storage_class in names, f"the stack creates {names}")
    sc = next(c for c in classes if c["metadata"]["name"] == spec.storage_class)
    stage(
        "the class is encrypted gp3, zonal binding, expandable",
        sc["parameters"].get("encrypted") == "true"
        and sc["parameters"].get("type") == "gp3"
        and sc["volumeBindingMode"] == "WaitForFirstConsumer"
        and sc["allowVolumeExpansion"] is True,
        str(sc),
    )
    drivers = installed_drivers(PlanView(Resource(r.type, r.name, r.parent, r.inputs) for r in plan_for(stack).resources)) or {}
    stage("the class's provisioner is installed", sc["provisioner"] in drivers, f"installed: {sorted(drivers)}")
    binding = claim_binds(claim, classes, drivers)
    stage("the provisioner has its IAM role (Pod Identity)", binding.binds, binding.reason)


def test_an_unnamed_claim_gets_the_default_class_on_prod() -> None:
    """A tenant's claim (or a chart's) naming no class: the DefaultStorageClass admission gives it the stack's gp3."""
    stack = "prod"
    classes = [o for o in manifests(stack) if o["kind"] == "StorageClass"]
    drivers = installed_drivers(PlanView(Resource(r.type, r.name, r.parent, r.inputs) for r in plan_for(stack).resources)) or {}
    binding = claim_binds({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}, classes, drivers)
    stage("a claim without storageClassName binds through the default class", binding.binds and binding.storage_class == "gp3", binding.reason)


def test_onprem_names_the_clusters_class_and_creates_none() -> None:
    """On-prem the class is the cluster's (`storage.className`); the stack creates no StorageClass."""
    stack = "onprem"
    spec = spec_for(stack)
    stage(
        "the stack names the cluster's class",
        spec.storage_class == spec.storage.class_name is not None,
        f"storage.className is {spec.storage.class_name}",
    )
    created = [o["metadata"]["name"] for o in manifests(stack) if o["kind"] == "StorageClass"]
    stage("no StorageClass is created on an existing cluster", created == [], f"created {created}")
