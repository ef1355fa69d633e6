"""The planner: from demand to reserved / on-demand / Spot GPUs and nodes per class and GPU model, with cost.

Method (docs/capacity-planning.md): size each group for its P95 at the procurement horizon plus the
safety stock of its SLA class (online and inference: a buffer; training and batch: the capacity that
keeps queueing delay under a target, when a history is available), then split that capacity into a
reserved tier sized from the exceedance curve for the commitment instrument (the most whole nodes
whose last one is busy at least the break-even share, planning/economics.py), Spot for the
interruptible part (at most the Spot cap x P95) and on-demand for the rest, in whole nodes of the
catalog's instance types; and price it three ways: the expected bill, full size, all on-demand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_platform.catalog import Catalog, InstanceType
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.planning.checks import SLA_CLASSES
from gpu_platform.planning.demand import ANY, MAX_GROUP_GPUS, MAX_HORIZON_GROWTH, Allocatable, Demand, DemandGroup, Options, Shape
from gpu_platform.planning.economics import Exceedance, SpotUse, break_even_nodes, curve_of_series, expected_bill, from_quantiles, from_series
from gpu_platform.planning.packing import MAX_EXACT_EVENTS, NodeShape, nodes_over
from gpu_platform.planning.replay import Search, Waits, nodes_for_wait
from gpu_platform.planning.series import scaled
from gpu_platform.pricing import HOURS_PER_MONTH, Instrument, list_price, load_commitments, spot_node_hour

# Instruments that bill a discounted rate every hour whatever runs: they cover the nodes a plan keeps up, too.
COMMITTED_KINDS = ("savings-plan", "reserved-instance")
MAX_SPOT_TYPES = 4
SPOT_PRICE_SPAN = 1.5
"""A Spot pool lists the planned type and others of its GPU model and count listed at most this many times its price."""

EPS = 1e-9


@dataclass(frozen=True)
class GroupPlan:
    """Tiers of one class on one GPU model (or the class total, `gpu_model == "any"`)."""

    workload_class: str
    gpu_model: str
    catalog_gpu: str
    instance_type: str | None
    gpus_per_node: int
    p95: float
    target: float
    """GPUs the group is sized for: P95 at the horizon plus safety stock (or the queueing-delay capacity)."""
    basis: str
    reserved: int
    on_demand: int
    spot: int
    spot_fallback: int
    """On-demand GPUs the on-demand pool may add when Spot is reclaimed (its max is onDemand + this)."""
    nodes: dict[str, int]
    monthly_cost: float | None
    on_demand_only_cost: float | None
    interruptible: bool
    sla: str
    sharing: tuple[str, str | int] | None = None
    teams: dict[str, float] = field(default_factory=dict)
    interruptible_teams: tuple[str, ...] = ()
    """Teams whose demand may run on Spot (only they get Spot quota in a written stack)."""
    instrument: str = ""
    break_even: float = 1.0
    """Utilisation at which a committed GPU costs what on-demand would for the same hours: 1 - discount."""
    reserved_used: float = 0.0
    """Mean GPUs of the reserved tier in use over the window."""
    expected_cost: float | None = None
    """Expected monthly bill: committed fixed cost + on-demand and Spot GPU-hours above the reserve."""
    expected_on_demand_only: float | None = None
    """The same demand on elastic on-demand nodes alone."""
    expected_parts: dict[str, float] = field(default_factory=dict)
    """The expected bill by tier: committed, alwaysOn, onDemand, spot."""
    shape_fit: float | None = None
    """Share of the group's GPU-hours whose tasks fit one node of the chosen type (histories with task shapes)."""
    waits: Waits | None = None
    """Job waits of the replay at the planned capacity (training and batch from a trace)."""
    mean_above_reserve: float = 0.0
    """Mean GPUs of demand above the reserved tier over the window: what on-demand and Spot serve."""
    break_even_reserved: int = 0
    """GPUs break-even alone would reserve (below `reserved` when a stated coverage floor asks for more)."""
    existing_reserved: int = 0
    """Reserved GPUs that are existing reservations of the stack (ODCRs, billed at list)."""
    packed_p95_nodes: float | None = None
    """P95 of the nodes the running tasks take, packed first-fit decreasing at each event (inference from a trace)."""
    unplaceable: int = 0
    """Tasks no node of the chosen type holds (more GPUs, vCPU or memory than one node has)."""
    always_on: int = 0
    """GPUs of the on-demand nodes kept up whatever the demand: the SLA floor over the reserve and the N+1 spare."""
    nodes_per_zone: dict[str, dict[str, int]] = field(default_factory=dict)
    """zone -> whole nodes of each tier, where a stack's pools place the group (planning/zones.py)."""
    spot_types: tuple[str, ...] = ()
    """The types a Spot pool would list (planner.spot_types, planned type first): Spot is planned only over two or more."""
    spot_price: float | None = None
    """What one Spot node-hour is priced at: the dearest listed type's Spot estimate (any of them may be launched)."""

    @property
    def reserved_utilization(self) -> float | None:
        """Share of the reserved tier's GPU-hours used over the window (None without a reserve)."""
        return self.reserved_used / self.reserved if self.reserved else None

    @property
    def total(self) -> int:
        """GPUs in every tier."""
        return self.reserved + self.on_demand + self.spot

    @property
    def coverage(self) -> float:
        """Reserved GPUs / P95 demand."""
        return self.reserved / self.p95 if self.p95 > 0 else 0.0

    @property
    def spot_exposure(self) -> float:
        """Spot GPUs / P95 demand."""
        return self.spot / self.p95 if self.p95 > 0 else 0.0


