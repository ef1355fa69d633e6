"""The workload corpus: shapes written the way upstream examples and popular charts write them, walked by `explain`.

Each case in cases.yaml names its shape, the stack, the verdict a user must see (`waits-or-runs`: admitted and
placed, though Spot or scale-up capacity may make it wait), and for `never` the stage that refuses it and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.journeys.journey import walk

HERE = Path(__file__).parent
CASES: list[dict[str, Any]] = yaml.safe_load((HERE / "cases.yaml").read_text())


def test_every_shape_has_a_case_and_every_case_a_source() -> None:
    shapes = {p.name for p in (HERE / "shapes").glob("*.yaml")}
    assert shapes == {c["shape"] for c in CASES}
    assert all(c.get("decided_by") for c in CASES)
    for c in CASES:
        assert c["verdict"] in ("runs", "waits-or-runs", "never")
        assert (c["verdict"] == "never") == ("stage" in c), c["shape"]


@pytest.mark.parametrize("case", CASES, ids=[c["shape"].removesuffix(".yaml") for c in CASES])
def test_shape_gets_its_verdict(case: dict[str, Any]) -> None:
    manifest = yaml.safe_load((HERE / "shapes" / case["shape"]).read_text())
    e = walk(case["stack"], manifest)
    walked = " -> ".join(f"{s.stage}:{s.result}" for s in e.steps)
    blocked = [s for s in e.steps if s.result == "blocked"]
    if case["verdict"] == "never":
        assert e.verdict == "never", f"{case['shape']}: expected a refusal at {case['stage']}, walked {walked}"
        assert blocked[0].stage == case["stage"], f"{case['shape']}: refused at {blocked[0].stage}: {blocked[0].detail}"
        assert case["reason"] in blocked[0].detail, blocked[0].detail
        return
    assert not blocked, f"{case['shape']}: refused at {blocked[0].stage}: {blocked[0].detail}"
    allowed = ("runs",) if case["verdict"] == "runs" else ("runs", "waits")
    assert e.verdict in allowed, f"{case['shape']}: {e.verdict}: {walked}"
    assert e.step("device-resources") is not None or e.step("node-pool") is not None, walked
