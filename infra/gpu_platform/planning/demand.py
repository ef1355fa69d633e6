"""The demand a plan is sized from: per workload class and GPU model, quantiles in physical GPUs' worth.

Every input (declared YAML, Alibaba trace CSV, Prometheus export) ends up as a `Demand`; the planner
never knows which one it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from gpu_platform.planning.packing import Pod
from gpu_platform.planning.replay import Job
from gpu_platform.planning.series import StepSeries
from gpu_platform.pricing import DEFAULT_INSTRUMENT, load_commitments

ANY = "any"
# Sanity bounds: a plan past these is an input mistake (a growth rate read as a percentage), not a purchase.
MAX_HORIZON_GROWTH = 10.0
MAX_GROUP_GPUS = 100_000
Sla = Literal["online", "inference", "training", "batch"]
SLAS: tuple[str, ...] = ("online", "inference", "training", "batch")
WORKLOAD_CLASSES = ("training", "inference", "batch", "development")
# The SLA a class gets when its input does not say (trace and Prometheus inputs).
DEFAULT_SLA: dict[str, Sla] = {"inference": "inference", "training": "training", "batch": "batch", "development": "batch"}
# The catalog GPU a class runs on when its demand names no model.
DEFAULT_GPU: dict[str, str] = {"training": "H100-80GB", "inference": "L4", "batch": "L40S", "development": "L4"}


@dataclass(frozen=True)
class Allocatable:
    """The share of arrived GPU demand a cluster's scheduler can place: `capacity plan --nodes` (planning/fragmentation.py)."""

    share: float
    """Allocated / arrived GPUs when arrivals reach 100 % of the cluster's GPUs, mean over the seeds (0..1)."""
    low: float
    high: float
    policy: str
    nodes_file: str
    nodes: int
    gpus: int
    seeds: tuple[int, ...]
    left_out: int = 0
    """GPU pods of the demand that accept no GPU model of the node list: left out of the replay (not fragmentation)."""

    @property
    def basis(self) -> str:
        """Where the share comes from, in one phrase."""
        seeds = f"seed {self.seeds[0]}" if len(self.seeds) == 1 else f"seeds {self.seeds[0]}..{self.seeds[-1]}"
        spread = "" if len(self.seeds) == 1 else f" ({self.low:.2%}..{self.high:.2%})"
        out = "" if not self.left_out else f"; {self.left_out:,} GPU pods that accept none of its GPU models left out"
        return (
            f"{self.policy} places {self.share:.2%}{spread} of the GPUs arrived when arrivals reach 100 % of the "
            f"{self.gpus:,} GPUs on {self.nodes:,} nodes of {self.nodes_file} (the trace paper's replay of the whole pod list, {seeds}{out})"
        )


@dataclass(frozen=True)
class Options:
    """Planning knobs; every one can be set in a demand file's `planning:` section."""

    coverage_target: float = 0.0
    """A stated floor of reserved GPUs as a share of P95 for classes with an SLA, on top of break-even (0: break-even alone)."""
    spot_cap: float = 0.3
    """Most Spot GPUs as a share of a class's P95 demand (the common cap is 20-30 %)."""
    instrument: str = DEFAULT_INSTRUMENT
    """The commitment the reserved tier is bought as (data/commitments.yaml)."""
    reserved_discount: float = field(default_factory=lambda: load_commitments().instrument(DEFAULT_INSTRUMENT).discount)
    """The instrument's price below on-demand list price (its data value unless a demand file overrides it)."""
    spot_discount: float = field(default_factory=lambda: load_commitments().spot_discount)
    """Spot price below on-demand list price (GPU Spot has mostly sat 50-70 % below)."""
    spot_fallback_share: float = field(default_factory=lambda: load_commitments().spot_fallback_share)
    """Share of Spot GPU-hours that run on on-demand after reclaims, in the expected bill."""
    safety_stock: dict[str, float] = field(default_factory=lambda: {"online": 0.10, "inference": 0.15})
    """Buffer over P95 by SLA class (online 5-15 %, inference 10-20 %); training and batch use a queueing target."""
    peak_buffer: float = 0.25
    """Extra buffer for online classes before a known peak (20-30 %)."""
    queue_delay_hours: dict[str, float] = field(default_factory=lambda: {"training": 4.0, "batch": 24.0})
    """Longest acceptable queueing delay by SLA class, for sizing from a history."""
    redundancy_slas: tuple[str, ...] = ("online", "inference")
    """SLA classes that get N+1: one spare node on demand."""
    gpu_models: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_GPU))
    """Catalog GPU for each class's demand that names no model."""
    allocatable: Allocatable | None = None
    """With `--nodes` (not a demand-file key): GPUs needed = demand / its share, where the plan's own placement needs fewer."""


