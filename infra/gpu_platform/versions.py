"""The version lockfile: typed, loaded once, and checked against its compatibility matrix."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import date
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from gpu_platform.errors import ConfigError, Problem, safe_loader
from gpu_platform.spec.errors import problems_from_validation

LOCKFILE = "infra/gpu_platform/data/versions.yaml"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EksAmi(_Frozen):
    """The EKS AMI pinned for managed node groups."""

    ami_type: str
    system_ami_type: str
    ami_release_version: str
    ami_driver_branch: str
    addons: dict[str, str]
    ami_packages: dict[str, str] = Field(default_factory=dict)
    """Packages the pinned AMI release installs (amazon-eks-ami CHANGELOG.md): checked against the matrix."""


class Kubernetes(_Frozen):
    """Control-plane minor version."""

    version: str


class PackagePin(_Frozen):
    """A component version with exact package versions per package source."""

    version: str
    packages: dict[str, str] = Field(default_factory=dict)


class Driver(PackagePin):
    """The NVIDIA driver: branch and exact version (two-level pin)."""

    branch: str


class KernelRange(_Frozen):
    """Inclusive range of host kernel minors the driver is supported on."""

    min: str
    max: str


OCI = "oci://"
CHART_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Chart(_Frozen):
    """A Helm chart pinned to one version: `repository` + chart name, or an OCI reference in `chart` alone.

    The Pulumi Kubernetes provider (provider/pkg/provider/helm_release.go, `resolveChartName` and
    `locateChart`) treats any `repositoryOpts.repo` that parses as a URL as a classic chart repository
    and fetches its `index.yaml`; an OCI registry there fails at `pulumi up`. OCI charts therefore go in
    `chart: oci://<registry>/<path>/<name>` with no repository, and the loader refuses every other form.
    """

    chart: str
    repository: str | None = None
    version: str

    @field_validator("repository")
    @classmethod
    def _classic_repository(cls, repository: str | None, info: ValidationInfo) -> str | None:
        chart = str(info.data.get("chart", ""))
        if repository is None:
            return None
        if chart.startswith(OCI):
            raise ValueError(f"an OCI chart ({chart}) takes no repository; allowed: chart: oci://<registry>/<path>/<name> alone")
        if repository.startswith(OCI):
            raise ValueError(
                "an OCI registry here is read by the Pulumi provider as a classic index.yaml repository and fails at `pulumi up`; "
                f"allowed: chart: {repository.rstrip('/')}/{chart} with no repository"
            )
        if not repository.startswith("https://"):
            raise ValueError("not a chart repository URL; allowed: https://...")
        return repository

    @model_validator(mode="after")
    def _one_form(self) -> Chart:
        if self.chart.startswith(OCI):
            if not CHART_NAME.match(self.name) or "/" not in self.chart.removeprefix(OCI):
                raise ValueError(f"chart {self.chart!r} is not an OCI reference; allowed: oci://<registry>/<path>/<name>")
        elif self.repository is None:
            raise ValueError(f"chart {self.chart!r} needs a repository; allowed: repository: https://..., or chart: oci://<registry>/<path>/<name>")
        elif not CHART_NAME.match(self.chart):
            raise ValueError(f"chart {self.chart!r} is not a chart name; allowed: lowercase letters, digits and '-'")
        return self

    @property
    def name(self) -> str:
        """The chart's own name (the last path segment of an OCI reference)."""
        return self.chart.rstrip("/").rsplit("/", 1)[-1]

    @property
    def repository_url(self) -> str | None:
        """The classic repository to pass as `repositoryOpts.repo` (None for OCI charts)."""
        return self.repository


class Image(_Frozen):
    """A container image pinned to one tag."""

    repository: str
    tag: str

    @property
    def ref(self) -> str:
        """`repository:tag`."""
        return f"{self.repository}:{self.tag}"


class BranchSupport(_Frozen):
    """What one driver branch supports."""

    max_cuda: str
    architectures: tuple[str, ...]


class KubeRange(_Frozen):
    """Inclusive range of Kubernetes minors a component supports."""

    min: str
    max: str


class Compatibility(_Frozen):
    """The compatibility matrix checked on load."""

    driver_branches: dict[str, BranchSupport]
    kubernetes: dict[str, KubeRange]
    gpu_min_driver_branch: dict[str, str]
    containerd: dict[str, str] = Field(default_factory=dict)
    # kubelet facts that decide which node OS can join: cgroup_v2_from, the first minor whose kubelet
    # refuses cgroup v1 by default (failCgroupV1).
    kubelet: dict[str, str] = Field(default_factory=dict)


