"""MIG: whether the driver can hold a layout of GPU instances, and the tables it lists them in.

Sources:
- NVIDIA/mig-parted (the lockfile's `mig_parted` pin) pkg/mig/config/config.go
  `nvmlMigConfigManager.SetMigConfig`: a config is applied by creating its GPU instances with NVML
  `CreateGpuInstance`, one after another, in every order until one succeeds
  (`iteratePermutationsUntilSuccess`).
- NVIDIA driver (`nvidia-smi mig -lgip`, `-lgipp`; NVML `nvmlDeviceGetGpuInstanceProfileInfo`,
  `nvmlDeviceGetGpuInstancePossiblePlacements_v2`): each profile has a most-instances count and the
  placements one instance may take (a start and a size in the GPU's memory slices); an instance no free
  placement can take is refused, so a layout with no non-overlapping placement for all its instances
  fails in every order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# `nvidia-smi mig -lgip` row: "|   0  MIG 1g.10gb         19     7/7        9.75       No     16 ..."
_PROFILE_ROW = re.compile(r"^\|\s+\d+\s+MIG (\S+)\s+(\d+)\s+\d+/(\d+)\s+([\d.]+)\s")
# `nvidia-smi mig -lgipp` row: "GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1" ("Placement :" for one).
_PLACEMENT_ROW = re.compile(r"^GPU\s+\d+ Profile ID\s+(\d+) Placements?\s*: \{([\d,]+)\}:(\d+)$")


@dataclass(frozen=True)
class Profile:
    """One GPU-instance profile as the driver lists it."""

    most: int
    """Most instances of it one GPU holds."""
    placements: tuple[range, ...]
    """The memory slices one instance may take, one range per possible placement."""


def parse_profiles(lgip: str, lgipp: str) -> dict[str, Profile]:
    """{profile name: Profile} from the text of `nvidia-smi mig -lgip` and `nvidia-smi mig -lgipp` for one GPU."""
    placements: dict[str, tuple[range, ...]] = {}
    for line in lgipp.splitlines():
        m = _PLACEMENT_ROW.match(line)
        if m is None:
            raise ValueError(f"not a placement row of `nvidia-smi mig -lgipp`: {line!r}")
        placements[m[1]] = tuple(range(int(start), int(start) + int(m[3])) for start in m[2].split(","))
    rows = (_PROFILE_ROW.match(line) for line in lgip.splitlines())
    return {m[1]: Profile(int(m[3]), placements[m[2]]) for m in rows if m}


def placeable(layout: Mapping[str, int], profiles: Mapping[str, Profile]) -> bool:
    """Whether the driver can hold every instance of `layout` at once: each in one of its profile's placements, none overlapping."""
    wanted: Sequence[str] = sorted((p for p, n in layout.items() for _ in range(n)), key=lambda p: -len(profiles[p].placements[0]))

    def fit(i: int, used: frozenset[int]) -> bool:
        if i == len(wanted):
            return True
        return any(used.isdisjoint(r) and fit(i + 1, used | frozenset(r)) for r in profiles[wanted[i]].placements)

    return fit(0, frozenset())
