"""`gpu-platform render`: every object of every stack is well-formed for the stack's Kubernetes version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpu_platform.commands.render import render_plan, write_files
from tests.conftest import ROOT, plan_for, require_shared_crds, spec_for
from tests.k8s.helpers import crd_schemas, is_builtin, objects, rendered

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def test_core_objects_validate_strictly(stack: str) -> None:
    version = spec_for(stack).lock.kubernetes.version
    core = [o for o in objects(stack) if is_builtin(o["apiVersion"])]
    assert {o["kind"] for o in core} >= {"Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy", "ConfigMap", "PriorityClass"}
    for obj in core:
        kubernetes_validate.validate(obj, version, strict=True)
        assert DNS_SUBDOMAIN.match(obj["metadata"]["name"]), obj["metadata"]["name"]


def test_custom_resources_validate_against_upstream_crds(stack: str) -> None:
    schemas = crd_schemas(require_shared_crds())
    custom = [o for o in objects(stack) if not is_builtin(o["apiVersion"])]
    assert custom, "the platform renders Kueue/monitoring custom resources"
    for obj in custom:
        key = (obj["apiVersion"], obj["kind"])
        assert key in schemas, f"no CRD in shared/crds for {key}: the render uses an API version upstream does not serve"
        body = {k: v for k, v in obj.items() if k != "metadata"}
        jsonschema.Draft7Validator(schemas[key]).validate(body | {"metadata": {}})
        assert DNS_SUBDOMAIN.match(obj["metadata"]["name"])


def test_strict_crd_schema_rejects_unknown_fields() -> None:
    schemas = crd_schemas(require_shared_crds())
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {}, "spec": {"nodeLabel": {"a": "b"}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schemas[("kueue.x-k8s.io/v1beta2", "ResourceFlavor")]).validate(flavor)


def test_render_is_the_plan(stack: str) -> None:
    # What is rendered is exactly what the plan records for each kubernetes:* object.
    plan = plan_for(stack)
    docs = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in objects(stack)}
    for r in plan.resources:
        if r.type.startswith("kubernetes:") and "apiVersion" in r.inputs:
            key = (r.inputs["kind"], r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"])
            assert docs[key] == r.inputs


def test_helm_values_and_release_pins(stack: str) -> None:
    lock = spec_for(stack).lock
    files = rendered(stack)
    for rel, doc in files.items():
        if rel.endswith("/release.yaml"):
            key = {"gpu-operator": "gpu-operator", "kueue": "kueue", "volcano": "volcano"}.get(doc["name"], doc["name"])
            assert doc["version"] == lock.chart(key).version
            assert doc["repository"] == lock.chart(key).repository
    assert "helm/gpu-operator/values.yaml" in files


def test_render_command_writes_files_and_exit_codes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "gpu_platform.cli", "render", "--stack", "dev", "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    # Time-slicing x4 per GPU; each pool's ceiling is the borrowing limit, or the cohort's total without one.
    quota = yaml.safe_load((out / "manifests/ml-sandbox/resourcequota-gpu-quota.yaml").read_text())
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu.shared"] == str(4 * (4 + 2) + 4 * (2 + 2) + 4 * (1 + 1))
    assert (out / "helm/gpu-operator/values.yaml").is_file()
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text((ROOT / "stacks/Pulumi.dev.yaml").read_text().replace("pool: dev-l4-spot, gpus: 4", "pool: dev-l4-spoot, gpus: 4"))
    done = subprocess.run([*cmd[:3], "render", "--config", str(bad), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "dev-l4-spoot" in done.stderr and "Traceback" not in done.stderr


def test_write_files_replaces_a_previous_render(tmp_path: Path) -> None:
    stale = tmp_path / "manifests/old/namespace-gone.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text("kind: Namespace\n")
    write_files(tmp_path, render_plan(plan_for("onprem")))
    assert not stale.exists()
    patch = yaml.safe_load((tmp_path / "patches/node-dgx-h100-01.yaml").read_text())
    assert patch["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "default"
