"""A golden image as an EKS pool's AMI: the node group EKS accepts, the bootstrap the image runs, the gate's judgement."""

from __future__ import annotations

import base64
import copy
import dataclasses
import email
import json
import os
import shlex
from datetime import date
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from gpu_platform.aws import golden_image
from gpu_platform.behaviour.image_manifest import CUSTOM_AMI_ABSENT
from gpu_platform.commands.versions import pins
from gpu_platform.engine import Plan
from gpu_platform.errors import ConfigError
from gpu_platform.spec.loader import read_stack_config, spec_from_config
from gpu_platform.versions import load_lockfile
from gpu_platform_policies import Context, Resource, Violation, evaluate
from tests.conftest import stack_path
from tests.policies.cases import context
from tests.policies.golden import (
    AMI,
    MANIFEST,
    POOL,
    REGION,
    RUN,
    golden_config,
    golden_plan,
    golden_resources,
    image_manifest,
    packer_manifest,
    write_image_files,
)

RULE = "golden-image-matches-lockfile"


def _config(image: dict[str, Any] | None = None) -> dict[str, Any]:
    return golden_config(image)


def _plan() -> Plan:
    return golden_plan()


def _resources() -> list[Resource]:
    return golden_resources()


def _repo(root: Path, manifest: Any, packer: Any = None) -> Path:
    return write_image_files(root, manifest, packer)


def _violations(root: Path | None, resources: list[Resource] | None = None, rule: str = RULE) -> list[Violation]:
    ctx: Context = dataclasses.replace(context("dev"), root=root, today=date(2026, 11, 28))
    return [v for v in evaluate(resources or _resources(), ctx, repository=root is not None) if v.policy == rule]


def _node_group() -> dict[str, Any]:
    return _plan().named(f"pool-{POOL}-ng").inputs


def _user_data() -> str:
    return base64.b64decode(_plan().named(f"pool-{POOL}-lt").inputs["userData"]).decode()


# --- what the program declares ---------------------------------------------------------------------------------------


def test_node_group_names_no_ami_type_version_or_release_beside_a_custom_ami() -> None:
    """botocore eks CreateNodegroup: with a custom AMI in the launch template, amiType and version "or the node group
    deployment will fail"; releaseVersion names an EKS-optimized AMI release, which a custom AMI is not."""
    members = botocore.session.get_session().get_service_model("eks").operation_model("CreateNodegroup").input_shape.members
    assert "custom AMI, then don't specify <code>amiType</code>" in members["amiType"].documentation
    assert "custom AMI, then don't specify <code>version</code>" in members["version"].documentation
    ng = _node_group()
    assert not {k for k in CUSTOM_AMI_ABSENT if ng.get(k) is not None}
    assert ng["tags"][golden_image.MANIFEST_TAG] == MANIFEST
    other = _plan().named("pool-dev-a10g-spot-ng").inputs  # the stack's other pools keep the EKS AMI
    assert other["amiType"] == load_lockfile().eks.ami_type and other["releaseVersion"] == load_lockfile().eks.ami_release_version


def test_launch_template_boots_the_image_from_its_own_root_device() -> None:
    lt = _plan().named(f"pool-{POOL}-lt").inputs
    assert lt["imageId"] == AMI
    assert [m["deviceName"] for m in lt["blockDeviceMappings"]] == [golden_image.ROOT_DEVICE]


def test_user_data_runs_the_images_eks_bootstrap_with_the_pools_labels_and_taints() -> None:
    """MIME multi-part (cloud-init runs each text/x-shellscript part); the script calls /etc/eks/bootstrap.sh with
    the cluster, its endpoint and CA, and the kubelet flags carry exactly the node group's labels and taints
    (`--node-labels` k=v pairs, `--register-with-taints` key=value:Effect, as the kubelet parses them)."""
    message = email.message_from_string(_user_data())
    assert message.is_multipart()
    scripts = [part.get_payload() for part in message.walk() if part.get_content_type() == "text/x-shellscript"]
    assert len(scripts) == 1
    line = next(line for line in scripts[0].splitlines() if line.startswith(golden_image.BOOTSTRAP))
    argv = shlex.split(line)
    cluster = _plan().named("cluster-eks").inputs["name"]
    assert argv[1] == cluster
    assert argv[argv.index("--apiserver-endpoint") + 1].startswith("https://")
    assert argv[argv.index("--b64-cluster-ca") + 1] == "bW9jaw=="  # the mock engine's CA
    flags = dict(f.split("=", 1) for f in shlex.split(argv[argv.index("--kubelet-extra-args") + 1]))
    labels = dict(pair.split("=", 1) for pair in flags["--node-labels"].split(","))
    ng = _node_group()
    assert labels == ng["labels"]
    taints = {tuple(t.replace(":", "=").split("=")) for t in flags["--register-with-taints"].split(",")}
    effect = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
    assert taints == {(t["key"], t["value"], effect[t["effect"]]) for t in ng["taints"]}


