"""Break-even per instrument (planning/instruments.py): each group's reserve bought every way AWS sells it.

Hand-computed from the catalog's list prices and data/commitments.yaml: a committed node-hour is list x (1 -
discount) for a Savings Plan or reserved instance, list for an ODCR (billed used or not), the Savings Plan's rate
for an ODCR it is applied to, and the Capacity Block rate for a type AWS sells so. A node is committed when it
would be up at least 1 - discount of the hours, so an ODCR (no discount) commits only nodes up every hour.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.pricing import HOURS_PER_MONTH, load_commitments
from tests.planning.helpers import plan_json, require_trace, run_cli

CATALOG = load_catalog()
COMMITMENTS = load_commitments()
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demand" / "alibaba-gpu-2023.yaml"


def _ways(doc: dict, cls: str) -> dict[str, dict]:
    return {r["instrument"]: r for r in doc["instruments"] if r["class"] == cls}


def test_training_one_p5_up_every_hour_is_committed_every_way_at_each_rate(capsys: pytest.CaptureFixture[str]) -> None:
    """The trace's current training regime keeps one p5.48xlarge up every hour (test_held, test_economics): every
    instrument, ODCR included (break-even 100 %), commits it, and its expected bill is that node's rate x 730 h."""
    doc = plan_json(capsys, "--demand", str(require_trace("openb_pod_list_default.csv")))
    ways = _ways(doc, "training")
    p5 = CATALOG.instance("p5.48xlarge").price_per_hour
    assert p5 is not None
    block = COMMITMENTS.capacity_blocks["p5.48xlarge"].price
    expected = {
        "savings-plan-1y": p5 * 0.65,
        "savings-plan-3y": p5 * 0.45,
        "reserved-instance-1y": p5 * 0.65,
        "reserved-instance-3y": p5 * 0.45,
        "odcr": p5,
        "odcr+savings-plan-1y": p5 * 0.65,
        "capacity-block": block,
    }
    assert set(ways) == set(expected)
    for name, rate in expected.items():
        r = ways[name]
        assert r["instanceType"] == "p5.48xlarge" and r["reservedNodes"] == 1, name
        assert r["nodeHour"] == round(rate, 4), name
        assert r["breakEven"] == round(rate / p5, 4), name
        assert r["expectedMonthlyCost"] == pytest.approx(rate * HOURS_PER_MONTH, abs=0.01), name
        assert r["onDemandOnlyExpectedMonthlyCost"] == pytest.approx(p5 * HOURS_PER_MONTH, abs=0.01), name  # the node at list
    assert ways["capacity-block"]["source"] == COMMITMENTS.capacity_blocks["p5.48xlarge"].source
    assert ways["capacity-block"]["asOf"] == COMMITMENTS.capacity_blocks["p5.48xlarge"].as_of


def test_a_higher_break_even_never_commits_more_and_odcr_only_what_is_always_up(capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(capsys, "--demand", str(DEMO))
    for cls in ("training", "inference", "batch"):
        ways = sorted(_ways(doc, cls).values(), key=lambda r: r["breakEven"])
        nodes = [r["reservedNodes"] for r in ways]
        assert nodes == sorted(nodes, reverse=True), (cls, [(r["instrument"], r["reservedNodes"]) for r in ways])
        by = _ways(doc, cls)
        assert by["odcr+savings-plan-1y"]["reservedNodes"] == by["savings-plan-1y"]["reservedNodes"]
        # the headline instrument's row is the headline plan's reserve
        headline = next(r for r in doc["plan"]["classes"] if r["class"] == cls and r["gpuModel"] != "any")
        assert by[doc["assumptions"]["instrument"]]["reservedNodes"] == headline["nodes"]["reserved"]
    # only types AWS sells as Capacity Blocks get that row: L4 and L40S have none
    assert "capacity-block" not in _ways(doc, "inference") and "capacity-block" not in _ways(doc, "batch")
    # one baseline per group, the headline plan on on-demand alone: the rows' differences compare with each other
    for cls in ("training", "inference", "batch"):
        headline = next(r for r in doc["plan"]["classes"] if r["class"] == cls and r["gpuModel"] != "any")
        assert {r["onDemandOnlyExpectedMonthlyCost"] for r in _ways(doc, cls).values()} == {headline["onDemandOnlyExpectedMonthlyCost"]}


def test_existing_reservations_do_not_hide_the_instruments(capsys: pytest.CaptureFixture[str]) -> None:
    """prod holds four ODCR p5 nodes; the table still shows what each instrument would buy from scratch (the Release
    lines judge the held ones)."""
    doc = plan_json(capsys, "--demand", str(DEMO), "--stack", "prod")
    ways = _ways(doc, "training")
    assert ways["savings-plan-1y"]["reservedNodes"] < 4
    assert doc["plan"]["releases"]


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_the_table_is_printed(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, err = run_cli(capsys, "capacity", "plan", "--demand", str(DEMO), "--format", fmt)
    assert code == 0, err
    assert "Instruments (each group's reserve bought every way, from scratch" in out
    line = next(x for x in out.splitlines() if "capacity-block" in x)
    assert "p5.48xlarge" in line and "$39.33" in line and "71%" in line


@pytest.mark.parametrize("demand", ["alibaba-gpu-2023.yaml", "teams.yaml", "serving-requests.yaml"])
def test_a_cheaper_rate_never_costs_more(capsys: pytest.CaptureFixture[str], demand: str) -> None:
    """Each node is committed only where it pays at that rate, so a lower rate never gives a higher expected bill.
    (It did when break-even ignored the N+1 spare: teams.yaml's inference/A100-80GB bought a second p4de node on the
    3-year plan that the spare already covered, $27,049 against $26,047 on the 1-year one.)"""
    doc = plan_json(capsys, "--demand", str(DEMO.parent / demand))
    # Spot groups included: a committed node is weighed against the hours it would buy on demand or on Spot (up to
    # the Spot pool); before, teams.yaml's batch/L40S cost $6,198 on the 1-year plan against $5,437 with none.
    assert demand != "teams.yaml" or any(r["spot"] for r in doc["plan"]["classes"])
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in doc["instruments"]:
        groups.setdefault((r["class"], r["gpuModel"]), []).append(r)
    assert groups
    for key, rows in groups.items():
        ordered = sorted(rows, key=lambda r: r["nodeHour"])
        costs = [r["expectedMonthlyCost"] for r in ordered]
        assert all(a <= b + 0.01 for a, b in itertools.pairwise(costs)), (
            key,
            [(r["instrument"], r["expectedMonthlyCost"]) for r in ordered],
        )
