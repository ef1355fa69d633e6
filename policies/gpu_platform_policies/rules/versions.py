"""Version rules: charts, images, EKS AMI and add-ons pinned to the lockfile; driver fits every GPU."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gpu_platform.aws import golden_image
from gpu_platform.behaviour import ecr, image_manifest, vpc
from gpu_platform.behaviour.wiring import UNKNOWN
from gpu_platform.versions import (
    SUPPORT_DRIVER_BRANCHES,
    SUPPORT_EKS_AMI,
    SUPPORT_KUBERNETES,
    SUPPORT_WINDOWS,
    Lockfile,
    days_left,
    support_end,
    support_window,
)
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.view import (
    EKS_ADDON,
    EKS_CLUSTER,
    HELM_CHART,
    HELM_RELEASE,
    NODE_GROUP,
    SUBNET,
    Pool,
    chart_name,
    get,
    helm_releases,
    instance_types_of,
    is_gpu_node_group,
    launch_template_of,
    pools,
    truthy,
    walk,
)

FLOATING = frozenset({"latest", "stable", "main", "master", "edge", "nightly", "*", ""})
EXACT_VERSION = re.compile(r"^v?\d+(\.\d+){1,3}([-+][0-9A-Za-z.-]+)?$")
VERSION_KEYS = re.compile(r"(^|[a-z_])(version|tag)$", re.IGNORECASE)


def _lock_chart(lock: Lockfile, r: Resource) -> tuple[str, str] | None:
    """(lockfile key, pinned version) of the chart a release installs, matched by chart name."""
    name = chart_name(r)
    for key, chart in lock.charts.items():
        if name in (chart.name, key):
            return key, chart.version
    return None


@rule(
    "charts-pinned",
    "Every Helm chart is pinned to an exact version equal to the lockfile's.",
    "mandatory",
    "resource",
    category="versions",
    types=(HELM_RELEASE, HELM_CHART),
)
def charts_pinned(r: Resource, ctx: Context) -> Iterator[str]:
    """An unpinned chart upgrades itself the next time anyone runs `pulumi up`."""
    version = str(r.inputs.get("version") or "")
    if not version:
        yield f"chart {chart_name(r)!r} has no version; pin it in infra/gpu_platform/data/versions.yaml"
        return
    if not EXACT_VERSION.match(version):
        yield f"chart {chart_name(r)!r} version {version!r} is not an exact version"
    pinned = _lock_chart(ctx.lock, r)
    if pinned is None:
        yield f"chart {chart_name(r)!r} is not in the lockfile; add it under charts:"
    elif version != pinned[1]:
        yield f"chart {chart_name(r)!r} version {version!r} differs from the lockfile's charts.{pinned[0]}.version {pinned[1]!r}"


def split_image(ref: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of an image reference."""
    ref, _, digest = ref.partition("@")
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1 :], digest or None
    return ref, None, digest or None


def image_refs(inputs: Any) -> Iterator[tuple[str, str, str | None, str | None]]:
    """(path, repository, tag, digest) of every container image the inputs set."""
    for path, key, value in walk(inputs):
        if isinstance(value, Mapping):
            repo, image = value.get("repository"), value.get("image")
            tag = value.get("tag", value.get("version"))
            if isinstance(repo, str) and isinstance(image, str) and "version" in value:
                yield path, f"{repo.rstrip('/')}/{image}", str(tag) if tag is not None else None, value.get("digest")
            elif isinstance(repo, str) and "tag" in value and "/" in repo:
                yield path, repo, str(tag) if tag is not None else None, value.get("digest")
        elif key == "image" and isinstance(value, str) and ("/" in value or ":" in value):
            repo, tag, digest = split_image(value)
            yield path, repo, tag, digest


