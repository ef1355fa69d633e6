"""Frozen, typed models of a stack's `gpu-platform:` config. Keys are camelCase in YAML."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from gpu_platform.catalog import SharingMode
from gpu_platform.versions import Lockfile

DnsLabel = Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$", max_length=40)]
WorkloadClass = Literal["training", "inference", "batch", "development"]
CapacityTier = Literal["reserved", "capacity-block", "on-demand", "spot"]
Preemption = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"]
LogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
Priority = Literal["production-training", "inference", "batch", "experiments"]


class Model(BaseModel):
    """Base for every spec model: frozen, unknown keys rejected, camelCase keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Scaling(Model):
    """Node counts of a node group."""

    min_size: int = Field(alias="min", ge=0, le=1000)
    desired_size: int = Field(alias="desired", ge=0, le=1000)
    max_size: int = Field(alias="max", ge=1, le=1000)


class SystemNodes(Scaling):
    """The CPU node group that runs controllers (operator, Kueue, autoscaler, monitoring)."""

    instance_type: str = "m7i.xlarge"
    min_size: int = Field(default=2, alias="min", ge=1, le=100)
    desired_size: int = Field(default=2, alias="desired", ge=1, le=100)
    max_size: int = Field(default=4, alias="max", ge=1, le=100)


class ClusterSpec(Model):
    """A new EKS cluster, or an existing cluster reached through a kubeconfig (on-prem)."""

    provider: Literal["eks", "existing"]
    name: DnsLabel
    endpoint_private_access: bool = True
    endpoint_public_access: bool = False
    public_access_cidrs: tuple[str, ...] = ()
    secrets_encryption: bool = True
    log_types: tuple[LogType, ...] = ("api", "audit", "authenticator")
    kubeconfig: str | None = None
    context: str | None = None
    system_nodes: SystemNodes = SystemNodes()
    autoscaler: bool = True


class NetworkSpec(Model):
    """A new VPC across availability zones, or existing private subnets (zone -> subnet id)."""

    mode: Literal["new", "existing"] = "new"
    cidr: str = Field(default="10.0.0.0/16", pattern=r"^\d+\.\d+\.\d+\.\d+/(1[6-9]|2[0-4])$")
    availability_zones: tuple[str, ...] = ()
    vpc_id: str | None = Field(default=None, pattern=r"^vpc-[0-9a-f]{8,17}$")
    subnets: dict[str, Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]] = Field(default_factory=dict)

    def zones(self) -> tuple[str, ...]:
        """The zones the cluster spans: the new VPC's zones, or those of the existing subnets."""
        return self.availability_zones if self.mode == "new" else tuple(self.subnets)


