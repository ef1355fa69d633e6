"""What a golden image must be for EKS to run it as a pool's AMI, judged from the files its build leaves.

A build of `ansible/packer` leaves two files in one directory:

- the image manifest (role `image_manifest`, `<host>-image-manifest.json`): the OS, the lockfile
  sections the build pinned, the NVIDIA packages dpkg/rpm report installed, whether the base image
  carries the EKS bootstrap (`/etc/eks/bootstrap.sh`) and its kubelet's version, and the Packer run
  it belongs to (`PACKER_RUN_UUID`, which Packer's main.go sets for the whole run);
- Packer's own manifest (`packer-manifest.json`, post-processor "manifest", Packer 1.16
  post-processor/manifest/post-processor.go `PostProcess`): `{"builds": [...], "last_run_uuid"}`, one
  entry appended per build, each with `artifact_id` and `packer_run_uuid`. The amazon plugin's
  artifact id is the sorted `region:ami` pairs joined by "," (packer-plugin-amazon
  builder/common/artifact.go `Artifact.Id`).

EKS with a custom AMI (botocore eks CreateNodegroup `amiType`, `version`): the node group names no
`amiType`, `version` or `releaseVersion` ("or the node group deployment will fail"), and EKS adds
no bootstrap user data, so the launch template runs the image's own `/etc/eks/bootstrap.sh`
(Canonical's EKS images ship it; eksctl's nodebootstrap/assets/scripts/bootstrap.ubuntu.sh calls it
with `--kubelet-extra-args`). An image from a plain OS base has no kubelet: its nodes never join.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_platform.versions import Lockfile, node_oses

MAX_BYTES = 1 << 20
PACKER_MANIFEST = "packer-manifest.json"
SCHEMA = 1
# EKS CreateNodegroup: with a custom AMI in the launch template these must be absent.
CUSTOM_AMI_ABSENT = ("amiType", "version", "releaseVersion")


def read_json(path: Path, root: Path) -> dict[str, Any] | str:
    """A JSON object from a regular file inside `root`, or why it cannot be read (never raises)."""
    try:
        if path.is_symlink():
            return f"{path.name} is a symbolic link"
        resolved = path.resolve()
        if not resolved.is_relative_to(root.resolve()):
            return f"{path.name} lies outside the repository"
        if not path.is_file():
            return f"{path.name} does not exist"
        if path.stat().st_size > MAX_BYTES:
            return f"{path.name} is larger than {MAX_BYTES} bytes"
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return f"{path.name} is not JSON ({type(exc).__name__})"
    return data if isinstance(data, dict) else f"{path.name} is not a JSON object"


def packer_builds(packer_manifest: Mapping[str, Any], ami: str) -> list[tuple[str, str]]:
    """(region, packer_run_uuid) of every build in Packer's manifest whose artifact is `ami`."""
    found = []
    for build in packer_manifest.get("builds") or []:
        if not isinstance(build, Mapping):
            continue
        for pair in str(build.get("artifact_id") or "").split(","):
            region, _, image = pair.partition(":")
            if image == ami:
                found.append((region, str(build.get("packer_run_uuid") or "")))
    return found


def _regions(builds: list[tuple[str, str]]) -> str:
    return ", ".join(sorted({w for w, _ in builds}))


def _minor(version: str) -> str:
    parts = version.strip().removeprefix("Kubernetes").strip().removeprefix("v").split(".")
    return ".".join(parts[:2])


