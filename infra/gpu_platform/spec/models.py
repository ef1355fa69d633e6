"""Frozen, typed models of a stack's `gpu-platform:` config. Keys are camelCase in YAML."""

from __future__ import annotations

import ipaddress
from datetime import date
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, StrictBool, StrictFloat, StrictInt
from pydantic.alias_generators import to_camel

from gpu_platform.catalog import SharingMode
from gpu_platform.spec.aws_names import bucket_name, role_arn
from gpu_platform.versions import Lockfile


def _ipv4_network(value: str, prefix: range) -> str:
    """`value` as a canonical IPv4 network whose prefix length is in `prefix` (host bits must be zero)."""
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"not an IPv4 network ({exc})") from None
    if net.prefixlen not in prefix:
        raise ValueError(f"prefix /{net.prefixlen} is outside /{prefix.start}../{prefix.stop - 1}")
    return str(net)


VpcCidr = Annotated[str, AfterValidator(lambda v: _ipv4_network(v, range(16, 25)))]
AnyCidr = Annotated[str, AfterValidator(lambda v: _ipv4_network(v, range(33)))]
DnsLabel = Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$", max_length=40)]
IamRoleArn = Annotated[str, AfterValidator(role_arn)]
BucketName = Annotated[str, AfterValidator(bucket_name)]
WorkloadClass = Literal["training", "inference", "batch", "development"]
CapacityTier = Literal["reserved", "capacity-block", "on-demand", "spot"]
GpuAllocation = Literal["device-plugin", "dra"]
# Kueue v1beta2 ClusterQueue preemption enums (they differ per field).
ReclaimPolicy = Literal["Never", "LowerPriority", "Any"]
WithinQueuePolicy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
LogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
Priority = Literal["production-training", "inference", "batch", "experiments"]
Port = Annotated[StrictInt, Field(ge=1, le=65535)]


class Model(BaseModel):
    """Base for every spec model: frozen, unknown keys rejected, camelCase keys.

    The string under each attribute says what the key means; the key reference and the stack file's
    JSON Schema read it from here (gpu_platform.spec.field_docs), not every process at import.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Scaling(Model):
    """Node counts of a node group."""

    min_size: StrictInt = Field(alias="min", ge=0, le=1000)
    """Fewest nodes the pool scales down to (0 lets an idle pool cost nothing)."""
    desired_size: StrictInt = Field(alias="desired", ge=0, le=1000)
    """Nodes at creation; the autoscaler owns it afterwards (changes are ignored)."""
    max_size: StrictInt = Field(alias="max", ge=1, le=1000)
    """Most nodes the autoscaler may add; the pool's capacity for quotas."""


class SystemNodes(Scaling):
    """The CPU node group that runs controllers (operator, Kueue, autoscaler, monitoring)."""

    instance_type: str = "m7i.xlarge"
    """Instance type of the system (CPU) node group."""
    min_size: StrictInt = Field(default=2, alias="min", ge=1, le=100)
    """Fewest system nodes (two or more keep controllers available)."""
    desired_size: StrictInt = Field(default=2, alias="desired", ge=1, le=100)
    """System nodes at creation."""
    max_size: StrictInt = Field(default=4, alias="max", ge=1, le=100)
    """Most system nodes."""


