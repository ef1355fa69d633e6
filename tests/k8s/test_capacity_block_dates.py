"""Capacity Block dates: declared on the pool, quota only inside them, bad dates one line and exit 2."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.cli import main
from gpu_platform.k8s.kueue import cluster_queue
from tests.conftest import spec_for, stack_path

BLOCK = "train-h100-block"


def _block_quota(day: date) -> int:
    spec = spec_for("prod")
    cq = cluster_queue(spec, load_catalog(), next(t for t in spec.tenants if t.name == "llm-training"), today=day)
    entries = [f for g in cq["spec"]["resourceGroups"] for f in g["flavors"] if f["name"] == BLOCK]
    return int(entries[0]["resources"][0]["nominalQuota"])


@pytest.mark.parametrize(
    ("day", "quota"),
    [(date(2026, 11, 15), 0), (date(2026, 11, 16), 16), (date(2027, 5, 16), 16), (date(2027, 5, 17), 0)],
)
def test_the_block_flavor_carries_quota_only_inside_its_dates(day: date, quota: int) -> None:
    """prod's block runs 2026-11-16 (first day) to 2027-05-17 (end, exclusive)."""
    assert _block_quota(day) == quota


def _with_block(tmp_path: Path, **reservation: object) -> Path:
    doc = yaml.safe_load(stack_path("prod").read_text())
    pool = next(p for p in doc["config"]["gpu-platform:nodePools"] if p["name"] == BLOCK)
    pool["reservation"] = {"id": pool["reservation"]["id"], **reservation}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("reservation", "message"),
    [
        ({"start": "2026-11-16"}, "reservation.end: missing; allowed: both start and end"),
        ({"start": "2026-12-01", "end": "2026-11-16"}, "reservation.end: 2026-11-16 is not after start 2026-12-01"),
        ({"start": "someday", "end": "2026-11-16"}, "reservation.start"),
    ],
)
def test_bad_block_dates_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], reservation: dict, message: str) -> None:
    path = _with_block(tmp_path, **reservation)
    assert main(["plan", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith(str(path)), err


def test_dates_only_on_capacity_block_pools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(stack_path("prod").read_text())
    pool = next(p for p in doc["config"]["gpu-platform:nodePools"] if p["name"] == "train-h100-reserved")
    pool["reservation"] |= {"start": "2026-11-16", "end": "2027-05-17"}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["plan", "--config", str(path)]) == 2
    assert "dates on a reserved pool; allowed: start and end on capacity-block pools only" in capsys.readouterr().err