@dataclass(frozen=True)
class Option:
    """One way to close a shortfall, with what it costs per month and what it risks."""

    action: str
    gpus: int
    monthly_cost: float | None
    risk: str
    risk_rank: int
    detail: str


@dataclass(frozen=True)
class Shortfall:
    """Planned GPUs a stack's pools cannot hold, for one class and catalog GPU model."""

    workload_class: str
    gpu_model: str
    needed: int
    available: int
    options: tuple[Option, ...]
    non_spot_needed: int = 0
    """Planned reserved and on-demand GPUs: work that Spot pools cannot hold."""
    non_spot_available: int = 0
    """The stack's non-Spot GPUs for the class and model at max size."""

    @property
    def gap(self) -> int:
        """GPUs missing: non-Spot demand above non-Spot pools, plus Spot demand above Spot pools and spare non-Spot GPUs."""
        spot_needed = self.needed - self.non_spot_needed
        spot_available = self.available - self.non_spot_available
        short = max(0, self.non_spot_needed - self.non_spot_available)
        spare = max(0, self.non_spot_available - self.non_spot_needed)
        return short + max(0, spot_needed - spot_available - spare)


@dataclass(frozen=True)
class Plan:
    """The whole plan: groups, one total per class, cost, shortfall."""

    demand: Demand
    groups: tuple[GroupPlan, ...]
    totals: tuple[GroupPlan, ...]
    shortfall: tuple[Shortfall, ...] = ()
    stack: str | None = None

    @property
    def monthly_cost(self) -> float:
        """Sum of the priced classes."""
        return sum(t.monthly_cost or 0.0 for t in self.totals)

    @property
    def on_demand_only_cost(self) -> float:
        """The same GPUs all on on-demand."""
        return sum(t.on_demand_only_cost or 0.0 for t in self.totals)

    @property
    def expected_cost(self) -> float:
        """Sum of the classes' expected bills."""
        return sum(t.expected_cost or 0.0 for t in self.totals)

    @property
    def expected_on_demand_only(self) -> float:
        """The classes' demand on elastic on-demand alone."""
        return sum(t.expected_on_demand_only or 0.0 for t in self.totals)


def holds_shape(t: InstanceType, shape: Shape | None) -> bool:
    """True when one node of the type holds the tasks' shape: their GPUs, and vCPU and memory per GPU."""
    if shape is None:
        return True
    return t.gpus >= shape.gpus_per_task and t.vcpu / t.gpus >= shape.vcpu_per_gpu - EPS and t.memory_gib / t.gpus >= shape.memory_gib_per_gpu - EPS