class ClusterSpec(Model):
    """A new EKS cluster, or an existing cluster reached through a kubeconfig (on-prem)."""

    provider: Literal["eks", "existing"]
    """`eks` creates an EKS cluster; `existing` drives a cluster you already run (on-prem)."""
    name: DnsLabel
    """Cluster name (EKS cluster name, prefix of node group names)."""
    endpoint_private_access: StrictBool = True
    """EKS API reachable from inside the VPC."""
    endpoint_public_access: StrictBool = False
    """EKS API reachable from the internet (then restrict `publicAccessCidrs`)."""
    public_access_cidrs: tuple[AnyCidr, ...] = ()
    """CIDRs allowed to reach a public EKS API endpoint."""
    deployer_cidrs: tuple[AnyCidr, ...] = ()
    """Routed networks (VPN, peered CI runners) `pulumi up` runs from to reach a private-only API; TCP 443 is opened to them."""
    secrets_encryption: StrictBool = True
    """Envelope-encrypt Kubernetes secrets with a rotating KMS key."""
    log_types: tuple[LogType, ...] = ("api", "audit", "authenticator")
    """Control-plane log types sent to CloudWatch."""
    kubeconfig: str | None = None
    """Kubeconfig file of an existing cluster (provider `existing`)."""
    context: str | None = None
    """Kubeconfig context of an existing cluster."""
    inventory: str | None = None
    """Existing clusters: the Ansible inventory directory that builds the nodes, relative to the repository root
    (e.g. `ansible/inventories/dc1`). Ansible then owns the driver, toolkit and MIG layout on those nodes (the
    GPU Operator's mig-manager is off) and the gate compares each pool with its inventory group."""
    system_nodes: SystemNodes = SystemNodes()
    """Size of the system node group (EKS): `{instanceType, min, desired, max}`."""
    autoscaler: StrictBool = True
    """Install cluster-autoscaler with the priority expander (EKS)."""
    load_balancer_controller: StrictBool = True
    """Install the AWS Load Balancer Controller (EKS): Ingress class `alb` and NLB Services
    (`loadBalancerClass: service.k8s.aws/nlb`) with IP targets."""
    api_server_cidrs: tuple[AnyCidr, ...] = ()
    """Existing clusters: addresses of the API servers (the `kubernetes` Service's endpoints), which tenant pods may reach; EKS: the VPC CIDR."""
    api_server_port: Port = 6443
    """Existing clusters: the API servers' port behind the `kubernetes` Service (kubeadm: 6443); EKS: 443."""
    admin_role_arns: tuple[IamRoleArn, ...] = ()
    """IAM roles of platform admins (EKS): an access entry each with `AmazonEKSClusterAdminPolicy`, cluster scope."""


class NetworkSpec(Model):
    """A new VPC across availability zones, or existing private subnets (zone -> subnet id)."""

    mode: Literal["new", "existing"] = "new"
    """`new` builds a VPC; `existing` uses your private subnets."""
    cidr: VpcCidr = "10.0.0.0/16"
    """CIDR of a new VPC (/16 to /24); with `existing`, your VPC's primary CIDR (required: tenant NetworkPolicies name it)."""
    availability_zones: tuple[str, ...] = ()
    """Zones of a new VPC (at least two, in `aws:region`)."""
    vpc_id: str | None = Field(default=None, pattern=r"^vpc-[0-9a-f]{8,17}$")
    """VPC of existing subnets."""
    subnets: dict[str, Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]] = Field(default_factory=dict)
    """Existing private subnets as `zone: subnet-id`."""

    def zones(self) -> tuple[str, ...]:
        """The zones the cluster spans: the new VPC's zones, or those of the existing subnets."""
        return self.availability_zones if self.mode == "new" else tuple(self.subnets)


