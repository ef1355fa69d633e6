"""One pricing model for `capacity`, `capacity plan` and `--write-stack`: list prices, Spot, and commitment instruments.

Every price is the catalog's On-Demand list price (with its date and source) times a factor that
depends on how the capacity is bought: an instrument of `data/commitments.yaml` (Savings Plan or
reserved instance at its discount, an ODCR at list), Spot at its discount, or a Capacity Block at its
own rate for its dates. A type without a price is an error, never $0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

import yaml

from gpu_platform.catalog import Catalog, InstanceType, load_catalog
from gpu_platform.errors import ConfigError, Problem

HOURS_PER_MONTH = 730
InstrumentKind = Literal["savings-plan", "reserved-instance", "odcr", "capacity-block"]
DEFAULT_INSTRUMENT = "savings-plan-1y"


@dataclass(frozen=True)
class Instrument:
    """A way to buy a reserved tier: what it costs below list, for how long."""

    name: str
    kind: InstrumentKind
    term_months: int
    discount: float

    @property
    def break_even(self) -> float:
        """The least share of the term a committed GPU must be busy to cost no more than on-demand for the same hours."""
        return 1 - self.discount


@dataclass(frozen=True)
class CapacityBlockPrice:
    """A Capacity Block's effective hourly rate for one instance type."""

    price: float
    as_of: str
    source: str


@dataclass(frozen=True)
class Commitments:
    """Instruments, the Spot estimate and Capacity Block rates, with where they came from."""

    instruments: dict[str, Instrument]
    spot_discount: float
    spot_fallback_share: float
    spot_source: str
    capacity_blocks: dict[str, CapacityBlockPrice]
    as_of: str
    source: str

    def instrument(self, name: str) -> Instrument:
        """Look up an instrument; KeyError when unknown (callers validate first)."""
        return self.instruments[name]


def parse_commitments(raw: dict) -> Commitments:
    """Build Commitments from the YAML document's data."""
    spot = raw["spot"]
    return Commitments(
        instruments={
            n: Instrument(name=n, kind=v["kind"], term_months=int(v["termMonths"]), discount=float(v["discount"]))
            for n, v in raw["instruments"].items()
        },
        spot_discount=float(spot["discount"]),
        spot_fallback_share=float(spot["fallbackShare"]),
        spot_source=str(spot["source"]),
        capacity_blocks={
            n: CapacityBlockPrice(price=float(v["price"]), as_of=str(v["as_of"]), source=v["source"])
            for n, v in (raw.get("capacityBlocks") or {}).items()
        },
        as_of=str(raw["as_of"]),
        source=raw["source"],
    )


@cache
def load_commitments() -> Commitments:
    """The instruments shipped with the package (cached: immutable data)."""
    text = resources.files("gpu_platform").joinpath("data/commitments.yaml").read_text()
    return parse_commitments(yaml.safe_load(text))


TIERS = ("reserved", "capacity-block", "on-demand", "spot")


@dataclass(frozen=True)
class Rate:
    """What one node-hour of an instance type bills through one tier, and where that figure comes from."""

    price: float
    basis: str
    as_of: str
    source: str


def tier_rate(itype: InstanceType, tier: str, catalog: Catalog, commitments: Commitments | None = None) -> Rate | None:
    """The rate one node-hour of `itype` bills in a stack pool of `tier`, or None when the catalog has none.

    On-demand and reserved (an ODCR bills at the On-Demand rate while held) at list, Spot at its
    estimate below list, a Capacity Block at its own rate for its dates.
    """
    c = commitments or load_commitments()
    if tier == "capacity-block":
        block = c.capacity_blocks.get(itype.name)
        return None if block is None else Rate(block.price, "Capacity Block rate", block.as_of, block.source)
    if itype.price_per_hour is None:
        return None
    p = catalog.pricing
    if tier == "spot":
        share = 1 - c.spot_discount
        return Rate(itype.price_per_hour * share, f"Spot estimate ({share:.0%} of On-Demand list)", c.as_of, c.spot_source)
    return Rate(itype.price_per_hour, "On-Demand list" + (" (an ODCR bills at list while held)" if tier == "reserved" else ""), p.as_of, p.source)


def missing_rate(itype: InstanceType, tier: str, commitments: Commitments | None = None) -> tuple[str, str]:
    """(problem, allowed) for a pool of `tier` whose type has no rate: the one line `check` and `capacity` both print."""
    c = commitments or load_commitments()
    blocks = sorted(c.capacity_blocks)
    if tier == "capacity-block":
        return (
            f"'{itype.name}' ({itype.gpu.name}) has no Capacity Block rate in data/commitments.yaml",
            f"allowed: a Capacity Block pool of {', '.join(blocks)}, or add the rate with its date and source",
        )
    sold = "capacity: capacity-block (it has a Capacity Block rate)" if itype.name in blocks else ""
    return (
        f"'{itype.name}' ({itype.gpu.name}) has no On-Demand list price in the catalog, which capacity: {tier} "
        + ("is estimated from" if tier == "spot" else "bills at"),
        "allowed: " + (f"{sold}, " if sold else "") + "a priced instance type, or add its price with date and source to data/catalog.yaml",
    )


def spot_node_hour(list_prices: Sequence[float], spot_discount: float) -> float:
    """A node-hour of a Spot group listing several types: the dearest type's Spot estimate.

    EKS gives the group's Auto Scaling group every listed type and EC2 launches whichever has capacity, so any of
    them may be the one billed (the planner's Spot pools, and existing pools a written stack keeps).
    """
    return max(list_prices) * (1 - spot_discount)


def list_price(itype: InstanceType, file: str, where: str) -> float:
    """The On-Demand list price per node-hour; ConfigError (never $0) when the catalog has none."""
    if itype.price_per_hour is None:
        raise ConfigError(
            [
                Problem(
                    file,
                    where,
                    f"{itype.name} ({itype.gpu.name}) has no On-Demand list price in the catalog (AWS sells it as Capacity Blocks)",
                    "allowed: a priced instance type (another GPU model via --gpu-map or gpuModel), "
                    "or add its price with date and source to data/catalog.yaml",
                )
            ]
        )
    return itype.price_per_hour


def node_hour_price(itype: InstanceType, tier: str, file: str, where: str, commitments: Commitments | None = None) -> float:
    """What one node-hour of a stack pool's tier bills (tier_rate); ConfigError (never $0) without a rate."""
    rate = tier_rate(itype, tier, load_catalog(), commitments)
    if rate is None:
        problem, allowed = missing_rate(itype, tier, commitments)
        raise ConfigError([Problem(file, where, problem, allowed)])
    return rate.price


def committed_price(itype: InstanceType, instrument: Instrument, file: str, where: str) -> float:
    """One committed node-hour: list price less the instrument's discount (an ODCR bills at list)."""
    return list_price(itype, file, where) * (1 - instrument.discount)


def catalog_note(catalog: Catalog, commitments: Commitments | None = None) -> str:
    """One line naming every price source and date the figures rest on."""
    c = commitments or load_commitments()
    p = catalog.pricing
    return (
        f"Prices: On-Demand {p.source}, as of {p.as_of}; commitments {c.source}, as of {c.as_of}; "
        f"Spot estimated at {1 - c.spot_discount:.0%} of On-Demand; Capacity Blocks at their own rate for their dates."
    )