class SupportEnd(_Frozen):
    """End of standard support of one pinned version or branch, with the vendor page that states it.

    `ends` is null only where the vendor publishes no date; `policy` must then say what governs
    support instead (e.g. "supported as an operand of the pinned GPU Operator release"), so a
    missing date is a recorded fact, never an omission.
    """

    ends: date | None
    source: str = Field(pattern=r"^https://\S+$")
    policy: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _dated_or_explained(self) -> SupportEnd:
        if self.ends is None and not self.policy:
            raise ValueError(
                "ends is null without a policy; allowed: ends: YYYY-MM-DD, or ends: null with policy: <why the vendor publishes no date>"
            )
        return self


# Components whose pinned version or branch must have a `support:` entry, and how each is keyed.
SUPPORT_KUBERNETES = "kubernetes"  # by Kubernetes minor: EKS standard support
SUPPORT_EKS_AMI = "eks_ami"  # by EKS AMI release version: the AMI is supported while its minor is
SUPPORT_DRIVER_BRANCHES = "nvidia_driver_branches"  # by driver branch: NVIDIA's driver lifecycle
# The bare-metal node stack the Ansible roles install, each keyed as its vendor versions support:
SUPPORT_CUDA = "cuda"  # by CUDA minor
SUPPORT_FABRIC_MANAGER = "fabric_manager"  # by driver branch (Fabric Manager is versioned as the driver)
SUPPORT_DCGM = "dcgm"  # by DCGM minor ("each Y release is supported for a year")
SUPPORT_CONTAINER_TOOLKIT = "container_toolkit"  # by toolkit minor
SUPPORT_MIG_PARTED = "mig_parted"  # by mig-parted minor


class CudaRange(_Frozen):
    """Inclusive range of CUDA toolkit minors a repository publishes."""

    min: str
    max: str


class ImageKernels(_Frozen):
    """Kernel series (major.minor) the OS's current cloud images boot, with where and when that was read.

    `series` maps a kernel flavour (ga, hwe, aws-rolling, ...) to its series; null where no source
    gave the figure (the lockfile then says so in `note`, rather than guessing one).
    """

    series: dict[str, str | None]
    sources: tuple[str, ...]
    read: date
    note: str | None = None


class Availability(_Frozen):
    """What NVIDIA's package repository for one OS publishes (driver branches, CUDA minors)."""

    package_source: str
    source: str
    driver_branches: tuple[str, ...]
    cuda: CudaRange | None = None
    # The cgroup hierarchy the OS's images boot by default (v1: per-controller mounts; v2: unified).
    cgroup: Literal["v1", "v2"] | None = None
    image_kernels: ImageKernels | None = None


class Overlay(_Frozen):
    """A named set of lockfile keys laid over the pins for one environment, with its reason."""

    why: str
    applies_to: dict[str, tuple[str, ...]]
    overrides: dict[str, Any]


class Lockfile(_Frozen):
    """Every pinned version in the project."""

    lock_schema: int = Field(alias="schema")
    tools: dict[str, str]
    kubernetes: Kubernetes
    eks: EksAmi
    nvidia_driver: Driver
    cuda: PackagePin
    kernel: KernelRange
    fabric_manager: PackagePin
    container_toolkit: PackagePin
    dcgm: PackagePin
    mig_parted: PackagePin
    charts: dict[str, Chart]
    images: dict[str, Image]
    compatibility: Compatibility
    # component -> pinned version or branch -> end of standard support (see support_end).
    support: dict[str, dict[str, SupportEnd]] = Field(default_factory=dict)
    package_availability: dict[str, Availability] = Field(default_factory=dict)
    overlays: dict[str, Overlay] = Field(default_factory=dict)

    def chart(self, name: str) -> Chart:
        """A pinned chart by its lockfile key."""
        return self.charts[name]

    def image(self, name: str) -> Image:
        """A pinned image by its lockfile key."""
        return self.images[name]


def minor(version: str) -> tuple[int, ...]:
    """Numeric (major, minor) of a dotted version string, with or without a leading v."""
    parts = version.lstrip("v").split(".")
    return tuple(int(p) for p in parts[:2])