class Reservation(Model):
    """An On-Demand Capacity Reservation (by id or resource group) or a Capacity Block."""

    id: str | None = Field(default=None, pattern=r"^cr-[0-9a-f]{8,17}$")
    """On-Demand Capacity Reservation or Capacity Block id (`cr-...`)."""
    resource_group_arn: str | None = Field(default=None, pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/.+$")
    """Resource group of several ODCRs (reserved pools only)."""
    placement_group: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
    """Existing cluster placement group the reservation was made in (reserved EFA pools); used instead of a new one."""
    start: date | None = None
    """Capacity Block pools: the block's first day (UTC, `YYYY-MM-DD`); its flavor carries quota only from then."""
    end: date | None = None
    """Capacity Block pools: the day the block ends (UTC, exclusive); from then its flavor carries no quota and the gate fails."""


class Sharing(Model):
    """How a pool's GPUs are shared: whole GPUs, time-slicing, MPS, or MIG."""

    mode: SharingMode = "none"
    """`none` (whole GPUs), `time-slicing`, `mps` or `mig`."""
    replicas: StrictInt | None = None
    """Time-slicing/MPS: workloads per physical GPU (2..48)."""
    mig_config: str | None = None
    """MIG: a standard mig-parted config valid for the pool's GPU, e.g. `all-3g.40gb`."""


class GoldenImage(Model):
    """A golden image built by this repository's Packer template (`ansible/packer`), as an EKS pool's AMI."""

    ami: str = Field(pattern=r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")
    """The AMI id Packer registered (`ami-...`), in the stack's region."""
    manifest: str = Field(min_length=1, max_length=255)
    """The build's image manifest (`<dir>/<host>-image-manifest.json`), relative to the repository root; the gate
    reads it and the Packer manifest (`<dir>/packer-manifest.json`) beside it."""


class NodePool(Model):
    """One GPU node pool: what runs there, how it is bought, and how its GPUs are shared."""

    name: DnsLabel
    """Pool name (DNS label, unique in the stack)."""
    workload_class: WorkloadClass
    """`training`, `inference`, `batch` or `development`."""
    capacity: CapacityTier
    """`reserved` (ODCR), `capacity-block`, `on-demand` or `spot`; on-prem: `reserved` or `on-demand`."""
    scaling: Scaling | None = None
    """`{min, desired, max}` nodes (EKS; reserved pools need min = desired = max, Capacity Block pools min 0)."""
    instance_types: tuple[str, ...] = ()
    """EC2 GPU instance types, same GPU model and count (EKS; several for Spot)."""
    gpu_model: str | None = None
    """GPU model of an on-prem pool, e.g. `H100-80GB`."""
    gpus_per_node: StrictInt | None = Field(default=None, ge=1, le=16)
    """GPUs per node of an on-prem pool."""
    nodes: tuple[str, ...] = ()
    """Kubernetes node names of an on-prem pool."""
    reservation: Reservation | None = None
    """Capacity the pool targets: `{id}` or `{resourceGroupArn}`."""
    efa: StrictBool = False
    """EFA on every network card (ENA primary, EFA-only where the type allows), hugepages, a placement group, the EFA device plugin."""
    root_volume_gib: StrictInt = Field(default=200, alias="rootVolumeGiB", ge=100, le=16000)
    """Encrypted gp3 root volume size (GPU images are large)."""
    availability_zones: tuple[str, ...] = ()
    """Zones of the pool (default: every cluster zone; reserved and Capacity Block pools: their reservation's one zone)."""
    sharing: Sharing = Sharing()
    """How the pool's GPUs are shared: `{mode, replicas, migConfig}`."""
    allocation: GpuAllocation = "device-plugin"
    """How pods get the pool's GPUs: `device-plugin` (the GPU Operator's device plugin: `nvidia.com/gpu` and the
    sharing resources) or `dra` (Dynamic Resource Allocation: ResourceClaims through NVIDIA's DRA driver, whole GPUs,
    a fixed size; docs/dra.md)."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Extra node labels (outside the platform's label domains)."""
    max_unavailable: StrictInt = Field(default=1, ge=1, le=100)
    """Nodes replaced at once during a node group update."""
    fallback: StrictBool | None = None
    """Spot pools (EKS): `true` (default) adds an on-demand node group `<name>-fallback` of the same instance types,
    sized to the tenants' quota on the pool and reachable only by the pool's Spot pods; `false`: Spot pods wait for Spot."""
    whole_nodes: StrictBool | None = None
    """Kueue Topology-Aware Scheduling on the pool: its quota moves to each tenant's `whole-nodes` queue, which places
    pods on nodes that have room for them (default: on for training pools whose nodes always exist: EKS reserved,
    on-prem)."""
    image: GoldenImage | None = None
    """EKS: run the pool on a golden image (`{ami, manifest}`) instead of the EKS-optimized NVIDIA AMI; it must be
    built from an EKS base image (kubelet and `/etc/eks/bootstrap.sh`) with the lockfile's driver."""
    network_topology: StrictBool = False
    """With `wholeNodes` on EKS EFA pools of types AWS labels: the Topology also has the EC2 network layers
    (`topology.k8s.aws/network-node-layer-1..3`), so a job can ask for one network block."""
    _fallback_for: str | None = PrivateAttr(default=None)


class TenantQuota(Model):
    """A tenant's share of one pool, in physical GPUs' worth (converted to the pool's resources)."""

    pool: str
    """Pool the quota is on."""
    gpus: StrictInt = Field(ge=0, le=10000)
    """Nominal quota in physical GPUs' worth (converted to shared or MIG resources)."""
    borrowing_limit: StrictInt | None = Field(default=None, ge=0)
    """GPUs the tenant may borrow from its cohort beyond `gpus`."""
    lending_limit: StrictInt | None = Field(default=None, ge=0)
    """GPUs of `gpus` the tenant may lend to its cohort."""


class TenantResources(Model):
    """Non-GPU ceilings of a tenant namespace."""

    cpu: StrictInt = Field(default=64, ge=1)
    """CPU cores the namespace may request."""
    memory_gib: StrictInt = Field(default=256, alias="memoryGiB", ge=1)
    """Memory the namespace may request."""
    pods: StrictInt = Field(default=200, ge=1)
    """Pods the namespace may run."""
    storage_gib: StrictInt = Field(default=4096, alias="storageGiB", ge=0)
    """Storage all the namespace's volume claims may request together (ResourceQuota `requests.storage`)."""
    volume_claims: StrictInt = Field(default=20, alias="volumeClaims", ge=0)
    """Volume claims the namespace may hold (ResourceQuota `persistentvolumeclaims`)."""
    fsx_claims: StrictInt = Field(default=1, alias="fsxClaims", ge=0)
    """FSx for Lustre claims the namespace may hold where `storage.fsxLustre` is enabled: each one creates a file system of at least 1.2 TiB."""


class EgressRule(Model):
    """Egress a tenant's pods may open beyond the platform's always-on paths."""

    cidrs: tuple[AnyCidr, ...] = ()
    """Destination networks, e.g. `[0.0.0.0/0]` or a partner's range."""
    except_: tuple[AnyCidr, ...] = Field(default=(), alias="except")
    """Networks carved out of `cidrs` (ipBlock `except`; each strictly inside one of them), e.g. the private ranges, so 0.0.0.0/0 spares tenants."""
    ports: tuple[Port, ...] = ()
    """Destination ports (1..65535)."""
    protocol: Literal["TCP", "UDP"] = "TCP"
    """`TCP` or `UDP`."""


class TenantIngress(Model):
    """Who may open connections to a tenant's pods besides its own namespace and the monitoring scrape."""

    load_balancers: Literal["internal", "internet-facing"] | None = None
    """EKS: admit the AWS Load Balancer Controller's ALBs and NLBs (IP targets) of that scheme, on `ports`: the subnets
    it places them in (`internet-facing`: the public subnets; `internal`: the private ones; an existing VPC: its CIDR)."""
    namespaces: tuple[DnsLabel, ...] = ()
    """Namespaces whose pods may connect (an in-cluster proxy or gateway of yours, e.g. `[istio-ingress]`)."""
    vpc: StrictBool = False
    """EKS: admit the VPC CIDR (load balancers with IP targets; also admits anything else in the VPC on `ports`)."""
    ports: tuple[Port, ...] = ()
    """TCP ports admitted from those sources (empty: every port)."""


class TenantNetwork(Model):
    """A tenant's NetworkPolicies beyond the platform's defaults (DNS, API server, Pod Identity agent, AWS endpoints)."""

    egress: tuple[EgressRule, ...] = ()
    """Further egress: `[{cidrs, except, ports, protocol}]`."""
    ingress: TenantIngress = TenantIngress()
    """Further ingress: `{namespaces, vpc, ports}`."""
    s3: StrictBool = True
    """EKS: egress to S3 on TCP 443, to the CIDRs of the region's S3 prefix list (read at `pulumi up`; the gateway endpoint routes it)."""
    egress_boundary: StrictBool = False
    """`true`: the stack's egress is the tenant's limit: NetworkPolicies the tenant writes itself may not open egress
    (`gpu-platform-owned-objects` refuses ones with `egress` rules); `false` (default): it is a default the tenant may widen."""


class WorkloadIdentity(Model):
    """A tenant's workload identity: a ServiceAccount bound by EKS Pod Identity to a role for its S3 buckets."""

    service_account: DnsLabel = "workload"
    """ServiceAccount in the tenant namespace that pods run as to get the role."""
    buckets: tuple[BucketName, ...]
    """S3 buckets the role may list, read, write and delete objects in (names only; no wildcards)."""


class Tenant(Model):
    """A team that shares the platform: namespace, groups, quotas and queue placement."""

    name: DnsLabel
    """Tenant name (DNS label)."""
    namespace: DnsLabel | None = None
    """Namespace of the tenant (default: its name)."""
    groups: tuple[str, ...] = ()
    """Identity-provider groups bound to the tenant's namespace."""
    cohort: DnsLabel = "platform"
    """Kueue cohort: tenants in one cohort borrow and lend quota."""
    priority: Priority = "batch"
    """Default priority: `production-training`, `inference`, `batch` or `experiments`."""
    fair_share_weight: StrictInt = Field(default=1, ge=1, le=100)
    """Fair-sharing weight of the tenant's queue."""
    quotas: tuple[TenantQuota, ...] = ()
    """GPU quotas per pool: `[{pool, gpus, borrowingLimit, lendingLimit}]`."""
    resources: TenantResources = TenantResources()
    """Non-GPU ceilings: `{cpu, memoryGiB, pods}`."""
    network: TenantNetwork = TenantNetwork()
    """Network paths beyond the defaults: `{egress, ingress, s3}`."""
    access_role_arns: tuple[IamRoleArn, ...] = ()
    """IAM roles (e.g. SSO permission-set roles) whose sessions carry the tenant's `groups` (EKS access entries)."""
    workload_identity: WorkloadIdentity | None = None
    """Pod identity for the tenant's workloads (EKS): `{serviceAccount, buckets}`."""

    @property
    def ns(self) -> str:
        """The tenant's namespace (its name unless set)."""
        return self.namespace or self.name


class KueuePreemption(Model):
    """Kueue ClusterQueue preemption policy shared by every tenant queue."""

    reclaim_within_cohort: ReclaimPolicy = "Any"
    """Preempt borrowers in the cohort to reclaim nominal quota."""
    within_cluster_queue: WithinQueuePolicy = "LowerPriority"
    """Preempt within the tenant's own queue."""
    borrow_within_cohort: Literal["Never", "LowerPriority"] | None = None
    """Preempt while borrowing (classical preemption only; Kueue ignores it under fairSharing). Default `LowerPriority`."""


# The most a MultiKueue manager may over-admit (`queueing.kueue.multiKueueQuotaMultiplier`; the gate reads the same bound).
MAX_QUOTA_MULTIPLIER = 4


class Kueue(Model):
    """Kueue quota and admission."""

    enabled: StrictBool = True
    """Install Kueue and the tenant queues."""
    preemption: KueuePreemption = KueuePreemption()
    """ClusterQueue preemption policy."""
    fair_sharing: StrictBool = True
    """Weight-based fair sharing between queues of a cohort."""
    multi_kueue_quota_multiplier: StrictInt = Field(default=1, ge=1, le=MAX_QUOTA_MULTIPLIER)
    """MultiKueue managers only: the manager's quota is the workers' sum times this (default 1, at most 4). Above 1
    the manager admits more than the workers hold, so each worker's own queue keeps work ready for GPUs it frees;
    what waits on a worker holds manager quota meanwhile (docs/multi-cluster.md)."""


class Volcano(Model):
    """Volcano gang scheduling for distributed training."""

    enabled: StrictBool = False
    """Install Volcano (gang scheduling, DRF) and a queue per tenant."""


class JobApis(Model):
    """The job APIs the platform installs for tenants: a pinned Helm release each, before Kueue manages their kinds."""

    jobset: StrictBool = True
    """JobSet (`jobset.x-k8s.io`): a group of Jobs as one workload; Kubeflow Trainer runs on it."""
    trainer: StrictBool = True
    """Kubeflow Trainer (`TrainJob`, `trainer.kubeflow.org`) with the `torch-distributed` ClusterTrainingRuntime; needs `jobset`."""
    ray: StrictBool = True
    """The KubeRay operator (`RayJob`, `RayCluster`, `ray.io`). Off where the cluster already runs one."""


class Queueing(Model):
    """Which batch schedulers the platform runs."""

    job_apis: JobApis = JobApis()
    """Job APIs installed for tenants: `{jobset, trainer, ray}` (each on by default); Kueue manages exactly these and the built-in kinds."""
    kueue: Kueue = Kueue()
    """Kueue settings."""
    volcano: Volcano = Volcano()
    """Volcano settings."""


class AlertThresholds(Model):
    """Thresholds of the GPU alert rules."""

    gpu_temp_celsius: StrictInt = Field(default=83, ge=60, le=100)
    """GPU temperature alert threshold."""
    framebuffer_percent: StrictInt = Field(default=95, ge=50, le=100)
    """GPU memory (framebuffer) use alert threshold."""
    idle_util_percent: StrictInt = Field(default=30, ge=1, le=100)
    """Allocated GPUs below this utilisation count as idle."""
    idle_minutes: StrictInt = Field(default=30, ge=5, le=1440)
    """How long allocated GPUs must be idle before alerting."""
    pending_minutes: StrictInt = Field(default=60, ge=5, le=10080)
    """How long a Kueue workload may pend before alerting."""


class SecretKeyRef(Model):
    """A key of a Secret in the monitoring namespace (created outside the stack; the stack names it only)."""

    name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)]
    """Secret name."""
    key: Annotated[str, Field(pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)]
    """Key in the Secret holding the credential (PagerDuty routing key, Slack or webhook URL)."""


