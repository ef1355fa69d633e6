"""What a user chooses of the fragmentation replay: its placement policies and seeds.

Apart from the replay so that the CLI offers them without importing it (its arrays, numpy, would load on every `plan`).
"""

from __future__ import annotations

POLICIES = ("best-fit", "fgd")
DEFAULT_SEEDS = tuple(range(42, 52))
MAX_SEEDS = 100