def instance_for(
    workload_class: str,
    gpu: str,
    catalog: Catalog,
    need: float = math.inf,
    shape: Shape | None = None,
    fit: Mapping[tuple[int, float, float], float] | None = None,
) -> InstanceType | None:
    """The catalog type a class's GPUs run on (training: most GPUs per node its demand fills, else the smallest; others: cheapest GPU-hour).

    Training prefers GPUs in one node (NVLink, EFA); inference and batch scale one GPU at a time. With a
    history's task shape, only types whose nodes hold it are candidates; when none does, the type that
    holds the most GPU-hours of tasks.
    """
    types = [t for t in catalog.instance_types.values() if t.gpu.name == gpu]
    priced = [t for t in types if t.price_per_hour is not None] or types
    if not priced:
        return None
    if shape is not None:
        holding = [t for t in priced if holds_shape(t, shape)]
        if holding:
            priced = holding
        elif fit:
            best = max(fit.get((t.gpus, float(t.vcpu), float(t.memory_gib)), 0.0) for t in priced)
            priced = [t for t in priced if fit.get((t.gpus, float(t.vcpu), float(t.memory_gib)), 0.0) >= best - EPS]

    def per_gpu(t: InstanceType) -> float:
        return (t.price_per_hour or 0.0) / t.gpus

    if workload_class == "training":
        fits = [t for t in priced if t.gpus <= max(1, math.ceil(need - EPS))]
        if not fits:
            return min(priced, key=lambda t: (t.gpus, per_gpu(t), t.name))
        return min(fits, key=lambda t: (-t.gpus, per_gpu(t), t.name))
    return min(priced, key=lambda t: (per_gpu(t), t.gpus, t.name))


def spot_types(itype: InstanceType, catalog: Catalog, shape: Shape | None) -> tuple[InstanceType, ...]:
    """The types a Spot pool for `itype` lists: its GPU model and count, at most SPOT_PRICE_SPAN x its price, itself first.

    Each holds the tasks' shape and has a list price; after `itype` the cheapest, at most MAX_SPOT_TYPES.
    EKS gives a Spot managed node group's Auto Scaling group every listed type, and EC2 launches whichever pool
    has capacity: several types are what lets a reclaimed pool be replaced (a single type is reclaimed at once).
    """
    if itype.price_per_hour is None:
        return ()
    same = [
        t
        for t in catalog.instance_types.values()
        if t.gpu.name == itype.gpu.name
        and t.gpus == itype.gpus
        and t.price_per_hour is not None
        and t.price_per_hour <= SPOT_PRICE_SPAN * itype.price_per_hour + EPS
        and holds_shape(t, shape)
    ]
    ordered = sorted(same, key=lambda t: (t.name != itype.name, t.price_per_hour or 0.0, t.name))
    return tuple(ordered[:MAX_SPOT_TYPES])


def horizon_factor(group: DemandGroup) -> float:
    """Demand growth to the end of the procurement lead time."""
    return max(0.0, 1 + group.growth_per_month) ** group.lead_time_months


def target_gpus(group: DemandGroup, opts: Options) -> tuple[float, str]:
    """GPUs the group must have at the horizon, and how that number was reached."""
    grow = horizon_factor(group)
    p95 = group.p95 * grow
    if group.series is not None and group.peak <= 0:
        return 0.0, "no demand in the window planned on"  # a class whose current regime is idle plans no node
    if group.sla in opts.safety_stock:
        buffer = opts.safety_stock[group.sla] + (opts.peak_buffer if group.known_peak and group.sla == "online" else 0.0)
        if group.request_gpus is not None:
            # entries with request data: Erlang C (M/M/c) for their wait target; the rest of the group by the rule of thumb
            rest = max(0.0, group.p95 - group.request_p95) * grow
            basis = f"Erlang C (M/M/c) for the wait target: {group.request_basis}"
            if rest > 0:
                basis += f"; the rest by rule of thumb: P95 + {buffer:.0%} safety stock"
            return group.request_gpus + rest * (1 + buffer), basis
        # no request-level data (arrival rate, service time) for this group, so no Erlang-C model: say so
        return p95 * (1 + buffer), f"rule of thumb: P95 + {buffer:.0%} safety stock ({group.sla}; no request data for a queueing model)"
    delay = opts.queue_delay_hours.get(group.sla)
    if delay is not None and group.jobs and grow == 1:
        return p95, "P95 (until the job-level replay sizes it)"  # plan_group replays the jobs on the chosen type's nodes
    if delay is not None and group.series is not None:
        cap = scaled(group.series, grow).capacity_for_delay(delay * 3600) if grow != 1 else group.series.capacity_for_delay(delay * 3600)
        return cap, f"queueing delay <= {delay:g} h ({group.sla}, fluid model over the history)"
    return p95, f"P95 ({group.sla}: no history for a queueing-delay model)"