class Receiver(Model):
    """An Alertmanager receiver whose credential Alertmanager reads from a mounted Secret file."""

    name: Annotated[str, Field(pattern=r"^[a-z][-a-z0-9]*$", max_length=63)]
    """Receiver name (routes refer to it)."""
    type: Literal["pagerduty", "slack", "webhook"]
    """`pagerduty` (routing key), `slack` (incoming-webhook URL) or `webhook` (URL)."""
    secret: SecretKeyRef
    """Where the routing key or URL is: Secret name and key in the monitoring namespace."""
    channel: str | None = None
    """Slack channel (slack only)."""


class Alertmanager(Model):
    """Where kube-prometheus-stack's Alertmanager sends alerts (its chart default routes everything to `null`)."""

    receivers: tuple[Receiver, ...] = ()
    """Receivers; credentials by Secret reference only."""
    default_receiver: str = "null"
    """Receiver of alerts no other route takes (`null`: dropped)."""
    critical_receiver: str = "null"
    """Receiver of `severity: critical` alerts (`null`: dropped; refused for production stacks)."""


class Monitoring(Model):
    """GPU monitoring: Prometheus (installed or existing), alerts and dashboard."""

    prometheus: Literal["install", "existing"] = "install"
    """`install` kube-prometheus-stack, or use an `existing` Prometheus."""
    namespace: DnsLabel = "monitoring"
    """Namespace of the monitoring stack."""
    rule_labels: dict[str, str] = Field(default_factory=lambda: {"release": "kube-prometheus-stack"})
    """Labels your Prometheus selects PrometheusRules and ServiceMonitors by."""
    alerts: AlertThresholds = AlertThresholds()
    """Alert thresholds."""
    dashboard: StrictBool = True
    """Ship the Grafana GPU dashboard as a labelled ConfigMap."""
    alertmanager: Alertmanager = Alertmanager()
    """Alertmanager receivers and routes (with `prometheus: install`)."""