REQUIRED_CHARTS = (
    "gpu-operator",
    "kueue",
    "volcano",
    "cluster-autoscaler",
    "kube-prometheus-stack",
    "jobset",
    "kubeflow-trainer",
    "kuberay-operator",
)
REQUIRED_IMAGES = ("driver", "device-plugin", "mig-manager", "dcgm-exporter", "cluster-autoscaler", "trainer-torch-runtime")


def check_compatibility(lock: Lockfile, file: str = LOCKFILE, prefix: str = "") -> list[Problem]:
    """Every way the pinned versions contradict each other or the matrix (`prefix` names an overlay's keys)."""
    problems: list[Problem] = []
    drv = lock.nvidia_driver
    matrix = lock.compatibility
    branch = matrix.driver_branches.get(drv.branch)
    if not drv.version.startswith(drv.branch + "."):
        problems.append(Problem(file, "nvidia_driver.version", f"'{drv.version}' is not on branch {drv.branch}", f"allowed: {drv.branch}.x"))
    for source, pkg in drv.packages.items():
        if drv.version not in pkg:
            problems.append(
                Problem(
                    file,
                    f"nvidia_driver.packages.{source}",
                    f"'{pkg}' does not carry driver {drv.version}",
                    f"allowed: a package version containing {drv.version}",
                )
            )
    if branch is None:
        problems.append(
            Problem(
                file,
                "nvidia_driver.branch",
                f"branch {drv.branch} is not in compatibility.driver_branches",
                f"allowed: {', '.join(sorted(matrix.driver_branches))}",
            )
        )
    elif minor(lock.cuda.version) > minor(branch.max_cuda):
        problems.append(
            Problem(
                file, "cuda.version", f"CUDA {lock.cuda.version} needs a newer driver than branch {drv.branch}", f"allowed: CUDA <= {branch.max_cuda}"
            )
        )
    if lock.fabric_manager.version != drv.version:
        problems.append(
            Problem(
                file,
                "fabric_manager.version",
                f"'{lock.fabric_manager.version}' differs from the driver {drv.version}",
                "fabric manager must equal the driver version exactly",
            )
        )
    if lock.images["driver"].tag != drv.version:
        problems.append(
            Problem(file, "images.driver.tag", f"'{lock.images['driver'].tag}' differs from the driver {drv.version}", "allowed: the driver version")
        )
    if minor(lock.kernel.min) > minor(lock.kernel.max):
        problems.append(Problem(file, "kernel", f"min {lock.kernel.min} is above max {lock.kernel.max}", "allowed: min <= max"))
    k8s = minor(lock.kubernetes.version)
    for component, rng in matrix.kubernetes.items():
        if not minor(rng.min) <= k8s <= minor(rng.max):
            problems.append(
                Problem(
                    file,
                    f"compatibility.kubernetes.{component}",
                    f"Kubernetes {lock.kubernetes.version} is outside {component}'s supported range",
                    f"allowed: {rng.min}..{rng.max}",
                )
            )
    if not lock.eks.ami_release_version.startswith(lock.kubernetes.version + "."):
        problems.append(
            Problem(
                file,
                "eks.ami_release_version",
                f"'{lock.eks.ami_release_version}' is not built for Kubernetes {lock.kubernetes.version}",
                f"allowed: {lock.kubernetes.version}.x-<date>",
            )
        )
    if lock.images["cluster-autoscaler"].tag.lstrip("v").rsplit(".", 1)[0] != lock.kubernetes.version:
        problems.append(
            Problem(
                file, "images.cluster-autoscaler.tag", "cluster-autoscaler must match the Kubernetes minor", f"allowed: v{lock.kubernetes.version}.x"
            )
        )
    if lock.eks.ami_driver_branch not in matrix.driver_branches:
        problems.append(
            Problem(
                file,
                "eks.ami_driver_branch",
                f"branch {lock.eks.ami_driver_branch} is not in compatibility.driver_branches",
                f"allowed: {', '.join(sorted(matrix.driver_branches))}",
            )
        )
    problems += _check_ami_packages(lock, file)
    if lock.images["mig-manager"].tag.lstrip("v") != lock.mig_parted.version:
        problems.append(
            Problem(file, "images.mig-manager.tag", "mig-manager and mig-parted must be the same release", f"allowed: v{lock.mig_parted.version}")
        )
    if not lock.images["dcgm-exporter"].tag.startswith(lock.dcgm.version + "-"):
        problems.append(
            Problem(
                file,
                "images.dcgm-exporter.tag",
                f"dcgm-exporter is not built on DCGM {lock.dcgm.version}",
                f"allowed: {lock.dcgm.version}-<exporter>-<os>",
            )
        )
    for key in REQUIRED_CHARTS:
        if key not in lock.charts:
            problems.append(Problem(file, f"charts.{key}", "missing", "every platform chart must be pinned"))
    for key in REQUIRED_IMAGES:
        if key not in lock.images:
            problems.append(Problem(file, f"images.{key}", "missing", "every image the program sets must be pinned"))
    # A pin that already contradicts the matrix is reported there, once: its missing support entry
    # would only repeat the same mistake (a stack overriding cuda.version to a release too new).
    problems.extend(check_support_recorded(lock, file, skip=frozenset(p.path.split(".")[0] for p in problems)))
    if not any(p.path.startswith(("nvidia_driver.", "cuda.")) for p in problems):
        # Which OS publishes a pair only means something once the pair itself is consistent;
        # otherwise one bad CUDA pin would also read as "not published" once per OS.
        problems.extend(check_availability(lock, file))
    problems.extend(check_image_kernels(lock, file))
    for where, value in _all_strings(lock.model_dump(by_alias=True, mode="json")):
        if value in {"latest", "stable", "main", "master"} or value.endswith(":latest"):
            problems.append(Problem(file, where, f"floating version '{value}'", "allowed: an exact version"))
    return [dataclasses.replace(p, path=prefix + p.path) for p in problems] if prefix else problems