def test_an_efa_pool_reserves_hugepages_before_the_bootstrap_starts_the_kubelet() -> None:
    ud = golden_image.user_data("c", "https://x", "Y2E=", {"a": "b"}, [], hugepages=True)
    scripts = [p.get_payload() for p in email.message_from_string(ud).walk() if p.get_content_type() == "text/x-shellscript"]
    assert "vm.nr_hugepages" in scripts[0] and golden_image.BOOTSTRAP in scripts[1]


def test_the_versions_report_lists_the_node_stack_the_image_carries() -> None:
    spec = spec_from_config(_config(), stack="dev", file="Pulumi.dev.yaml")
    keys = [key for key, *_ in pins(spec)]
    assert {"eks.ami_release_version", "nvidia_driver.branch", "cuda.version"} <= set(keys)


@pytest.mark.parametrize(
    ("image", "fragment"),
    [
        ({"ami": "ami-123", "manifest": MANIFEST}, "image.ami"),
        ({"ami": AMI, "manifest": "../elsewhere/m.json"}, "is not a JSON file inside the repository"),
        ({"ami": AMI, "manifest": "/etc/m.json"}, "is not a JSON file inside the repository"),
        ({"ami": AMI}, "image.manifest"),
    ],
)
def test_bad_image_settings_get_one_line_each(image: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        spec_from_config(_config(image), stack="dev", file="Pulumi.dev.yaml")
    assert any(fragment in str(p) and "nodePools[0].image" in str(p) for p in err.value.problems), err.value.problems


def test_a_golden_image_on_bare_metal_is_refused() -> None:
    config = read_stack_config(stack_path("onprem"))
    pools = copy.deepcopy(config["gpu-platform:nodePools"])
    pools[0]["image"] = {"ami": AMI, "manifest": MANIFEST}
    with pytest.raises(ConfigError) as err:
        spec_from_config({**config, "gpu-platform:nodePools": pools}, stack="onprem", file="Pulumi.onprem.yaml")
    assert any("only on EKS pools" in str(p) for p in err.value.problems)


# --- what the gate makes of it -----------------------------------------------------------------------------------------


def test_an_image_built_by_this_repository_for_this_cluster_passes(tmp_path: Path) -> None:
    assert _violations(_repo(tmp_path, image_manifest())) == []
    assert [v for v in _violations(_repo(tmp_path, image_manifest()), rule="eks-versions-match-lockfile") if "pool-dev-l4" in v.resource] == []


def test_the_golden_pool_is_judged_on_the_lockfiles_driver_branch() -> None:
    lock = load_lockfile().model_copy(update={"nvidia_driver": load_lockfile().nvidia_driver.model_copy(update={"branch": "535"})})
    ctx = dataclasses.replace(context("dev", lock), today=date(2026, 11, 28))
    hits = [v for v in evaluate(_resources(), ctx, repository=False) if v.policy == "versions-in-support"]
    assert sorted(v.resource for v in hits) == [f"pool-{POOL}-fallback-ng", f"pool-{POOL}-ng"], hits  # its on-demand fallback too
    assert "the golden image's nvidia_driver.branch) 535 left standard support" in hits[0].message


@pytest.mark.parametrize(
    ("manifest", "packer", "fragment"),
    [
        (image_manifest(pinned={"nvidia_driver": {"version": "570.195.03"}}), None, "built with driver 570.195.03, the lockfile pins"),
        (image_manifest(installed={"nvidia-open": "570.195.03-0ubuntu1"}), None, "no installed package of the image is the driver build"),
        (image_manifest(eks={"bootstrap": False, "kubelet": ""}), None, "no /etc/eks/bootstrap.sh"),
        (image_manifest(eks={"bootstrap": True, "kubelet": "v1.34.2"}), None, "kubelet is v1.34.2, the cluster runs Kubernetes"),
        (image_manifest(os_key="rhel8"), None, "runs rhel8, not a node OS"),
        (image_manifest(), packer_manifest(artifact=f"{REGION}:ami-0fffffffffffffff0"), "is no build in packer-manifest.json"),
        (image_manifest(), packer_manifest(artifact=f"eu-west-1:{AMI}"), f"was built in eu-west-1, not in {REGION}"),
        (image_manifest(), packer_manifest(run="another-run"), f"the image manifest is from Packer run {RUN}"),
        (image_manifest(schema=2), None, "schema is 2"),
        ("{not json", None, "is not JSON"),
        ("[]", None, "is not a JSON object"),
    ],
)
def test_an_image_that_cannot_serve_the_pool_is_refused(tmp_path: Path, manifest: Any, packer: Any, fragment: str) -> None:
    hits = _violations(_repo(tmp_path, manifest, packer))
    assert any(v.resource == f"pool-{POOL}-ng" and fragment in v.message for v in hits), hits
    assert all(v.level == "mandatory" for v in hits)


def test_hostile_manifest_files_are_refused_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(image_manifest()), encoding="utf-8")
    root = _repo(tmp_path / "repo", image_manifest())
    target = root / MANIFEST
    target.unlink()
    os.symlink(outside, target)
    assert any("is a symbolic link" in v.message for v in _violations(root))
    target.unlink()
    target.write_text(" " * (1 << 20) + "{}", encoding="utf-8")
    assert any("larger than" in v.message for v in _violations(root))
    target.write_text("[" * 100000 + "]" * 100000, encoding="utf-8")
    assert any("is not JSON" in v.message for v in _violations(root))
    target.unlink()
    assert any("does not exist" in v.message for v in _violations(root))