def fragmented(target: float, basis: str, fluid: float, allocatable: Allocatable) -> tuple[float, str]:
    """GPUs needed where the cluster's scheduler strands some: the fluid target / the allocatable share, if above `target`.

    The plan's own placement (jobs on whole nodes, tasks packed by first-fit decreasing) already strands
    GPUs on the nodes it buys; the cluster's placement policy, replayed on its node list, strands its own.
    The larger of the two needs holds.
    """
    need = fluid / allocatable.share
    if need > target + EPS:
        return need, f"{basis}; fragmentation: {fluid:.4g} GPUs' worth / {allocatable.share:.4f} allocatable = {need:.4g} GPUs"
    return target, f"{basis}; fragmentation ({need:.4g} GPUs at {allocatable.share:.2%} allocatable) needs no more"


def commitment(opts: Options) -> Instrument:
    """The instrument the reserved tier is bought as, at the discount the plan assumes."""
    base = load_commitments().instrument(opts.instrument)
    return Instrument(base.name, base.kind, base.term_months, opts.reserved_discount)


def curve_of(group: DemandGroup, grow: float) -> Exceedance:
    """The group's exceedance curve at the horizon: its history, else its declared quantiles."""
    if group.series is not None:
        return from_series(group.series, grow)
    return from_quantiles(group.p50, group.p95, group.p99, group.peak, grow)


def served_curve(group: DemandGroup, grow: float, capacity_gpus: int, queue: bool) -> Exceedance:
    """The curve of the work the plan's full size serves: demand above it queues (training, batch) or is turned away."""
    assert group.series is not None
    series = scaled(group.series, grow) if grow != 1 else group.series
    key = ("served", capacity_gpus, queue)  # the plans of one window under other prices often serve the same capacity
    if key not in series.memo:
        series.memo[key] = curve_of_series(series.served(capacity_gpus * 1000, queue))
    curve: Exceedance = series.memo[key]
    return curve


def stacked_node_up(group: DemandGroup, base_gpus: int, gpus_per_node: int, nodes: int) -> list[float]:
    """Share of the time each of `nodes` nodes stacked on `base_gpus` GPUs would be up (and billed) on demand, at the horizon."""
    curve = curve_of(group, horizon_factor(group))
    return [curve.node_up(base_gpus + i * gpus_per_node) for i in range(nodes)]


def stacked_node_use(group: DemandGroup, base_gpus: int, gpus_per_node: int, nodes: int) -> list[float]:
    """Share of the time each of `nodes` nodes stacked on `base_gpus` GPUs below them is busy, at the horizon."""
    curve = curve_of(group, horizon_factor(group))
    return [curve.node_busy(base_gpus + i * gpus_per_node, gpus_per_node) for i in range(nodes)]


def coverage_floor_nodes(group: DemandGroup, opts: Options, gpus_per_node: int) -> int:
    """Whole nodes a stated coverage target holds for a class with an SLA (0 without one): capacity held every hour."""
    if group.sla not in SLA_CLASSES or opts.coverage_target <= 0:
        return 0
    return math.floor(opts.coverage_target * group.p95 * horizon_factor(group) / gpus_per_node + EPS)


def _bounds(group: DemandGroup, grow: float, target: float, source: str) -> None:
    at = f"{group.workload_class}.{group.gpu_model}"
    if grow > MAX_HORIZON_GROWTH:
        raise ConfigError(
            [
                Problem(
                    source,
                    f"{at}.growthPerMonth",
                    f"growth {group.growth_per_month:g}/month over {group.lead_time_months:g} months multiplies demand by {grow:.3g}",
                    f"allowed: at most x{MAX_HORIZON_GROWTH:g} to the horizon (growth is a fraction: 0.05 is 5 %)",
                )
            ]
        )
    if not math.isfinite(target) or target > MAX_GROUP_GPUS:
        raise ConfigError([Problem(source, at, f"plans {target:.3g} GPUs", f"allowed: at most {MAX_GROUP_GPUS:,} GPUs per class and GPU model")])


