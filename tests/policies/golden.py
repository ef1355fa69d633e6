"""A golden-image pool on the dev stack, and the files its build leaves, for the rule cases and tests/eks/test_golden_image.py.

The image manifest has the shape the `image_manifest` role writes (the Molecule golden_image scenario builds one for
real and its verify judges it with the same function); Packer's manifest the shape Packer 1.16's manifest
post-processor writes (post-processor/manifest/post-processor.go), with the amazon plugin's `region:ami` artifact id.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from gpu_platform.behaviour.image_manifest import PACKER_MANIFEST
from gpu_platform.engine import Plan, run_program
from gpu_platform.spec.loader import read_stack_config
from gpu_platform.versions import load_lockfile
from gpu_platform_policies import Resource
from tests.conftest import stack_path

AMI = "ami-0a1b2c3d4e5f60718"
RUN = "0193a5b2-7c4d-7e00-9a1b-2c3d4e5f6071"
MANIFEST = "ansible/packer/manifests/default-image-manifest.json"
POOL = "dev-l4-spot"
REGION = str(read_stack_config(stack_path("dev"))["aws:region"])


def golden_config(image: dict[str, Any] | None = None) -> dict[str, Any]:
    """The dev stack's config with its first pool on a golden image."""
    config = read_stack_config(stack_path("dev"))
    pools = copy.deepcopy(config["gpu-platform:nodePools"])
    pools[0]["image"] = image or {"ami": AMI, "manifest": MANIFEST}
    assert pools[0]["name"] == POOL
    return {**config, "gpu-platform:nodePools": pools}


@cache
def golden_plan() -> Plan:
    """What the program declares for that stack (the mock engine, as `gpu-platform plan`)."""
    return run_program(golden_config(), "dev")


def golden_resources() -> list[Resource]:
    """A deep copy of that plan as plain resources."""
    return [Resource(r.type, r.name, r.parent, copy.deepcopy(r.inputs), r.source, dict(r.refs), r.secrets) for r in golden_plan().resources]


def on_golden_image(res: list[Resource]) -> list[Resource]:
    """Edit: the dev plan with the golden-image pool's resources as the program declares them."""
    golden = {r.name: r for r in golden_resources()}
    names = {r.name for r in res}
    return [golden.get(r.name, r) for r in res] + [r for n, r in golden.items() if n not in names]


def image_manifest(**changes: Any) -> dict[str, Any]:
    """What the image_manifest role writes for an Ubuntu 24.04 build on Canonical's EKS base of the pinned minor."""
    lock = load_lockfile()
    pinned = {k: v for k, v in lock.model_dump(mode="json").items() if k in ("nvidia_driver", "cuda", "dcgm")}
    driver = lock.nvidia_driver.packages["ubuntu"]
    manifest = {
        "schema": 1,
        "os": "Ubuntu 24.04",
        "os_key": "ubuntu2404",
        "architecture": "x86_64",
        "packer_run_uuid": RUN,
        "eks": {"bootstrap": True, "kubelet": f"v{lock.kubernetes.version}.4"},
        "pinned": pinned,
        "installed": {"nvidia-open": driver, f"nvidia-dkms-{lock.nvidia_driver.branch}-open": driver, "datacenter-gpu-manager-4-core": "1:4.6.0-1"},
    }
    return {**manifest, **changes}


def packer_manifest(artifact: str = f"{REGION}:{AMI}", run: str = RUN) -> dict[str, Any]:
    """Packer's manifest after one amazon-ebs build."""
    build = {"name": "gpu_node", "builder_type": "amazon-ebs", "build_time": 1795000000, "files": None, "artifact_id": artifact}
    return {"builds": [{**build, "packer_run_uuid": run, "custom_data": None}], "last_run_uuid": run}


def write_image_files(root: Path, manifest: Any, packer: Any = None) -> Path:
    """The build's two files under `root` (a string is written as is)."""
    target = root / MANIFEST
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(manifest if isinstance(manifest, str) else json.dumps(manifest), encoding="utf-8")
    (target.parent / PACKER_MANIFEST).write_text(json.dumps(packer or packer_manifest()), encoding="utf-8")
    return root


def golden_repo(manifest: Any = None, packer: Any = None) -> Callable[[Path], None]:
    """A case's repository: the build's files (the image manifest by default as above)."""

    def make(root: Path) -> None:
        write_image_files(root, image_manifest() if manifest is None else manifest, packer)

    return make