def check_availability(lock: Lockfile, file: str = LOCKFILE) -> list[Problem]:
    """Pinned driver branch and CUDA release that NVIDIA's repository does not publish for an OS a package source serves."""
    problems: list[Problem] = []
    drv = lock.nvidia_driver
    cuda = minor(lock.cuda.version)
    branch = lock.compatibility.driver_branches.get(drv.branch)
    # A CUDA release the driver branch cannot run is reported once, by check_compatibility.
    cuda_runs = branch is None or cuda <= minor(branch.max_cuda)
    for os_key, avail in sorted(lock.package_availability.items()):
        if avail.package_source in drv.packages and drv.branch not in avail.driver_branches:
            problems.append(
                Problem(
                    file,
                    f"nvidia_driver.packages.{avail.package_source}",
                    f"driver branch {drv.branch} is not published for {os_key} ({avail.source})",
                    f"allowed on {os_key}: branches {', '.join(avail.driver_branches)}",
                )
            )
        published = avail.cuda is not None and minor(avail.cuda.min) <= cuda <= minor(avail.cuda.max)
        if cuda_runs and avail.package_source in lock.cuda.packages and not published:
            have = f"{avail.cuda.min}..{avail.cuda.max}" if avail.cuda else "none"
            problems.append(
                Problem(
                    file,
                    f"cuda.packages.{avail.package_source}",
                    f"CUDA {lock.cuda.version} is not published for {os_key} ({avail.source})",
                    f"allowed on {os_key}: CUDA {have}",
                )
            )
    return problems


def _check_ami_packages(lock: Lockfile, file: str) -> list[Problem]:
    """The EKS AMI's containerd must read CDI (the device plugin injects GPUs by CDI; the stack configures no containerd there)."""
    out: list[Problem] = []
    packages = lock.eks.ami_packages
    containerd, cdi_min = packages.get("containerd"), lock.compatibility.containerd.get("cdi_min")
    if containerd and cdi_min and minor(containerd) < minor(cdi_min):
        out.append(
            Problem(
                file,
                "eks.ami_packages.containerd",
                f"containerd {containerd} on the EKS GPU nodes cannot inject GPUs by CDI",
                f"allowed: {cdi_min} or newer (compatibility.containerd.cdi_min)",
            )
        )
    return out