def plan_group(
    group: DemandGroup,
    opts: Options,
    catalog: Catalog,
    source: str = "",
    production: bool = False,
    given: int = 0,
    instrument: Instrument | None = None,
) -> GroupPlan:
    """Reserved, on-demand and Spot nodes for one group, and its expected, full-size and all-on-demand bills.

    `given` nodes are existing reservations (ODCRs) of the planned type: supply already held, billed at
    list, under the new commitment that break-even adds on top of them. `instrument` replaces the
    options' one (planning/instruments.py buys the same reserve every way).
    """
    grow = horizon_factor(group)
    p95h = group.p95 * grow
    target, basis = target_gpus(group, opts)
    fluid = target  # GPUs' worth, before whole jobs and tasks are placed on nodes
    _bounds(group, grow, target, source)
    itype = instance_for(group.workload_class, group.catalog_gpu, catalog, target, group.shape, group.shape_fit) if group.catalog_gpu else None
    per = itype.gpus if itype else 1
    delay = opts.queue_delay_hours.get(group.sla)
    waits = None
    search = replay_search(group, opts, per)
    if delay is not None and search is not None:
        # whole jobs on whole GPUs of this type's nodes wait longer than the fluid bound: size by replay
        if search[4] is not None:
            fluid = search[4]  # the same wait target, GPUs' worth in a fluid queue
        replay_nodes, waits = nodes_for_wait(*search)
        target = float(replay_nodes * per)
        used = math.floor(waits.utilisation * 1000) / 10  # floored, so 99.96 % never reads as 100 % < 100 %
        basis = (
            f"job-level replay: 99 % of jobs wait <= {delay:g} h and the queue drains (utilisation {used:g} % < 100 %) "
            f"({group.sla}, BestEffortFIFO, whole GPUs of {per}-GPU nodes)"
        )
    packed = None
    if group.sla in opts.safety_stock and group.pods and itype is not None and group.series is not None:
        # the tasks' GPUs, vCPU and memory packed into whole nodes over time, not GPU-hours / GPUs per node
        packed = nodes_over(group.pods, NodeShape(itype.gpus, itype.vcpu, itype.memory_gib), group.series.start, group.series.end)
        p95_nodes = packed.nodes.quantile(0.95)
        buffer = target / p95h - 1 if p95h > 0 else opts.safety_stock[group.sla]
        target = p95_nodes * grow * (1 + buffer) * per
        when = f"at {packed.sampled:,} evenly spaced instants: more than {MAX_EXACT_EVENTS:,} events" if packed.sampled else "at each event"
        basis = (
            f"rule of thumb on packed nodes: P95 of {p95_nodes:g} {itype.name} nodes (first-fit decreasing of the running tasks "
            f"{when}) + {buffer:.0%} safety stock ({group.sla}; no request data for a queueing model)"
        )
        if packed.unplaceable:
            basis += f"; {packed.unplaceable} tasks fit no {itype.name} node"
    if opts.allocatable is not None and fluid > 0:
        target, basis = fragmented(target, basis, fluid, opts.allocatable)
        _bounds(group, grow, target, source)
    total_nodes = math.ceil(target / per - EPS)
    if total_nodes == 0 and group.peak > 0 and itype is not None:
        # demand that is there less than 5 % of the time still needs a node to run on: one, scaled up from zero
        total_nodes = max(1, math.ceil(group.peak * grow / per - EPS)) if group.sla in opts.queue_delay_hours else 1
        basis += f"; demand at P95 is 0, so one {itype.name} node scales up from zero for the rest"
    inst = instrument or commitment(opts)
    curve = curve_of(group, grow)
    # The N+1 spare is kept up every hour (and committed): it serves demand above the nodes below it, so a reserved
    # node is judged stacked on the held ODCRs and the spare, or the spare's hours would be bought twice.
    spare = 1 if group.sla in opts.redundancy_slas and total_nodes > 0 and p95h > 0 else 0
    candidates = spot_types(itype, catalog, group.shape) if itype is not None and group.interruptible else ()
    diverse = candidates if len(candidates) >= 2 else ()  # one type is reclaimed all at once: its work stays on on-demand
    spot_room = min(opts.spot_cap * p95h, group.interruptible_p95 * grow) if diverse else 0.0
    room_nodes = math.floor(spot_room / per + EPS)
    spot_price = spot_use = None
    if itype is not None and itype.price_per_hour is not None:
        spot_price = spot_node_hour([t.price_per_hour or 0.0 for t in diverse] or [itype.price_per_hour], opts.spot_discount)
        if room_nodes:
            # the Spot node-hour below the planned type's list price
            spot_use = SpotUse(group.interruptible_share, 1 - spot_price / itype.price_per_hour, opts.spot_fallback_share)

    def spot_gpus(n: int) -> float:
        """The Spot pool's GPUs with n nodes committed above the held ones (it holds what the reserve leaves)."""
        return max(0, min(total_nodes - given - n, room_nodes)) * per

    # a committed node is weighed against the hours it would otherwise buy: on demand, or on Spot up to the Spot pool
    limit = max(0, total_nodes - given)
    be_nodes = given + break_even_nodes(curve, per, inst.break_even, limit, (given + spare) * per, (spot_use, spot_gpus) if spot_use else None)
    # a stated stable floor for a class with an SLA: capacity held every hour anyway is cheapest committed
    reserved_nodes = max(be_nodes, min(total_nodes, coverage_floor_nodes(group, opts, per)))
    total_nodes = max(total_nodes, reserved_nodes)
    spot_nodes = min(total_nodes - reserved_nodes, room_nodes)
    od_nodes = total_nodes - reserved_nodes - spot_nodes
    always_on = 0
    if production and total_nodes > 0 and reserved_nodes == 0:
        always_on = 1  # a production class keeps one non-Spot node up (the gate's production-capacity-floor rule)
        od_nodes = max(od_nodes, 1)
        spot_nodes = min(spot_nodes, total_nodes - od_nodes)
    if spare:
        od_nodes += 1  # N+1: one spare node, kept up, so losing a node or a zone does not cut below the SLA target
        always_on += 1
        basis += ", N+1"
    nodes = {"reserved": reserved_nodes, "onDemand": od_nodes, "spot": spot_nodes}
    cost = baseline = expected = expected_od = None
    parts: dict[str, float] = {}
    if itype is not None and (total_nodes > 0 or itype.price_per_hour is not None):  # an idle group is priced too: $0
        price = list_price(itype, source, f"{group.workload_class}.{group.gpu_model}.instanceType")
        kept_discount = inst.discount if inst.kind in COMMITTED_KINDS else 0.0  # kept-up nodes are committed too
        spot_off = spot_use.off if spot_use is not None else 0.0
        elastic = od_nodes - always_on + spot_nodes * (1 - spot_off)
        hourly = price * ((reserved_nodes - given) * (1 - inst.discount) + given + always_on * (1 - kept_discount) + elastic)
        cost = hourly * HOURS_PER_MONTH
        baseline = price * (reserved_nodes + od_nodes + spot_nodes) * HOURS_PER_MONTH
        full = (reserved_nodes + od_nodes + spot_nodes) * per
        bill = expected_bill(
            served_curve(group, grow, full, group.sla in opts.queue_delay_hours) if group.series is not None else curve,
            reserved_nodes * per,
            per,
            price / per,
            inst.discount,
            spot_use if spot_nodes else None,
            spot_nodes * per,
            HOURS_PER_MONTH,
            always_on * per,
            given * per,
            full,
            kept_discount,
        )
        expected, expected_od = bill.expected, bill.on_demand_only
        parts = {"committed": bill.committed, "alwaysOn": bill.always_on, "onDemand": bill.on_demand, "spot": bill.spot}
    return GroupPlan(
        workload_class=group.workload_class,
        gpu_model=group.gpu_model,
        catalog_gpu=group.catalog_gpu,
        instance_type=itype.name if itype else None,
        gpus_per_node=per,
        p95=group.p95,
        target=target,
        basis=basis,
        reserved=reserved_nodes * per,
        on_demand=od_nodes * per,
        spot=spot_nodes * per,
        spot_fallback=spot_nodes * per,
        spot_types=tuple(t.name for t in candidates),
        spot_price=spot_price if spot_nodes else None,
        nodes=nodes,
        monthly_cost=cost,
        on_demand_only_cost=baseline,
        interruptible=group.interruptible,
        sla=group.sla,
        sharing=group.sharing,
        teams=dict(group.teams),
        interruptible_teams=group.interruptible_teams,
        instrument=inst.name if not given else (f"odcr (existing, {given} nodes) + {inst.name}" if reserved_nodes > given else "odcr (existing)"),
        existing_reserved=given * per,
        break_even=inst.break_even,
        reserved_used=curve.used_within(reserved_nodes * per),
        expected_cost=expected,
        expected_on_demand_only=expected_od,
        expected_parts=parts,
        always_on=always_on * per,
        break_even_reserved=be_nodes * per,
        mean_above_reserve=curve.mean_above(reserved_nodes * per),
        waits=waits,
        packed_p95_nodes=packed.nodes.quantile(0.95) if packed else None,
        unplaceable=packed.unplaceable if packed else 0,
        shape_fit=group.shape_fit.get((itype.gpus, float(itype.vcpu), float(itype.memory_gib))) if itype and group.shape_fit else None,
    )