@dataclass(frozen=True)
class Shape:
    """What one task asks of a node, at the 95th percentile of GPU-hours: whole GPUs, vCPU and memory per GPU's worth."""

    gpus_per_task: int
    vcpu_per_gpu: float
    memory_gib_per_gpu: float


@dataclass(frozen=True)
class DemandGroup:
    """Demand of one workload class on one GPU model (or `any`), in physical GPUs' worth."""

    workload_class: str
    gpu_model: str
    p50: float
    p95: float
    p99: float
    peak: float
    interruptible: bool
    interruptible_p95: float
    sla: Sla
    interruptible_share: float = 0.0
    """Interruptible demand's share of the group's GPU-hours (its mean over the total mean; declared: its share of P95)."""
    growth_per_month: float = 0.0
    lead_time_months: float = 0.0
    known_peak: bool = False
    catalog_gpu: str = ""
    """Catalog GPU model the group is priced and placed on."""
    sharing: tuple[str, str | int] | None = None
    """(`mig`, mig config) or (`time-slicing`, replicas) when the demand is in slices or shares."""
    teams: dict[str, float] = field(default_factory=dict)
    """Team -> its P95 in GPUs' worth (declared inputs; tenant quotas are split by it)."""
    interruptible_teams: tuple[str, ...] = ()
    """Teams whose demand may run on Spot (declared inputs; only they get Spot quota)."""
    series: StepSeries | None = None
    spot_series: StepSeries | None = None
    """The interruptible part of `series` (histories), so a shorter window can be re-read exactly."""
    jobs: tuple[Job, ...] = ()
    """The trace's jobs (arrival, run time, GPUs), for sizing queues by replay."""
    pods: Sequence[Pod] = ()
    """The trace's tasks as they hold a node (GPUs, vCPU, memory over their lifetime), for packing into whole nodes."""
    request_gpus: float | None = None
    """GPUs' worth Erlang C gives the entries with request data, at the horizon (planning/queueing.py); None without."""
    request_p95: float = 0.0
    """Declared P95 of those entries (GPUs' worth): the part of the group the request model sizes instead."""
    request_basis: str = ""
    """How the request model reached `request_gpus` (per entry: load, servers, wait target)."""
    shape: Shape | None = None
    """The tasks' shape (traces): instance types are chosen to fit it."""
    shape_fit: dict[tuple[int, float, float], float] = field(default_factory=dict)
    """(GPUs, vCPU, GiB) of a node -> share of the group's GPU-hours whose tasks fit one such node."""


@dataclass(frozen=True)
class Demand:
    """Everything the planner needs: groups, each class's total, and where they came from."""

    source: str
    kind: Literal["declared", "alibaba-trace", "prometheus"]
    groups: tuple[DemandGroup, ...]
    totals: tuple[DemandGroup, ...]
    """One `any` entry per class: quantiles of the class's total demand (not a sum of quantiles)."""
    options: Options = Options()
    window: tuple[float, float] | None = None
    notes: tuple[str, ...] = ()
    substitutions: tuple[tuple[str, str, float, str], ...] = ()
    """(trace GPU model, catalog GPU standing for it, throughput factor: catalog GPUs per trace GPU, its basis)."""

    def groups_of(self, workload_class: str) -> list[DemandGroup]:
        """The groups of one class."""
        return [g for g in self.groups if g.workload_class == workload_class]