def check_image_kernels(lock: Lockfile, file: str = LOCKFILE) -> list[Problem]:
    """Kernel series an OS's current images boot that the driver preflight's kernel.min..kernel.max refuses.

    nvidia_driver's preflight (tasks/preflight.yml) compares the running kernel's major.minor with
    the same kernel.min and kernel.max, so an image kernel outside them fails on every new node.
    """
    problems: list[Problem] = []
    low, high = minor(lock.kernel.min), minor(lock.kernel.max)
    for os_key, avail in sorted(lock.package_availability.items()):
        if avail.image_kernels is None:
            continue
        for flavour, series in sorted(avail.image_kernels.series.items()):
            if series is not None and not low <= minor(series) <= high:
                problems.append(
                    Problem(
                        file,
                        f"package_availability.{os_key}.image_kernels.series.{flavour}",
                        f"{os_key} images boot kernel {series} ({flavour}), outside the driver's tested range",
                        f"allowed: kernel.min {lock.kernel.min} to kernel.max {lock.kernel.max}",
                    )
                )
    return problems


def kubelet_refuses_cgroup_v1(lock: Lockfile) -> bool:
    """Whether the pinned Kubernetes minor's kubelet refuses to start on cgroup v1 (failCgroupV1 true by default)."""
    since = lock.compatibility.kubelet.get("cgroup_v2_from")
    return since is not None and minor(lock.kubernetes.version) >= minor(since)


def node_oses(lock: Lockfile) -> list[str]:
    """package_availability keys a GPU node image can be built on.

    NVIDIA publishes the pinned driver branch and CUDA minor there, and its images boot a cgroup
    hierarchy the pinned kubelet accepts.
    """
    branch, cuda = lock.nvidia_driver.branch, minor(lock.cuda.version)
    found = []
    for key, avail in sorted(lock.package_availability.items()):
        published = branch in avail.driver_branches and avail.cuda is not None and minor(avail.cuda.min) <= cuda <= minor(avail.cuda.max)
        if published and not (avail.cgroup == "v1" and kubelet_refuses_cgroup_v1(lock)):
            found.append(key)
    return found


def support_end(lock: Lockfile, component: str, key: str) -> SupportEnd | None:
    """End of standard support of `component` at version or branch `key`, if the lockfile records it."""
    return lock.support.get(component, {}).get(key)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def node_support_keys(lock: Lockfile) -> list[tuple[str, str, str]]:
    """(lockfile key path, support component, support key) of the bare-metal node stack's pins."""
    return [
        ("nvidia_driver.branch", SUPPORT_DRIVER_BRANCHES, lock.nvidia_driver.branch),
        ("cuda.version", SUPPORT_CUDA, _minor(lock.cuda.version)),
        ("fabric_manager.version", SUPPORT_FABRIC_MANAGER, lock.fabric_manager.version.split(".")[0]),
        ("dcgm.version", SUPPORT_DCGM, _minor(lock.dcgm.version)),
        ("container_toolkit.version", SUPPORT_CONTAINER_TOOLKIT, _minor(lock.container_toolkit.version)),
        ("mig_parted.version", SUPPORT_MIG_PARTED, _minor(lock.mig_parted.version)),
    ]


def pinned_support_keys(lock: Lockfile) -> list[tuple[str, str, str]]:
    """(lockfile key path, support component, support key) of every pin that must have a support entry."""
    return [
        ("kubernetes.version", SUPPORT_KUBERNETES, lock.kubernetes.version),
        ("eks.ami_release_version", SUPPORT_EKS_AMI, lock.eks.ami_release_version),
        ("eks.ami_driver_branch", SUPPORT_DRIVER_BRANCHES, lock.eks.ami_driver_branch),
        *node_support_keys(lock),
    ]


def past_support(entry: SupportEnd | None, today: date) -> bool:
    """True once `today` is after the last day of standard support (the `ends` day itself is still in).

    An entry without a date (the vendor publishes none; its `policy` says why) never expires here.
    """
    return entry is not None and entry.ends is not None and today > entry.ends


def days_left(entry: SupportEnd | None, today: date) -> int | None:
    """Days from `today` to the last day of standard support (0 on that day; negative after); None without a date."""
    return None if entry is None or entry.ends is None else (entry.ends - today).days


# support_window's status -> the level the gate gives it (versions-in-support, versions-support-ending; ok and no-date: none).
SUPPORT_WINDOWS = {"no-entry": "mandatory", "past": "mandatory", "mandatory": "mandatory", "advisory": "advisory"}


def support_window(entry: SupportEnd | None, today: date, fail_days: float, warn_days: float) -> str:
    """Where a pin stands on `today`: no-entry, no-date, past, mandatory, advisory or ok.

    no-date: the vendor publishes none; mandatory: fewer than `fail_days` left; advisory: fewer than
    `warn_days`. One reading for the gate's rules and `gpu-platform versions`.
    """
    left = days_left(entry, today)
    if entry is None:
        return "no-entry"
    if left is None:
        return "no-date"
    if left < 0:
        return "past"
    if left < fail_days:
        return "mandatory"
    return "advisory" if left < warn_days else "ok"