@rule(
    "images-pinned",
    "Every container image the program sets has a tag or digest, equal to the lockfile's where it pins that image.",
    "mandatory",
    "resource",
    category="versions",
)
def images_pinned(r: Resource, ctx: Context) -> Iterator[str]:
    """Images drift silently: the same tag can be re-pushed, a missing tag means latest."""
    # An EKS-registry image is the same image in every region's registry (behaviour.ecr): pinned by its path.
    pinned = {ecr.canonical(img.repository): (key, img.tag) for key, img in ctx.lock.images.items()}
    for path, repo, tag, digest in image_refs(r.inputs):
        if not tag and not digest:
            yield f"{path}: image {repo} has no tag or digest"
            continue
        if ecr.canonical(repo) in pinned and tag and tag != pinned[ecr.canonical(repo)][1]:
            key, want = pinned[ecr.canonical(repo)]
            yield f"{path}: image {repo}:{tag} differs from the lockfile's images.{key}.tag {want!r}"


@rule(
    "no-floating-versions",
    "No version, tag or image anywhere is `latest` or another floating name.",
    "mandatory",
    "resource",
    category="versions",
)
def no_floating_versions(r: Resource, ctx: Context) -> Iterator[str]:
    """A floating name resolves to something different on every node and every day."""
    for path, key, value in walk(r.inputs):
        if not isinstance(value, str):
            continue
        if value.endswith(":latest") or (VERSION_KEYS.search(str(key)) and value.strip().lower() in FLOATING - {""}):
            yield f"{path} is {value!r}; pin an exact version"


@rule(
    "eks-versions-match-lockfile",
    "EKS control plane, node group AMIs and add-ons use the lockfile's versions.",
    "mandatory",
    "resource",
    category="versions",
    types=(EKS_CLUSTER, NODE_GROUP, EKS_ADDON),
)
def eks_versions_match_lockfile(r: Resource, ctx: Context) -> Iterator[str]:
    """A node group without a pinned release version takes whatever AMI (and driver) is newest."""
    lock = ctx.lock
    if r.type == EKS_CLUSTER and r.inputs.get("version") != lock.kubernetes.version:
        yield f"version {r.inputs.get('version')!r} differs from the lockfile's kubernetes.version {lock.kubernetes.version!r}"
    elif r.type == NODE_GROUP and golden_image.MANIFEST_TAG in (r.inputs.get("tags") or {}):
        # botocore eks CreateNodegroup: beside a custom AMI these fail the deployment; golden-image-matches-lockfile
        # judges the image itself.
        for key in image_manifest.CUSTOM_AMI_ABSENT:
            if r.inputs.get(key) is not None:
                yield f"{key} {r.inputs.get(key)!r} is set on a golden-image node group: EKS fails the deployment beside a custom AMI"
    elif r.type == NODE_GROUP:
        if r.inputs.get("version") != lock.kubernetes.version:
            yield f"version {r.inputs.get('version')!r} differs from the lockfile's kubernetes.version {lock.kubernetes.version!r}"
        if r.inputs.get("releaseVersion") != lock.eks.ami_release_version:
            yield f"releaseVersion {r.inputs.get('releaseVersion')!r} differs from the lockfile's {lock.eks.ami_release_version!r}"
        want_ami = lock.eks.ami_type if is_gpu_node_group(r, ctx.catalog) else lock.eks.system_ami_type
        if r.inputs.get("amiType") != want_ami:
            yield f"amiType {r.inputs.get('amiType')!r} differs from the lockfile's {want_ami!r}"
    elif r.type == EKS_ADDON:
        name = str(r.inputs.get("addonName"))
        want = lock.eks.addons.get(name)
        if want is None:
            yield f"add-on {name!r} is not in the lockfile's eks.addons"
        elif r.inputs.get("addonVersion") != want:
            yield f"add-on {name} version {r.inputs.get('addonVersion')!r} differs from the lockfile's {want!r}"


def operator_driver(plan: PlanView) -> tuple[Resource, Mapping[str, Any]] | None:
    """The GPU Operator release and its `driver` values, when the operator installs the driver."""
    for r in helm_releases(plan, "gpu-operator"):
        driver = get(r.inputs, "values", "driver", default={}) or {}
        if truthy(driver.get("enabled", True)):
            return r, driver
    return None


def _branch(version: str) -> str:
    return version.split(".", 1)[0]


