"""`--demand` inputs: told apart by content; bad files give one line per problem and exit 2, never a traceback.

The Prometheus input reproduces what the project's recording rule `tenant_resource:gpu_platform_gpu_requests:sum`
(k8s/alerts.py) returns through the HTTP API's `query_range` (prometheus/web/api/v1/api.go, resultType matrix,
values as [unix seconds, "string"]), with kube-state-metrics' resource names (nvidia.com/mig-3g.40gb becomes
nvidia_com_mig_3g_40gb: kube-state-metrics internal/store/utils.go, SanitizeLabelName).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpu_platform.k8s.alerts import TENANT_ALLOCATED
from tests.planning.helpers import plan_json, row, run_cli, write_demand

LINE = re.compile(r"^(?P<file>[^:]+): (?P<path>[^:]+): (?P<what>.+); (?P<allowed>.+)$")


def problems(capsys: pytest.CaptureFixture[str], demand: Path, *extra: str) -> list[str]:
    """stderr lines of a run that must fail with exit 2, each in the one-line format."""
    code, out, err = run_cli(capsys, "capacity", "plan", "--demand", str(demand), *extra)
    assert code == 2, (out, err)
    assert "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    for line in lines:
        assert LINE.match(line), line
        assert line.startswith(str(demand) + ": ") or line.startswith("--"), line
    return lines


def test_bad_declared_file_reports_every_problem_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "planning": {"spotCap": 1.5},
        "demand": [
            {"team": "a", "class": "inferense", "p50": 1, "p95": 2},
            {"team": "b", "class": "batch", "p50": 5, "p95": 2, "gpus": 3},
            {"team": "c", "class": "training", "p95": "many"},
        ],
    }
    lines = problems(capsys, write_demand(tmp_path, doc))
    assert len(lines) == 5, lines
    text = "\n".join(lines)
    assert "planning.spotCap: 1.5 is out of range; allowed: <= 1" in text
    assert "demand[0].class: 'inferense' is not a valid choice (did you mean 'inference'?)" in text
    assert "demand[1].gpus: unknown key 'gpus'" in text
    assert "demand[2].p50: required key is missing" in text
    assert "demand[2].p95: 'many' is not a number" in text


def test_catalog_checks_after_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "demand": [
            {"team": "a", "class": "inference", "gpuModel": "H100", "p50": 1, "p95": 2},
            {"team": "b", "class": "inference", "gpuModel": "L4", "unit": "mig", "migProfile": "1g.10gb", "p50": 1, "p95": 2},
            {"team": "c", "class": "inference", "gpuModel": "A100-80GB", "unit": "mig", "migProfile": "3g.20gb", "p50": 1, "p95": 2},
            {"team": "d", "class": "batch", "p50": 5, "p95": 2},
            {"team": "e", "class": "batch", "unit": "shared", "p50": 1, "p95": 2},
        ]
    }
    lines = problems(capsys, write_demand(tmp_path, doc))
    text = "\n".join(lines)
    assert len(lines) == 5, lines
    assert "demand[0].gpuModel: unknown GPU model 'H100' (did you mean 'H100-80GB'?)" in text
    assert "demand[1].gpuModel: MIG slices need a MIG-capable GPU model, not 'L4'" in text
    assert "demand[2].migProfile: A100-80GB has no MIG profile '3g.20gb' (did you mean '3g.40gb'?)" in text
    assert "demand[3].p95: 2 is below p50 (5); allowed: p50 <= p95 <= p99 <= peak" in text
    assert "demand[4].replicas: required with unit: shared" in text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "file is empty"),
        ("demand: [\n", "invalid YAML"),
        ("- 1\n- 2\n", "not a demand input (found a list without a `demand:` key)"),
        ("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,1,T4\n", "this is the trace's node list, not its pod list"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": []}}', "a Prometheus export needs the stack its tenants belong to"),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
            "p0,1,1,1,1000,,LS,Running,10,5,0\np1,1,1,x,1000,,XX,Running,0,5,0\np2,1,1,1,1000,,Gold,Running,0,5,0\n",
            "line 2.deletion_time: 5 is before creation_time 10",
        ),
    ],
)
def test_each_kind_of_bad_file(content: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "input"
    path.write_text(content)
    lines = problems(capsys, path)
    assert any(message in line for line in lines), lines


def test_bad_trace_rows_are_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    path = tmp_path / "pods.csv"
    path.write_text(head + "p0,1,1,1,1000,,LS,Running,10,5,0\np1,1,1,x,1000,,LS,Running,0,5,0\np2,1,1,1,1000,,Gold,Running,0,5,0\n")
    lines = problems(capsys, path)
    assert [line.split(": ")[1] for line in lines] == ["line 2.deletion_time", "line 3.num_gpu", "line 4.qos"]


def test_missing_file_and_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "file not found" in problems(capsys, tmp_path / "nope.yaml")[0]
    demand = write_demand(tmp_path, {"demand": [{"team": "a", "class": "batch", "p50": 1, "p95": 2}]})
    lines = problems(capsys, demand, "--qos-class", "BE=batchh")
    assert lines == ["--qos-class: BE: 'batchh' is not allowed (did you mean 'batch'?); allowed: batch, development, inference, training"]
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(demand), "--chart", str(tmp_path / "c.gif"))
    assert code == 2 and "unknown chart format '.gif'; allowed: a file name ending in .svg or .png" in err


def prometheus_export(samples: dict[tuple[str, str], list[float]], step: int = 60) -> dict[str, object]:
    """A query_range response of the per-tenant allocation rule, one series per (tenant, resource)."""
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"__name__": TENANT_ALLOCATED, "tenant": t, "resource": r},
                    "values": [[1_700_000_000 + i * step, str(v)] for i, v in enumerate(vals)],
                }
                for (t, r), vals in samples.items()
            ],
        },
    }


def test_prometheus_export_per_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """prod tenants: serving (most quota on the A100 MIG pool: inference) asks 3g.40gb slices (2 per GPU) and whole GPUs;
    data-platform (batch). Per class the tenants' series are summed, each sample holding for one step."""
    export = prometheus_export(
        {
            ("serving", "nvidia_com_mig_3g_40gb"): [4, 4, 8, 8, 4, 4, 4, 4, 4, 20],
            ("serving", "nvidia_com_gpu"): [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
            ("data-platform", "nvidia_com_gpu"): [0, 0, 0, 0, 0, 0, 0, 0, 8, 8],
        }
    )
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    doc = plan_json(capsys, "--demand", str(path), "--stack", "prod")
    assert doc["source"]["kind"] == "prometheus"
    inference = row(doc, "demand", "inference")
    # GPUs' worth per step: 3,3,5,5,3,3,3,3,3,11 -> P50 3, P95 (95 % of 10 steps = 9.5 steps) 11, peak 11
    assert (inference["p50"], inference["p95"], inference["peak"]) == (3, 11, 11)
    assert inference["interruptible"] is False
    batch = row(doc, "demand", "batch")
    assert (batch["p50"], batch["p95"], batch["peak"]) == (0, 8, 8)
    assert batch["interruptible"] is True
    assert row(doc, "plan", "inference")["catalogGpu"] == "A100-80GB"


def test_prometheus_export_with_unknown_tenant_and_resource(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = prometheus_export({("nobody", "nvidia_com_gpu"): [1], ("serving", "amd_com_gpu"): [1]})
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    lines = problems(capsys, path, "--stack", "prod")
    assert len(lines) == 2
    assert "data.result[0].metric.tenant: 'nobody' is no tenant with a quota" in lines[0]
    assert "data.result[1].metric.resource: 'amd_com_gpu' cannot be converted to physical GPUs" in lines[1]


def test_malformed_export_samples_are_problems_not_crashes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"tenant": "serving", "resource": "nvidia_com_gpu"}, "values": [[1, "x"], ["a", "1"], [120, "2"]]},
                {"metric": {"tenant": "serving", "resource": "nvidia_com_gpu"}, "values": "bad"},
                5,
            ],
        },
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    lines = problems(capsys, path, "--stack", "prod")
    assert [line.split(": ")[1] for line in lines] == ["data.result[0].values[0]", "data.result[0].values[1]", "data.result[1]", "data.result[2]"]
