"""Typed accessor over the GPU catalog (instance types, GPU models, MIG layouts, prices)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

import yaml

from gpu_platform.errors import safe_loader

Architecture = Literal["turing", "ampere", "ada", "hopper", "blackwell"]
SharingMode = Literal["none", "time-slicing", "mps", "mig"]


@dataclass(frozen=True)
class GpuModel:
    """One GPU model: architecture, memory, and which sharing modes and MIG layouts it supports."""

    name: str
    architecture: Architecture
    memory_gib: int
    product: str
    pci_device_id: str
    sharing: tuple[str, ...]
    mig_configs: dict[str, dict[str, int]]

    @property
    def supports_mig(self) -> bool:
        """True for the A100/H100/H200 class."""
        return "mig" in self.sharing

    @property
    def product_label(self) -> str:
        """The value GPU Feature Discovery puts in the `nvidia.com/gpu.product` label."""
        return self.product.replace(" ", "-")

    def mig_profiles(self) -> set[str]:
        """Every MIG profile any standard config of this GPU creates."""
        return {p for layout in self.mig_configs.values() for p in layout}


@dataclass(frozen=True)
class InstanceType:
    """One EC2 GPU instance type."""

    name: str
    gpu: GpuModel
    gpus: int
    vcpu: int
    memory_gib: int
    efa_interfaces: int
    nvswitch: bool
    price_per_hour: float | None
    # EFA-only interfaces (`interfaceType: efa-only`, no IP address) on the EFA cards; see gpu_platform.efa.
    efa_only: bool = False

    @property
    def family(self) -> str:
        """The family part of the name, e.g. `p5` for `p5.48xlarge`."""
        return self.name.split(".", 1)[0]

    @property
    def supports_efa(self) -> bool:
        """True when the type has at least one EFA-capable network card."""
        return self.efa_interfaces > 0


@dataclass(frozen=True)
class Pricing:
    """Where and when the catalog's prices were taken."""

    region: str
    as_of: str
    source: str
    currency: str


@dataclass(frozen=True)
class Throughput:
    """Relative GPU throughput for substitutions: one metric per model, with where and when it was taken."""

    metric: str
    as_of: str
    source: str
    tflops: dict[str, float]

    def factor(self, model: str, stand_in: str) -> float | None:
        """Stand-in GPUs per GPU of `model` (its throughput over the stand-in's); None without data for both."""
        a, b = self.tflops.get(model), self.tflops.get(stand_in)
        return a / b if a and b else None


@dataclass(frozen=True)
class Catalog:
    """The whole catalog, loaded once from `data/catalog.yaml`."""

    gpus: dict[str, GpuModel]
    instance_types: dict[str, InstanceType]
    pricing: Pricing
    throughput: Throughput | None = None

    def instance(self, name: str) -> InstanceType:
        """Look up an instance type; KeyError when unknown (callers validate first)."""
        return self.instance_types[name]

    def gpu(self, name: str) -> GpuModel:
        """Look up a GPU model; KeyError when unknown (callers validate first)."""
        return self.gpus[name]


def parse_catalog(raw: dict) -> Catalog:
    """Build a Catalog from the YAML document's data."""
    gpus = {
        name: GpuModel(
            name=name,
            architecture=g["architecture"],
            memory_gib=int(g["memory_gib"]),
            product=g["product"],
            pci_device_id=g["pci_device_id"],
            sharing=tuple(g["sharing"]),
            mig_configs={k: dict(v) for k, v in (g.get("mig_configs") or {}).items()},
        )
        for name, g in raw["gpus"].items()
    }
    types = {
        name: InstanceType(
            name=name,
            gpu=gpus[t["gpu"]],
            gpus=int(t["gpus"]),
            vcpu=int(t["vcpu"]),
            memory_gib=int(t["memory_gib"]),
            efa_interfaces=int(t["efa_interfaces"]),
            nvswitch=bool(t["nvswitch"]),
            price_per_hour=None if t["price"] is None else float(t["price"]),
            efa_only=bool(t.get("efa_only", False)),
        )
        for name, t in raw["instance_types"].items()
    }
    tp = raw.get("throughput")
    throughput = (
        Throughput(metric=tp["metric"], as_of=str(tp["as_of"]), source=tp["source"], tflops={k: float(v) for k, v in tp["tflops"].items()})
        if tp
        else None
    )
    return Catalog(gpus=gpus, instance_types=types, pricing=Pricing(**raw["pricing"]), throughput=throughput)


@cache
def load_catalog() -> Catalog:
    """The catalog shipped with the package (cached: it is immutable data)."""
    text = resources.files("gpu_platform").joinpath("data/catalog.yaml").read_text()
    return parse_catalog(yaml.load(text, Loader=safe_loader()))
