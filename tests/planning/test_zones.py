"""Whole nodes per zone: each tier spread over the zones of the stack's pools for the class and GPU."""

from __future__ import annotations

import pytest

from gpu_platform.planning.zones import spread
from tests.conftest import ROOT
from tests.planning.helpers import plan_json, row, run_cli

TEAMS = str(ROOT / "examples" / "demand" / "teams.yaml")


def test_spread_gives_whole_nodes_the_first_zones_taking_the_remainder() -> None:
    # 5 nodes over 3 zones: 5 = 3 x 1 + 2, so a and b take one more
    assert spread(5, ("a", "b", "c")) == {"a": 2, "b": 2, "c": 1}
    assert spread(0, ("a", "b")) == {"a": 0, "b": 0}
    assert spread(3, ()) == {}


def test_prod_plan_states_nodes_per_zone_of_the_pools_that_hold_them(capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", TEAMS, "--stack", "prod")
    # prod's H100 training pools (reserved, on-demand, Capacity Block) all sit in us-east-1a
    training = row(doc, "plan", "training", "H100-80GB")
    assert list(training["nodesPerZone"]) == ["us-east-1a"]
    assert training["nodesPerZone"]["us-east-1a"] == training["nodes"]
    # prod's L4 inference pools name no zone: every cluster zone, whole nodes in each, summing to the tier
    l4 = row(doc, "plan", "inference", "L4")
    assert list(l4["nodesPerZone"]) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    for tier, n in l4["nodes"].items():
        per = [z[tier] for z in l4["nodesPerZone"].values()]
        assert sum(per) == n and max(per) - min(per) <= 1, tier
    # the class total adds the A100 MIG pool's zone (us-east-1b) to the L4 spread
    total = row(doc, "plan", "inference")
    a100 = row(doc, "plan", "inference", "A100-80GB")
    assert total["nodesPerZone"]["us-east-1b"]["reserved"] == l4["nodesPerZone"]["us-east-1b"]["reserved"] + a100["nodes"]["reserved"]


def test_without_a_stack_no_zones_are_claimed(capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", TEAMS)
    assert all(r["nodesPerZone"] is None for r in doc["plan"]["classes"])


def test_the_table_prints_nodes_per_zone(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "capacity", "plan", "--demand", TEAMS, "--stack", "prod")
    assert code == 0
    assert "Nodes per zone training/H100-80GB (p5.48xlarge): us-east-1a reserved" in out