@rule(
    "driver-supports-gpu",
    "The driver branch each pool runs is new enough for, and supports the architecture of, its GPU.",
    "mandatory",
    "stack",
    category="versions",
)
def driver_supports_gpu(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """An H200 on a 535 driver does not come up; the node joins with zero GPUs."""
    # The branch is what the stack deploys (its `versions` override included); the matrix is the
    # repository's, so an override cannot lower the bar it is measured against.
    lock, matrix = ctx.deployed, ctx.lock.compatibility
    for pool in pools(plan, ctx.catalog):
        branch, source = pool_driver_branch(pool, plan, lock, ctx.lock)
        gpu = ctx.catalog.gpus.get(pool.gpu_model or "")
        if gpu is None:
            yield Finding(pool.resource, f"pool {pool.name} has unknown GPU model {pool.gpu_model!r}")
            continue
        need = matrix.gpu_min_driver_branch.get(gpu.name)
        support = matrix.driver_branches.get(branch)
        if need is None:
            yield Finding(pool.resource, f"{gpu.name} has no compatibility.gpu_min_driver_branch entry in the lockfile")
        elif int(branch) < int(need):
            yield Finding(pool.resource, f"pool {pool.name}: {gpu.name} needs driver branch >= {need}, but {source} is {branch}")
        if support is None:
            yield Finding(pool.resource, f"pool {pool.name}: driver branch {branch} ({source}) is not in compatibility.driver_branches")
        elif gpu.architecture not in support.architectures:
            yield Finding(pool.resource, f"pool {pool.name}: driver branch {branch} does not support {gpu.architecture} ({gpu.name})")


@rule(
    "fabric-manager-matches-driver",
    "On NVSwitch systems the fabric manager version equals the driver version exactly.",
    "mandatory",
    "stack",
    category="versions",
)
def fabric_manager_matches_driver(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Fabric manager refuses to start against any other driver build, and the GPUs stay unusable."""
    lock = ctx.lock
    nvswitch_models = {t.gpu.name for t in ctx.catalog.instance_types.values() if t.nvswitch}
    operator = operator_driver(plan)
    for pool in pools(plan, ctx.catalog):
        if pool.gpu_model not in nvswitch_models:
            continue
        driver = str(operator[1].get("version", lock.nvidia_driver.version)) if operator else lock.nvidia_driver.version
        if pool.platform == "eks" and operator is None:
            continue  # the EKS NVIDIA AMI ships driver and fabric manager as one matched set
        if lock.fabric_manager.version != driver:
            yield Finding(
                pool.resource,
                f"pool {pool.name} ({pool.gpu_model}, NVSwitch): fabric manager {lock.fabric_manager.version!r} differs from driver {driver!r}",
            )


def golden_image_manifest(plan: PlanView, resource: str) -> str | None:
    """The image manifest a GPU pool's node group names (golden_image.MANIFEST_TAG), when it runs a golden image."""
    ng = next((r for r in plan.of_type(NODE_GROUP) if r.name == resource), None)
    value = (ng.inputs.get("tags") or {}).get(golden_image.MANIFEST_TAG) if ng is not None else None
    return str(value) if value else None


def pool_driver_branch(pool: Pool, plan: PlanView, lock: Lockfile, repo_lock: Lockfile | None = None) -> tuple[str, str]:
    """(branch, where it is pinned) of the driver a pool runs.

    The GPU Operator's driver when it installs one; on EKS the AMI's (`eks.ami_driver_branch`), or the lockfile's
    `nvidia_driver.branch` on a golden image, which the Ansible roles built from it; on bare metal the same.
    `repo_lock`: the repository's lockfile, to say when the stack's versions override moved the pin.
    """
    operator = operator_driver(plan)
    if operator is not None:
        return _branch(str(operator[1].get("version", lock.nvidia_driver.version))), "GPU Operator driver.version"
    if pool.platform == "eks" and golden_image_manifest(plan, pool.resource) is None:
        branch, source, repo = lock.eks.ami_driver_branch, "eks.ami_driver_branch", repo_lock.eks.ami_driver_branch if repo_lock else None
    else:
        branch, source, repo = lock.nvidia_driver.branch, "nvidia_driver.branch", repo_lock.nvidia_driver.branch if repo_lock else None
        if pool.platform == "eks":
            source = f"the golden image's {source}"
    if repo is not None and branch != repo:
        source = f"the stack's versions override of {source}"
    return branch, source


def _support_message(what: str, component: str, key: str, ctx: Context, window: str) -> str | None:
    """What the gate says about `key`'s end of standard support on its day, in one of two windows.

    `window` "mandatory": past the end, or fewer than `min-support-days` days left (or no entry);
    "advisory": fewer than `min-support-days-advisory` days left but not yet in the mandatory window.
    """
    entry = support_end(ctx.lock, component, key)
    fail, warn = ctx.threshold("min-support-days"), ctx.threshold("min-support-days-advisory")
    status = support_window(entry, ctx.day, fail, warn)
    if SUPPORT_WINDOWS.get(status) != window or entry is None:
        if status == "no-entry" and window == "mandatory":
            return f"{what} {key} has no end-of-support entry (support.{component}) in the lockfile; add one with its source"
        return None
    if status == "past":
        return f"{what} {key} left standard support on {entry.ends} ({entry.source}); move to a supported one"
    left = days_left(entry, ctx.day)
    if status == "mandatory":
        return (
            f"{what} {key} leaves standard support on {entry.ends}, in {left} day(s) ({entry.source}); the gate fails from "
            f"{fail:g} days before the end (min-support-days): move to a supported one now"
        )
    return (
        f"{what} {key} leaves standard support on {entry.ends}, in {left} day(s) ({entry.source}); plan the move: the gate fails {fail:g} days before"
    )


def _support_findings(plan: PlanView, ctx: Context, window: str) -> Iterator[Finding]:
    for r in plan.of_type(EKS_CLUSTER):
        version = str(r.inputs.get("version") or "")
        if msg := _support_message("Kubernetes", SUPPORT_KUBERNETES, version, ctx, window):
            yield Finding(r.name, msg)
    # One finding per AMI release, on the first node group that runs it, naming the others: the same release on
    # twelve node groups is one upgrade, not twelve findings.
    groups: dict[str, list[str]] = {}
    for r in plan.of_type(NODE_GROUP):
        release = r.inputs.get("releaseVersion")
        if release:
            groups.setdefault(str(release), []).append(r.name)
    for release, names in groups.items():
        if msg := _support_message("EKS AMI release", SUPPORT_EKS_AMI, release, ctx, window):
            others = f" (node groups {', '.join(names)})" if len(names) > 1 else ""
            yield Finding(names[0], msg + others)
    for pool in pools(plan, ctx.catalog):
        branch, where = pool_driver_branch(pool, plan, ctx.lock)
        if msg := _support_message(f"pool {pool.name}: NVIDIA driver branch ({where})", SUPPORT_DRIVER_BRANCHES, branch, ctx, window):
            yield Finding(pool.resource, msg)


@rule(
    "versions-in-support",
    "The stack's Kubernetes minor, EKS AMI release and GPU driver branch have at least `min-support-days` (30) days of "
    "standard support left on the day the gate runs.",
    "mandatory",
    "stack",
    category="versions",
    thresholds={"min-support-days": 30},
)
def versions_in_support(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Past end of standard support a version gets no security fixes, and on EKS it costs extended-support fees.

    Dates come from the lockfile's `support:` section (EKS user guide "Kubernetes version lifecycle",
    NVIDIA's "Supported Drivers and CUDA Toolkit Versions" lifecycle table); the day is `ctx.day`. The gate
    fails a month ahead, while a maintenance can still be planned, not on the day support ends.
    """
    yield from _support_findings(plan, ctx, "mandatory")


@rule(
    "versions-support-ending",
    "The stack's Kubernetes minor, EKS AMI release and GPU driver branch have at least `min-support-days-advisory` (90) days of "
    "standard support left (advisory, until the mandatory window of versions-in-support).",
    "advisory",
    "stack",
    category="versions",
    thresholds={"min-support-days-advisory": 90},
)
def versions_support_ending(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """A quarter ahead: the upgrade (EKS control plane, AMIs, a driver branch) is a planned maintenance, not an emergency."""
    yield from _support_findings(plan, ctx, "advisory")


def _golden_node_groups(plan: PlanView) -> list[tuple[Resource, Resource | None]]:
    """(node group, its launch template) of every node group that runs, or says it runs, a golden image."""
    out = []
    for ng in plan.of_type(NODE_GROUP):
        lt = launch_template_of(plan, ng)
        if golden_image.MANIFEST_TAG in (ng.inputs.get("tags") or {}) or (lt is not None and lt.inputs.get("imageId")):
            out.append((ng, lt))
    return out


def _no_golden_image(plan: PlanView, ctx: Context) -> str | None:
    return None if _golden_node_groups(plan) else "no EKS node group runs a golden image"


def _stack_region(plan: PlanView) -> str | None:
    """The stack's region, from the zones of the subnets it creates (None when it creates none)."""
    regions = {vpc.region_of_zone(str(r.inputs.get("availabilityZone", ""))) for r in plan.of_type(SUBNET)}
    regions.discard(None)
    return str(next(iter(regions))) if len(regions) == 1 else None


def _user_data(lt: Resource) -> str:
    try:
        return base64.b64decode(str(lt.inputs.get("userData") or ""), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


@rule(
    "golden-image-matches-lockfile",
    "A pool on a golden image boots an AMI this repository's Packer template built, in the stack's region, with the "
    "lockfile's driver and the cluster's kubelet, and joins through the image's EKS bootstrap.",
    "mandatory",
    "stack",
    category="versions",
    not_applicable=_no_golden_image,
)
def golden_image_matches_lockfile(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """An image with another driver, no kubelet or no bootstrap brings up nodes that never offer GPUs or never join.

    Judged from the build's own files (behaviour.image_manifest): the image manifest the role wrote on the image and
    Packer's manifest of the AMIs it registered, tied by the Packer run id.
    """
    root = ctx.root or Path.cwd()
    subnets_region = _stack_region(plan)
    kubernetes = next((str(c.inputs.get("version")) for c in plan.of_type(EKS_CLUSTER)), ctx.deployed.kubernetes.version)
    cluster_name = next((str(c.inputs.get("name")) for c in plan.of_type(EKS_CLUSTER) if c.inputs.get("name")), None)
    for ng, lt in _golden_node_groups(plan):
        name = (ng.inputs.get("tags") or {}).get(golden_image.MANIFEST_TAG)
        ami = str(lt.inputs.get("imageId") or "") if lt is not None else ""
        if not name:
            yield Finding(ng.name, f"the launch template boots {ami} but the node group names no image manifest ({golden_image.MANIFEST_TAG} tag)")
            continue
        if not ami:
            yield Finding(ng.name, f"tagged with image manifest {name}, but its launch template boots no image (imageId)")
            continue
        assert lt is not None  # the AMI came from it
        # A new cluster's endpoint is unknown during a first preview, so is the user data built from it: not judgeable.
        script = _user_data(lt)
        if lt.inputs.get("userData") != UNKNOWN and (golden_image.BOOTSTRAP not in script or (cluster_name and cluster_name not in script)):
            yield Finding(lt.name, f"the user data does not run {golden_image.BOOTSTRAP} for the cluster: EKS adds none to a custom AMI")
        region = (ng.inputs.get("tags") or {}).get(golden_image.REGION_TAG) or subnets_region
        nvswitch = any(ctx.catalog.instance(t).nvswitch for t in instance_types_of(plan, ng) if t in ctx.catalog.instance_types)
        manifest = image_manifest.read_json(root / name, root)
        if isinstance(manifest, str):
            yield Finding(ng.name, f"image manifest {name}: {manifest}")
            continue
        packer = image_manifest.read_json((root / name).parent / image_manifest.PACKER_MANIFEST, root)
        if isinstance(packer, str):
            yield Finding(ng.name, f"image manifest {name}: {packer} beside it")
            continue
        for problem in image_manifest.image_problems(manifest, packer, ami, region, ctx.deployed, kubernetes, nvswitch):
            yield Finding(ng.name, f"golden image {ami} ({name}): {problem}")