class UpgradePolicy(Model):
    """GPU Operator driver upgrade policy (only used when the operator manages drivers)."""

    auto_upgrade: StrictBool = False
    """Let the GPU Operator upgrade drivers by itself (off: upgrades are deliberate)."""
    max_parallel_upgrades: StrictInt = Field(default=1, ge=1, le=100)
    """Nodes upgraded at once."""
    max_unavailable: str = Field(default="25%", pattern=r"^(\d+|\d{1,3}%)$")
    """GPU nodes unavailable at once during upgrades (count or percent)."""
    drain_timeout_seconds: StrictInt = Field(default=600, ge=60, le=7200)
    """Drain timeout before an upgrade gives up on a node."""


class GpuOperator(Model):
    """Who installs the driver and toolkit: the node image (EKS AMI, golden image) or the operator."""

    driver: Literal["preinstalled", "operator"] = "preinstalled"
    """`preinstalled` (node image or Ansible installs driver and toolkit) or `operator`."""
    upgrade_policy: UpgradePolicy = UpgradePolicy()
    """Driver upgrade policy."""


class PolicyConfig(Model):
    """Per-stack overrides of the policy gate: thresholds and enforcement levels by rule name."""

    thresholds: dict[str, float] = Field(default_factory=dict)
    """Policy thresholds by name (see the policy table)."""
    enforcement: dict[str, Literal["advisory", "mandatory", "disabled"]] = Field(default_factory=dict)
    """Enforcement by rule name: `advisory`, `mandatory` or `disabled`."""
    production: StrictBool | None = None
    """Production-only rules apply. Default: from `environment` (a word prod/production/prd/live: prod-eu, eu-prod; not pre-prod, non-prod)."""