class Reservation(Model):
    """An On-Demand Capacity Reservation (by id or resource group) or a Capacity Block."""

    id: str | None = Field(default=None, pattern=r"^cr-[0-9a-f]{8,17}$")
    resource_group_arn: str | None = Field(default=None, pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/.+$")


class Sharing(Model):
    """How a pool's GPUs are shared: whole GPUs, time-slicing, MPS, or MIG."""

    mode: SharingMode = "none"
    replicas: int | None = None
    mig_config: str | None = None


class NodePool(Model):
    """One GPU node pool: what runs there, how it is bought, and how its GPUs are shared."""

    name: DnsLabel
    workload_class: WorkloadClass
    capacity: CapacityTier
    scaling: Scaling | None = None
    instance_types: tuple[str, ...] = ()
    gpu_model: str | None = None
    gpus_per_node: int | None = Field(default=None, ge=1, le=16)
    nodes: tuple[str, ...] = ()
    reservation: Reservation | None = None
    efa: bool = False
    root_volume_gib: int = Field(default=200, alias="rootVolumeGiB", ge=100, le=16000)
    availability_zones: tuple[str, ...] = ()
    sharing: Sharing = Sharing()
    labels: dict[str, str] = Field(default_factory=dict)
    max_unavailable: int = Field(default=1, ge=1, le=100)


class TenantQuota(Model):
    """A tenant's share of one pool, in physical GPUs' worth (converted to the pool's resources)."""

    pool: str
    gpus: int = Field(ge=0, le=10000)
    borrowing_limit: int | None = Field(default=None, ge=0)
    lending_limit: int | None = Field(default=None, ge=0)


class TenantResources(Model):
    """Non-GPU ceilings of a tenant namespace."""

    cpu: int = Field(default=64, ge=1)
    memory_gib: int = Field(default=256, alias="memoryGiB", ge=1)
    pods: int = Field(default=200, ge=1)


class Tenant(Model):
    """A team that shares the platform: namespace, groups, quotas and queue placement."""

    name: DnsLabel
    namespace: DnsLabel | None = None
    groups: tuple[str, ...] = ()
    cohort: DnsLabel = "platform"
    priority: Priority = "batch"
    fair_share_weight: int = Field(default=1, ge=1, le=100)
    quotas: tuple[TenantQuota, ...] = ()
    resources: TenantResources = TenantResources()

    @property
    def ns(self) -> str:
        """The tenant's namespace (its name unless set)."""
        return self.namespace or self.name


class KueuePreemption(Model):
    """Kueue ClusterQueue preemption policy shared by every tenant queue."""

    reclaim_within_cohort: Preemption = "Any"
    within_cluster_queue: Preemption = "LowerPriority"
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "LowerPriority"


class Kueue(Model):
    """Kueue quota and admission."""

    enabled: bool = True
    preemption: KueuePreemption = KueuePreemption()
    fair_sharing: bool = True


class Volcano(Model):
    """Volcano gang scheduling for distributed training."""

    enabled: bool = False


class Queueing(Model):
    """Which batch schedulers the platform runs."""

    kueue: Kueue = Kueue()
    volcano: Volcano = Volcano()


class AlertThresholds(Model):
    """Thresholds of the GPU alert rules."""

    gpu_temp_celsius: int = Field(default=83, ge=60, le=100)
    framebuffer_percent: int = Field(default=95, ge=50, le=100)
    idle_util_percent: int = Field(default=30, ge=1, le=100)
    idle_minutes: int = Field(default=30, ge=5, le=1440)
    pending_minutes: int = Field(default=60, ge=5, le=10080)


class Monitoring(Model):
    """GPU monitoring: Prometheus (installed or existing), alerts and dashboard."""

    prometheus: Literal["install", "existing"] = "install"
    namespace: DnsLabel = "monitoring"
    rule_labels: dict[str, str] = Field(default_factory=lambda: {"release": "kube-prometheus-stack"})
    alerts: AlertThresholds = AlertThresholds()
    dashboard: bool = True


class UpgradePolicy(Model):
    """GPU Operator driver upgrade policy (only used when the operator manages drivers)."""

    auto_upgrade: bool = False
    max_parallel_upgrades: int = Field(default=1, ge=1, le=100)
    max_unavailable: str = Field(default="25%", pattern=r"^(\d+|\d{1,3}%)$")
    drain_timeout_seconds: int = Field(default=600, ge=60, le=7200)


class GpuOperator(Model):
    """Who installs the driver and toolkit: the node image (EKS AMI, golden image) or the operator."""

    driver: Literal["preinstalled", "operator"] = "preinstalled"
    upgrade_policy: UpgradePolicy = UpgradePolicy()


class PolicyConfig(Model):
    """Per-stack overrides of the policy gate: thresholds and enforcement levels by rule name."""

    thresholds: dict[str, float] = Field(default_factory=dict)
    enforcement: dict[str, Literal["advisory", "mandatory", "disabled"]] = Field(default_factory=dict)


class PlatformSpec(Model):
    """Everything one stack declares, validated, with the lockfile it runs against."""

    stack: str
    environment: DnsLabel
    region: str | None = None
    cluster: ClusterSpec
    network: NetworkSpec = NetworkSpec()
    node_pools: tuple[NodePool, ...]
    tenants: tuple[Tenant, ...] = ()
    queueing: Queueing = Queueing()
    monitoring: Monitoring = Monitoring()
    gpu_operator: GpuOperator = GpuOperator()
    policy: PolicyConfig = PolicyConfig()
    tags: dict[str, str] = Field(default_factory=dict)
    lock: Lockfile

    @property
    def is_eks(self) -> bool:
        """True when this stack creates AWS resources."""
        return self.cluster.provider == "eks"

    def pool(self, name: str) -> NodePool:
        """A node pool by name."""
        return next(p for p in self.node_pools if p.name == name)
