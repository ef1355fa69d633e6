"""What `check --base` is told besides the revisions: current use per tenant (Prometheus export), demand per class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_platform.catalog import load_catalog
from gpu_platform.change.inputs import demand_p95, usage_snapshot
from gpu_platform.errors import ConfigError
from gpu_platform.k8s.alerts import TENANT_ALLOCATED
from gpu_platform.planning.inputs import load_demand
from tests.conftest import ROOT, spec_for


def export(tmp_path: Path, *series: tuple[str, str, list[list[object]]]) -> Path:
    result = [{"metric": {"__name__": TENANT_ALLOCATED, "tenant": t, "resource": r}, "values": v} for t, r, v in series]
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    return path


def test_usage_is_the_last_sample_in_physical_gpus(tmp_path: Path) -> None:
    path = export(
        tmp_path,
        ("llm-training", "nvidia_com_gpu", [[0, "30"], [60, "40"]]),
        # serving runs MIG slices: 3g.40gb is a half of an H100/A100 (two fit one GPU in the catalog's layouts)
        ("serving", "nvidia_com_mig_3g_40gb", [[0, "8"], [60, "6"]]),
        ("gone-team", "nvidia_com_gpu", [[60, "5"]]),
    )
    used = usage_snapshot(path, spec_for("prod"), load_catalog())
    assert used == {"llm-training": 40.0, "serving": 3.0}, "the tenant the stack no longer has is not compared"


def test_a_file_that_is_no_export_is_one_problem(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text('{"rows": []}')
    with pytest.raises(ConfigError) as err:
        usage_snapshot(path, spec_for("prod"), load_catalog())
    assert [str(p) for p in err.value.problems] == [
        f"{path}: <root>: not a Prometheus query_range export; allowed: a Prometheus query_range JSON export of {TENANT_ALLOCATED}"
    ]


def test_demand_p95_per_class_is_the_planners_class_total() -> None:
    path = ROOT / "examples" / "demand" / "teams.yaml"
    p95 = demand_p95(path, spec_for("prod"), load_catalog(), "stacks/Pulumi.prod.yaml")
    totals = {g.workload_class: g.p95 for g in load_demand(path, load_catalog(), spec_for("prod")).totals}
    assert p95 == totals and p95["training"] >= 40