class ClassDemand(Model):
    """A workload class's P95 GPU demand, as `capacity plan --write-stack` records it; the capacity policies compare pools with it."""

    workload_class: WorkloadClass
    """`training`, `inference`, `batch` or `development` (once per class)."""
    p95: StrictFloat | StrictInt = Field(ge=0, le=1_000_000)
    """P95 of concurrent demand in physical GPUs' worth."""
    sla: Literal["online", "inference", "training", "batch"]
    """SLA class: `online` and `inference` keep a safety stock, `training` and `batch` queue."""
    interruptible: StrictBool = False
    """The class's work survives losing a node, so it may run on Spot."""


ClassName = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)]


class FsxLustre(Model):
    """An FSx for Lustre StorageClass for training data (EKS, opt-in): claims naming it get a file system each."""

    enabled: StrictBool = False
    """Install the aws-fsx-csi-driver add-on, a Lustre security group and the class."""
    class_name: ClassName = "fsx-lustre"
    """Name of the StorageClass tenants' claims name (never the default class)."""
    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = "PERSISTENT_2"
    """FSx `deploymentType`: `SCRATCH_2` (no replication, cheapest) or `PERSISTENT_2` (replicated, lowest latency), etc."""
    per_unit_storage_throughput: StrictInt | None = None
    """MB/s per TiB, PERSISTENT only (PERSISTENT_2: 125, 250, 500, 1000; PERSISTENT_1: 50, 100, 200). Default: the lowest."""
    data_compression_type: Literal["NONE", "LZ4"] = "LZ4"
    """FSx `dataCompressionType`."""
    zone: str | None = None
    """Zone of the file systems' subnet (an FSx for Lustre file system lives in one subnet); default: the first cluster zone."""
    reclaim_policy: Literal["Retain", "Delete"] = "Retain"
    """What deleting a claim does to its file system: `Retain` keeps it (and its bill) until an admin deletes it, `Delete` deletes it and its data."""

    @property
    def throughput(self) -> int | None:
        """The perUnitStorageThroughput the class carries: the set one, else the lowest valid for a PERSISTENT type."""
        if self.per_unit_storage_throughput is not None:
            return self.per_unit_storage_throughput
        return {"PERSISTENT_1": 50, "PERSISTENT_2": 125}.get(self.deployment_type)


