"""DRA pools (`allocation: dra`): each node runs the DRA driver or the device plugin, never both, and claims count.

Reproduced from upstream at the pinned versions: the GPU Operator's state labels (behaviour.gpu_operator), the DRA
driver chart's kubelet plugin DaemonSet as `helm template` renders it with the staging stack's values, Kueue's
Configuration validation and claim counting (behaviour.dra), and the spec checks that keep a DRA pool to what works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.behaviour import dra, gpu_operator, scheduler
from gpu_platform.catalog import load_catalog
from gpu_platform.errors import ConfigError
from gpu_platform.k8s.dra import CHART, claim_template, tenant_templates
from gpu_platform.pools import DRA_GPU_RESOURCE, LABEL_ALLOCATION, node_labels
from gpu_platform.spec.loader import load_stack_file
from tests.conftest import plan_for, spec_for, stack_path
from tests.k8s import charts
from tests.k8s.helpers import helm_values, one

CATALOG = load_catalog()
DRA_POOL = "batch-l40s-dra"
# Node feature discovery (the GPU Operator's NFD) labels every node with an NVIDIA PCI device so; the DRA chart's
# default affinity requires it (or nvidia.com/gpu.present).
NFD = {"feature.node.kubernetes.io/pci-10de.present": "true"}


def _kubelet_plugin_pod() -> dict[str, Any]:
    plan = plan_for("staging")
    release = next(r for r in charts.releases(plan) if r.chart == CHART)
    rendered = charts.template(release, spec_for("staging").lock.kubernetes.version, ())
    ds = next(d for d in rendered.objects if d["kind"] == "DaemonSet" and "kubelet-plugin" in d["metadata"]["name"])
    return dict(ds["spec"]["template"]["spec"])


def test_each_gpu_node_runs_the_dra_driver_or_the_device_plugin_never_both() -> None:
    """Staging: the DRA pool's nodes run the chart's kubelet plugin and not the operator's device plugin; every other
    GPU pool the reverse. Without the pool's `device-plugin=false` label both would run there (the chart's own
    validation.yaml refuses to install unless told the device plugin is off on its nodes)."""
    charts.require_helm()
    pod = _kubelet_plugin_pod()
    spec = spec_for("staging")
    for pool in spec.node_pools:
        labels = {**node_labels(pool, CATALOG), **NFD}
        dra_driver = (
            scheduler.affinity_matches(pod, labels)
            and scheduler.untolerated_taint([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], pod.get("tolerations") or [])
            is None
        )
        assert dra_driver == (pool.allocation == "dra"), pool.name
        assert gpu_operator.runs_device_plugin(labels) == (pool.allocation != "dra"), pool.name
    dra_pool = spec.pool(DRA_POOL)
    without = {k: v for k, v in node_labels(dra_pool, CATALOG).items() if k != "nvidia.com/gpu.deploy.device-plugin"}
    assert gpu_operator.runs_device_plugin(without)  # the label is what keeps the device plugin off


def test_kueue_counts_the_platform_templates_and_its_configuration_starts() -> None:
    """Kueue's manager config validates (pkg/config/validation.go) and maps the class the templates claim; each
    template counts its GPUs under the name the DRA pool's flavor covers; the extended-resource path is off."""
    values = helm_values("staging", "kueue")
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    mappings = config["resources"]["deviceClassMappings"]
    assert dra.mapping_errors(mappings) == []
    assert {"name": "KueueDRAIntegrationExtendedResource", "enabled": False} in values["controllerManager"]["featureGates"]
    spec = spec_for("staging")
    research = next(t for t in spec.tenants if t.name == "research")
    # staging's DRA nodes hold one GPU each: only `gpu` is rendered (a larger claim could never be placed)
    assert [t["metadata"]["name"] for t in tenant_templates(spec, research)] == ["gpu"]
    templates = {name: claim_template(name, "research", n) for name, n in (("gpu", 1), ("gpu-2", 2), ("gpu-4", 4), ("gpu-8", 8))}
    for name, gpus in (("gpu", 1), ("gpu-2", 2), ("gpu-4", 4), ("gpu-8", 8)):
        pod = {"resourceClaims": [{"name": "g", "resourceClaimTemplateName": name}]}
        assert dra.kueue_claim_requests(pod, templates, mappings).requests == {DRA_GPU_RESOURCE: gpus}
        assert dra.kueue_claim_requests(pod, templates, []).error is not None  # unmapped: inadmissible
    cq = one("staging", "ClusterQueue", "research")
    covered = [g for g in cq["spec"]["resourceGroups"] if DRA_GPU_RESOURCE in g["coveredResources"]]
    assert [f["name"] for g in covered for f in g["flavors"]] == [DRA_POOL]
    quota = one("staging", "ResourceQuota", "gpu-quota", "research")["spec"]["hard"]
    assert quota["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "2"
    assert quota["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == "0"
    assert "requests.dra.gpu-platform.io/gpu" not in quota  # no extended resource of that name exists to count


@pytest.mark.parametrize(
    ("mappings", "error"),
    [
        ([{"name": "not a key!", "deviceClassNames": ["gpu.nvidia.com"]}], "name part must consist"),
        ([{"name": "a/gpu", "deviceClassNames": []}], "at least one device class name is required"),
        ([{"name": "a/x", "deviceClassNames": ["gpu.nvidia.com"]}, {"name": "a/y", "deviceClassNames": ["gpu.nvidia.com"]}], "already mapped"),
        ([{"name": "a/x", "deviceClassNames": ["c"]}, {"name": "a/x", "deviceClassNames": ["d"]}], "Duplicate value"),
        ([{"name": f"a/x{i}", "deviceClassNames": [f"c{i}"]} for i in range(17)], "at most 16 items"),
        ([{"name": "a/x", "deviceClassNames": [f"c{i}" for i in range(9)]}], "at most 8 items"),
    ],
)
def test_kueue_refuses_bad_mappings(mappings: list[dict[str, Any]], error: str) -> None:
    assert any(error in e for e in dra.mapping_errors(mappings)), dra.mapping_errors(mappings)


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        ({"name": "g", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com"}]}, "FirstAvailable device selection is not supported"),
        ({"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}, "AllocationMode 'All' is not supported"),
        ({"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "adminAccess": True}}, "AdminAccess is not supported"),
    ],
)
def test_kueue_refuses_claims_it_cannot_count(request_: dict[str, Any], error: str) -> None:
    """pkg/dra/claims.go countDevicesPerClass: the forms a template may take that Kueue leaves inadmissible."""
    templates = {"t": {"spec": {"spec": {"devices": {"requests": [request_]}}}}}
    claims = dra.kueue_claim_requests({"resourceClaims": [{"name": "c", "resourceClaimTemplateName": "t"}]}, templates, [])
    assert claims.error is not None and error in claims.error


def _with_pool(tmp_path: Path, **changes: Any) -> Path:
    doc = yaml.safe_load(stack_path("staging").read_text())
    pool = next(p for p in doc["config"]["gpu-platform:nodePools"] if p["name"] == DRA_POOL)
    pool.update(changes)
    out = tmp_path / "Pulumi.dra.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


@pytest.mark.parametrize(
    ("changes", "where", "allowed"),
    [
        ({"sharing": {"mode": "mig", "migConfig": "all-1g.24gb"}}, "sharing.mode", "allowed: none"),
        ({"sharing": {"mode": "time-slicing", "replicas": 4}}, "sharing.mode", "allowed: none"),
        ({"scaling": {"min": 0, "desired": 1, "max": 2}}, "scaling", "allowed: min = max"),
        ({"wholeNodes": True}, "wholeNodes", "allowed: false"),
        ({"allocation": "draa"}, "allocation", "device-plugin"),
    ],
)
def test_a_dra_pool_is_kept_to_what_works(tmp_path: Path, changes: dict[str, Any], where: str, allowed: str) -> None:
    """One line per problem naming the key path and what is allowed (exit 2 in the CLI), never a half-built stack."""
    with pytest.raises(ConfigError) as e:
        load_stack_file(_with_pool(tmp_path, **changes), "dra")
    text = str(e.value)
    assert f"nodePools[4].{where}" in text and allowed in text, text


def test_dra_nodes_are_labelled_for_the_driver() -> None:
    labels = node_labels(spec_for("staging").pool(DRA_POOL), CATALOG)
    assert labels[LABEL_ALLOCATION] == "dra" and labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    for pool in spec_for("prod").node_pools:  # stacks without DRA pools are unchanged
        assert LABEL_ALLOCATION not in node_labels(pool, CATALOG)


def test_claim_templates_stop_at_what_one_node_holds(tmp_path: Path) -> None:
    """The DRA pool on p4d.24xlarge (8 A100s a node): gpu, gpu-2, gpu-4 and gpu-8; on g6e.xlarge (1 L40S): gpu alone."""
    spec = load_stack_file(_with_pool(tmp_path, instanceTypes=["p4d.24xlarge"]), "dra")
    research = next(t for t in spec.tenants if t.name == "research")
    assert [t["metadata"]["name"] for t in tenant_templates(spec, research, CATALOG)] == ["gpu", "gpu-2", "gpu-4", "gpu-8"]
    inference = next(t for t in spec.tenants if t.name == "inference")  # no quota on the DRA pool: no templates
    assert tenant_templates(spec, inference, CATALOG) == []


@pytest.mark.parametrize(
    ("changes", "where", "allowed"),
    [
        ({"capacity": "spot", "instanceTypes": ["g6e.xlarge", "g6e.2xlarge"]}, "capacity", "allowed: reserved or on-demand"),
    ],
)
def test_a_dra_pool_is_bought_whole(tmp_path: Path, changes: dict[str, Any], where: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_stack_file(_with_pool(tmp_path, **changes), "dra")
    assert f"nodePools[4].{where}" in str(e.value) and allowed in str(e.value), str(e.value)


def test_no_dra_pool_on_an_existing_cluster(tmp_path: Path) -> None:
    """On-prem nodes are released after maintenance once they report nvidia.com/gpu (ansible k8s_node_maintenance)."""
    doc = yaml.safe_load(stack_path("onprem").read_text())
    doc["config"]["gpu-platform:nodePools"][0]["allocation"] = "dra"
    out = tmp_path / "Pulumi.onprem-dra.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ConfigError) as e:
        load_stack_file(out, "onprem-dra")
    assert "nodePools[0].allocation" in str(e.value) and "dra on an existing (on-prem) cluster" in str(e.value)


def test_stacks_without_dra_pools_keep_the_admission_policy_as_it_was() -> None:
    """Only a stack with DRA pools counts claims as asking a GPU and refuses named claims and Volcano claims."""
    policies = {s: one(s, "ValidatingAdmissionPolicy", "gpu-platform-gpu-nodes-for-gpu-work") for s in ("staging", "prod")}
    assert "resourceClaims" in yaml.safe_dump(policies["staging"])
    assert "resourceClaims" not in yaml.safe_dump(policies["prod"])