def check_support_recorded(lock: Lockfile, file: str = LOCKFILE, skip: frozenset[str] = frozenset()) -> list[Problem]:
    """Every pinned Kubernetes minor, AMI release, driver branch and node component has its end of support recorded.

    Only presence is checked on load: whether a date has passed depends on the day the gate runs,
    which is the `versions-in-support` rule's job, so an old checkout still loads its lockfile.
    """
    problems = []
    for where, component, key in pinned_support_keys(lock):
        if where.split(".")[0] not in skip and support_end(lock, component, key) is None:
            problems.append(
                Problem(
                    file,
                    f"support.{component}",
                    f"no end-of-support entry for {key!r} (pinned at {where})",
                    f'allowed: support.{component}."{key}": {{ends: YYYY-MM-DD, source: <vendor URL>}}'
                    " (ends: null only with policy: <why the vendor publishes no date>)",
                )
            )
    return problems


def overlay_data(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Raw lockfile data with the named overlay laid over it (a null in the overlay removes the key)."""
    overlays = data.get("overlays") or {}
    if name not in overlays:
        raise KeyError(name)
    return deep_merge(data, overlays[name]["overrides"], null_removes=True)


def overlay_lockfile(lock: Lockfile, name: str) -> Lockfile:
    """The pins `lock` holds with its overlay `name` laid over them (validated on load already)."""
    data = lock.model_dump(by_alias=True)
    return Lockfile.model_validate(deep_merge(data, lock.overlays[name].overrides, null_removes=True))


def _all_strings(node: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(node, Mapping):
        return [item for k, v in node.items() for item in _all_strings(v, f"{path}.{k}" if path else str(k))]
    if isinstance(node, (list, tuple)):
        return [item for i, v in enumerate(node) for item in _all_strings(v, f"{path}[{i}]")]
    return [(path, node)] if isinstance(node, str) else []


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any], *, null_removes: bool = False) -> dict[str, Any]:
    """`base` with `override` laid over it, key by key (a stack's versions override, an overlay).

    With `null_removes` a null in `override` removes the key, as lockfile overlays and the Ansible
    lookup plugin's `_merge` treat it; nulls in `base` itself (a support entry's `ends: null`) are
    values and stay.
    """
    merged = dict(base)
    for key, value in override.items():
        if null_removes and value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value, null_removes=null_removes)
        else:
            merged[key] = value
    return merged


def raw_lockfile() -> dict[str, Any]:
    """The lockfile as plain data."""
    text = resources.files("gpu_platform").joinpath("data/versions.yaml").read_text()
    data = yaml.load(text, Loader=safe_loader())
    assert isinstance(data, dict)
    return data


def parse_lockfile(data: Mapping[str, Any], file: str = LOCKFILE) -> Lockfile:
    """Validate lockfile data and its compatibility matrix; ConfigError lists every problem."""
    try:
        lock = Lockfile.model_validate(data)
    except Exception as exc:  # pydantic.ValidationError, reported as one line per problem
        raise ConfigError(problems_from_validation(exc, file, prefix="", model=Lockfile)) from None
    problems = check_compatibility(lock, file)
    seen = {(p.path, p.message) for p in problems}
    for name in lock.overlays:
        # Each overlay's result must be a lockfile the roles could run with, checked the same way;
        # a problem it inherits from the pins themselves is reported once, at the pin.
        merged = overlay_data(data, name)
        merged.pop("overlays", None)
        prefix = f"overlays.{name}.overrides"
        try:
            own = [q for q in check_compatibility(Lockfile.model_validate(merged), file) if (q.path, q.message) not in seen]
            problems.extend(dataclasses.replace(q, path=f"{prefix}.{q.path}") for q in own)
        except Exception as exc:  # pydantic.ValidationError from a malformed override
            problems.extend(problems_from_validation(exc, file, prefix=prefix))
    if problems:
        raise ConfigError(problems)
    return lock


@cache
def load_lockfile() -> Lockfile:
    """The project's lockfile, validated (cached: immutable)."""
    return parse_lockfile(raw_lockfile())