def image_problems(
    manifest: Mapping[str, Any],
    packer_manifest: Mapping[str, Any],
    ami: str,
    region: str | None,
    lock: Lockfile,
    kubernetes: str,
    nvswitch: bool = False,
) -> list[str]:
    """Why EKS cannot run `ami` as a GPU pool of this lockfile and Kubernetes minor (empty when it can).

    `region` None: the stack's region is unknown, which is itself a problem (an AMI is regional). `nvswitch`: the
    pool's instance type has NVSwitches, so the image must carry Fabric Manager at exactly the driver's version.
    """
    schema = manifest.get("schema")
    if type(schema) is not int or schema != SCHEMA:
        return [f"the image manifest's schema is {schema!r}, this revision reads {SCHEMA}"]
    for key in ("pinned", "installed", "eks"):
        if not isinstance(manifest.get(key) or {}, Mapping):
            return [f"the image manifest's {key} is a {type(manifest.get(key)).__name__}, not an object"]
    pinned_all: Mapping[str, Any] = manifest.get("pinned") or {}
    installed: Mapping[str, Any] = manifest.get("installed") or {}
    eks: Mapping[str, Any] = manifest.get("eks") or {}
    out = []
    builds = packer_builds(packer_manifest, ami)
    in_region = [uuid for where, uuid in builds if where == region]
    run = str(manifest.get("packer_run_uuid") or "")
    if not builds:
        out.append(f"{ami} is no build in {PACKER_MANIFEST}: the manifest does not describe it")
    elif region is None:
        out.append(f"the stack's region is unknown, so {ami} (built in {_regions(builds)}) cannot be placed: AMIs are regional")
    elif not in_region:
        out.append(f"{ami} was built in {_regions(builds)}, not in {region}: AMIs are regional")
    elif not run or run not in in_region:
        out.append(f"the image manifest is from Packer run {run or '(none)'}, {ami} from {', '.join(u or '(none)' for u in in_region)}")
    os_key = str(manifest.get("os_key") or "")
    if os_key not in node_oses(lock):
        out.append(f"the image runs {os_key or 'an undeclared OS'}, not a node OS of this lockfile ({', '.join(node_oses(lock))})")
    driver = lock.nvidia_driver
    pinned = pinned_all.get("nvidia_driver") or {}
    if not isinstance(pinned, Mapping) or pinned.get("version") != driver.version:
        shown = pinned.get("version") if isinstance(pinned, Mapping) else None
        out.append(f"the image was built with driver {shown or '(none)'}, the lockfile pins {driver.version}")
    avail = lock.package_availability.get(os_key)
    want = driver.packages.get(avail.package_source) if avail is not None else None
    if avail is not None and want is None:
        out.append(f"the lockfile pins no driver package for {avail.package_source}")
    elif want is not None and not any(_carries(v, want) for v in installed.values()):
        out.append(f"no installed package of the image is the driver build {want}")
    if nvswitch:
        fm = pinned_all.get("fabric_manager") or {}
        fm_version = fm.get("version") if isinstance(fm, Mapping) else None
        fm_installed = [v for k, v in installed.items() if "fabricmanager" in str(k)]
        if fm_version != driver.version or not any(str(v).startswith(driver.version) for v in fm_installed):
            out.append(
                f"the image carries Fabric Manager {fm_version or '(none)'} (installed: {', '.join(map(str, fm_installed)) or 'none'}); "
                f"NVSwitch nodes need it at the driver's {driver.version}, or their GPUs stay unusable"
            )
    if eks.get("bootstrap") is not True:
        base = "an EKS base image (Canonical's ubuntu-eks/k8s_<minor>)"
        out.append(f"the image has no /etc/eks/bootstrap.sh: build it from {base}, or its nodes never join")
    elif _minor(str(eks.get("kubelet") or "")) != kubernetes:
        out.append(f"the image's kubelet is {eks.get('kubelet') or '(none)'}, the cluster runs Kubernetes {kubernetes}")
    return out


def _carries(versions: object, want: str) -> bool:
    """Whether one of the installed builds (image_manifest joins several with ", ") is `want`.

    dpkg reports the whole version (`<driver>-0ubuntu1`); rpm's release carries the dist tag the
    nvidia_driver role's RedHat vars append (`<driver>-1.el9`), so `want` may be followed by `.el<N>`.
    """
    return any(v.strip() == want or v.strip().startswith(want + ".el") for v in str(versions).split(","))
