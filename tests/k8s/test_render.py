"""`gpu-platform render`: every object of every stack is well-formed for the stack's Kubernetes version."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpu_platform.cli import main
from gpu_platform.commands.render import MANIFEST, render_plan, write_files
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


def test_render_removes_only_the_files_it_wrote(tmp_path: Path) -> None:
    """A second render removes what the first wrote and it no longer writes; a user's files in the same folders survive."""
    files = render_plan(plan_for("onprem"))
    mine = tmp_path / "manifests/_cluster/namespace-my-team.yaml"  # the user's own file, beside rendered ones
    mine.parent.mkdir(parents=True)
    mine.write_text("kind: Namespace\n")
    notes = tmp_path / "helm/NOTES.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("our notes\n")
    first = write_files(tmp_path, files, "onprem")
    assert first.removed == () and mine.exists() and notes.exists()
    recorded = json.loads((tmp_path / MANIFEST).read_text())["files"]
    assert set(recorded) == set(files)

    patches = sorted(rel for rel in files if rel.startswith("patches/"))
    gone, edited = patches[0], patches[1]  # two objects the next render no longer writes; one was edited by hand
    (tmp_path / edited).write_text((tmp_path / edited).read_text() + "# tuned by hand\n")
    second = write_files(tmp_path, {k: v for k, v in files.items() if k not in (gone, edited)}, "onprem")
    assert second.removed == (gone,), "the file the first render wrote and the second does not is removed"
    assert not (tmp_path / gone).exists()
    assert second.kept == (edited,) and (tmp_path / edited).exists(), "a rendered file changed since is someone's: kept"
    assert mine.read_text() == "kind: Namespace\n" and notes.read_text() == "our notes\n", "the user's files survive"
    patch = yaml.safe_load((tmp_path / patches[2]).read_text())
    assert patch["kind"] and patch["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "default"


def test_render_manifest_cannot_delete_outside_its_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hand-edited manifest naming other files removes nothing; one that is not a manifest is one line, exit 2."""
    precious = tmp_path / "keep.yaml"
    precious.write_text("x: 1\n")
    sha = hashlib.sha256(precious.read_bytes()).hexdigest()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / MANIFEST).write_text(json.dumps({"files": {"../keep.yaml": sha, "keep.yaml": sha}}))
    write_files(tmp_path / "out", {"manifests/_cluster/namespace-a.yaml": {"kind": "Namespace"}})
    assert precious.exists()
    (tmp_path / "out" / MANIFEST).write_text("[]")
    assert main(["render", "--config", str(ROOT / "stacks/Pulumi.dev.yaml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"{tmp_path / 'out' / MANIFEST}: files: not a render manifest; delete the file: the next render starts afresh\n"