class Storage(Model):
    """The StorageClass every volume claim of the stack names, and optional FSx for Lustre for training data."""

    class_name: ClassName | None = None
    """EKS: the encrypted gp3 class the stack creates, made default (default `gp3`); existing clusters: a class the cluster has."""
    fsx_lustre: FsxLustre = FsxLustre()
    """FSx for Lustre (EKS): `{enabled, className, deploymentType, perUnitStorageThroughput, dataCompressionType, zone}`."""


class Worker(Model):
    """A MultiKueue worker cluster of a manager stack: its own EKS cluster, pools and tenants' local quotas."""

    name: DnsLabel
    """Worker name: the MultiKueueCluster's name on the manager and the prefix of the worker's resources."""
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
    """EKS workers: AWS region of the worker's cluster (any region; its own AWS provider)."""
    cluster: ClusterSpec
    """The worker's cluster: a new EKS cluster (public endpoint that admits the manager) or an existing one
    (`provider: existing`, with `endpoint` and `caData`): docs/multi-cluster.md."""
    endpoint: str | None = Field(default=None, pattern=r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$")
    """Existing workers: the API server URL the manager reaches (https; the manager's NAT addresses must be let in)."""
    ca_data: str | None = Field(default=None, pattern=r"^[A-Za-z0-9+/]+={0,2}$", max_length=65536)
    """Existing workers: the API server's CA bundle, base64 (a kubeconfig's `certificate-authority-data`)."""
    storage_class: ClassName | None = None
    """Existing workers: the StorageClass its claims name (`storage.className` for this worker; EKS workers use gp3)."""
    network: NetworkSpec = NetworkSpec()
    """The worker's network."""
    node_pools: tuple[NodePool, ...]
    """The worker's GPU node pools; a pool name used by several workers must be the same GPU model and layout."""
    quotas: dict[DnsLabel, tuple[TenantQuota, ...]] = Field(default_factory=dict)
    """Tenant name -> its quotas on this worker's pools (the worker's own ClusterQueue; the manager's is their sum)."""


class PlatformSpec(Model):
    """Everything one stack declares, validated, with the lockfile it runs against."""

    stack: str
    environment: DnsLabel
    """Environment name; tags every resource; decides `policy.production` when that is unset."""
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
    cluster: ClusterSpec
    """The cluster."""
    network: NetworkSpec = NetworkSpec()
    """The network (EKS stacks)."""
    node_pools: tuple[NodePool, ...]
    """GPU node pools."""
    tenants: tuple[Tenant, ...] = ()
    """Tenants sharing the platform."""
    queueing: Queueing = Queueing()
    """Batch schedulers."""
    monitoring: Monitoring = Monitoring()
    """GPU monitoring and alerts."""
    storage: Storage = Storage()
    """Persistent volumes: `{className, fsxLustre}`."""
    gpu_operator: GpuOperator = GpuOperator()
    """NVIDIA GPU Operator settings."""
    policy: PolicyConfig = PolicyConfig()
    """Policy gate overrides."""
    demand: tuple[ClassDemand, ...] = ()
    """P95 GPU demand per workload class (written by `capacity plan --write-stack`); checked by the capacity-coverage policies."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Extra cost-allocation tags on every AWS resource."""
    workers: tuple[Worker, ...] = ()
    """MultiKueue: worker clusters in preference order; this stack's own cluster is then the manager (no GPU pools,
    no quotas of its own: it admits against the sum of the workers' and dispatches; docs/multi-cluster.md)."""
    lock: Lockfile
    _config_root: str = PrivateAttr(default="")

    @property
    def is_eks(self) -> bool:
        """True when this stack creates AWS resources."""
        return self.cluster.provider == "eks"

    @property
    def storage_class(self) -> str | None:
        """The StorageClass claims name: the stack's own gp3 class on EKS, the configured class elsewhere."""
        if self.storage.class_name is not None:
            return self.storage.class_name
        return "gp3" if self.is_eks else None

    @property
    def retain_storage_class(self) -> str | None:
        """EKS: the gp3 class whose volumes outlive their claims (checkpoints, datasets): `<storage class>-retain`."""
        return f"{self.storage_class}-retain" if self.is_eks and self.storage_class else None

    def pool(self, name: str) -> NodePool:
        """A node pool by name."""
        return next(p for p in self.node_pools if p.name == name)