def test_a_node_group_that_names_no_manifest_or_keeps_the_eks_ami_fields_is_refused(tmp_path: Path) -> None:
    root = _repo(tmp_path, image_manifest())
    res = _resources()
    ng = next(r for r in res if r.name == f"pool-{POOL}-ng")
    ng.inputs["amiType"] = load_lockfile().eks.ami_type
    hits = _violations(root, res, rule="eks-versions-match-lockfile")
    assert any(v.resource == ng.name and "EKS fails the deployment beside a custom AMI" in v.message for v in hits), hits
    lt = next(r for r in res if r.name == f"pool-{POOL}-lt")
    lt.inputs["userData"] = base64.b64encode(b"#!/bin/bash\necho hi\n").decode()
    assert any(v.resource == lt.name and "EKS adds none to a custom AMI" in v.message for v in _violations(root, res))
    del ng.inputs["tags"][golden_image.MANIFEST_TAG]
    assert any(v.resource == ng.name and "names no image manifest" in v.message for v in _violations(root, res))


def test_stacks_without_a_golden_image_are_told_the_rule_does_not_apply() -> None:
    from gpu_platform_policies.evaluate import not_applicable
    from tests.policies.cases import resources

    assert dict(not_applicable(resources("prod"), context("prod"))).get(RULE) == "no EKS node group runs a golden image"


# --- found by an outside review -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("manifest", "fragment"),
    [
        (image_manifest(pinned=["x"]), "pinned is a list, not an object"),
        (image_manifest(eks="yes"), "eks is a str, not an object"),
        (image_manifest(schema=True), "schema is True"),
        (image_manifest(packer_run_uuid=""), "the image manifest is from Packer run (none)"),
        (image_manifest(eks={"bootstrap": "true", "kubelet": "v1.35.1"}), "no /etc/eks/bootstrap.sh"),
    ],
)
def test_malformed_manifests_are_findings_not_crashes(tmp_path: Path, manifest: Any, fragment: str) -> None:
    packer = packer_manifest(run="") if manifest.get("packer_run_uuid") == "" else None
    hits = _violations(_repo(tmp_path, manifest, packer))
    assert any(fragment in v.message for v in hits), hits


def test_the_region_comes_from_the_stack_even_on_an_existing_vpc(tmp_path: Path) -> None:
    """A stack on an existing VPC creates no subnet whose zone would name the region: the node group carries it."""
    from gpu_platform.aws.golden_image import REGION_TAG

    assert golden_plan().named(f"pool-{POOL}-ng").inputs["tags"][REGION_TAG] == REGION
    no_subnets = [r for r in golden_resources() if r.type != "aws:ec2/subnet:Subnet"]
    root = _repo(tmp_path, image_manifest(), packer_manifest(artifact=f"eu-west-1:{AMI}"))
    assert any(f"built in eu-west-1, not in {REGION}" in v.message for v in _violations(root, no_subnets))


def test_user_data_unknown_at_a_first_preview_is_not_judged(tmp_path: Path) -> None:
    """A new cluster's endpoint is unknown during its first `pulumi preview`, so is the user data built from it."""
    from gpu_platform.behaviour.wiring import UNKNOWN

    res = golden_resources()
    next(r for r in res if r.name == f"pool-{POOL}-lt").inputs["userData"] = UNKNOWN
    assert _violations(_repo(tmp_path, image_manifest()), res) == []


def test_an_nvswitch_pool_needs_fabric_manager_at_the_drivers_version(tmp_path: Path) -> None:
    """Fabric Manager refuses to start against another driver build, and NVSwitch GPUs stay unusable without it."""
    res = golden_resources()
    ng = next(r for r in res if r.name == f"pool-{POOL}-ng")
    ng.inputs["instanceTypes"] = ["p5.48xlarge"]
    hits = _violations(_repo(tmp_path / "a", image_manifest()), res)
    assert any("NVSwitch nodes need it at the driver's" in v.message for v in hits), hits
    driver = load_lockfile().nvidia_driver
    with_fm = image_manifest(
        pinned={**image_manifest()["pinned"], "fabric_manager": {"version": driver.version}},
        installed={**image_manifest()["installed"], f"nvidia-fabricmanager-{driver.branch}": driver.packages["ubuntu"]},
    )
    assert not any("Fabric Manager" in v.message for v in _violations(_repo(tmp_path / "b", with_fm), res))


def test_the_crossguard_pack_reads_this_checkout() -> None:
    """Pulumi starts the pack in policies/pack: the rules that read repository files must read the checkout's."""
    from gpu_platform_policies.crossguard import context as pack_context
    from tests.conftest import ROOT

    assert pack_context({}).root == ROOT