def replay_search(group: DemandGroup, opts: Options, gpus_per_node: int) -> Search | None:
    """The job-level replay search (replay.nodes_for_wait's arguments) sizing a group on nodes of `gpus_per_node` GPUs.

    Training and batch groups from a trace are sized by replaying their jobs at the wait target; None for the others.
    """
    delay = opts.queue_delay_hours.get(group.sla)
    if delay is None or not group.jobs or horizon_factor(group) != 1 or group.sla in opts.safety_stock:
        return None
    mean = hint = None
    if group.series is not None:
        mean = group.series.mean()
        hint = group.series.capacity_for_delay(delay * 3600)
    return group.jobs, gpus_per_node, delay * 3600, mean, hint


def class_total(total: DemandGroup, members: list[GroupPlan]) -> GroupPlan:
    """The `any` entry of a class: its groups' tiers and costs summed, against the class's own P95."""
    costs = [m.monthly_cost for m in members]
    bases = [m.on_demand_only_cost for m in members]
    priced = [m for m in members if m.total]
    nodes = {k: sum(m.nodes[k] for m in members) for k in ("reserved", "onDemand", "spot")}
    single = members[0] if len(members) == 1 else None
    return GroupPlan(
        workload_class=total.workload_class,
        gpu_model=ANY,
        catalog_gpu=single.catalog_gpu if single else ", ".join(sorted({m.catalog_gpu for m in members})),
        instance_type=single.instance_type if single else None,
        gpus_per_node=single.gpus_per_node if single else 0,
        p95=total.p95,
        target=sum(m.target for m in members),
        basis=single.basis if single else "sum of the class's GPU models",
        reserved=sum(m.reserved for m in members),
        on_demand=sum(m.on_demand for m in members),
        spot=sum(m.spot for m in members),
        spot_fallback=sum(m.spot_fallback for m in members),
        spot_types=single.spot_types if single else (),
        spot_price=single.spot_price if single else None,
        nodes=nodes,
        monthly_cost=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        on_demand_only_cost=None if any(b is None for b in bases) else sum(b or 0.0 for b in bases),
        interruptible=total.interruptible,
        sla=total.sla,
        instrument=members[0].instrument,
        break_even=members[0].break_even,
        reserved_used=sum(m.reserved_used for m in members),
        expected_cost=None if any(m.expected_cost is None for m in priced) else sum(m.expected_cost or 0.0 for m in priced),
        expected_on_demand_only=None
        if any(m.expected_on_demand_only is None for m in priced)
        else sum(m.expected_on_demand_only or 0.0 for m in priced),
        expected_parts={k: sum(m.expected_parts.get(k, 0.0) for m in members) for k in ("committed", "alwaysOn", "onDemand", "spot")},
        always_on=sum(m.always_on for m in members),
        existing_reserved=sum(m.existing_reserved for m in members),
        break_even_reserved=sum(m.break_even_reserved for m in members),
        shape_fit=single.shape_fit if single else None,
        waits=single.waits if single else None,
        packed_p95_nodes=single.packed_p95_nodes if single else None,
        unplaceable=sum(m.unplaceable for m in members),
        mean_above_reserve=sum(m.mean_above_reserve for m in members),
    )


def plan(demand: Demand, catalog: Catalog, production: bool = False, existing: Mapping[tuple[str, str], int] | None = None) -> Plan:
    """Size every group of the demand and total each class.

    `production` keeps one non-Spot node up per class (for a production stack); `existing` maps
    (workload class, instance type) to nodes already reserved (the stack's ODCR pools), given supply
    for the first group of that class planned on that type.
    """
    opts = demand.options
    left = dict(existing or {})
    out = []
    for g in demand.groups:
        itype = instance_for(g.workload_class, g.catalog_gpu, catalog, target_gpus(g, opts)[0], g.shape, g.shape_fit) if g.catalog_gpu else None
        given = left.pop((g.workload_class, itype.name), 0) if itype else 0
        out.append(plan_group(g, opts, catalog, demand.source, production, given))
    groups = tuple(out)
    totals = tuple(class_total(t, [g for g in groups if g.workload_class == t.workload_class]) for t in demand.totals)
    return Plan(demand=demand, groups=groups, totals=totals)
