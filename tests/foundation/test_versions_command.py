"""`gpu-platform versions`: every pin a stack runs, its end of standard support and the days left, on a given day."""

from __future__ import annotations

import json
from datetime import date

import pytest
import yaml

from gpu_platform.cli import main
from gpu_platform.versions import load_lockfile
from tests.conftest import stack_path, without_lines

K8S_END = load_lockfile().support["kubernetes"][load_lockfile().kubernetes.version].ends


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["versions", *argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_prod_lists_what_it_runs_with_days_left(capsys: pytest.CaptureFixture[str]) -> None:
    assert K8S_END is not None
    code, doc = run(capsys, "--stack", "prod", "--today", "2026-11-28")
    assert code == 0
    pins = {p["key"]: p for p in doc["pins"]}
    assert set(pins) == {"kubernetes.version", "eks.ami_release_version", "eks.ami_driver_branch"}
    assert pins["kubernetes.version"]["daysLeft"] == (K8S_END - date(2026, 11, 28)).days
    assert all(p["status"] == "ok" and p["source"].startswith("https://") for p in pins.values())


@pytest.mark.parametrize(("days", "status", "code"), [(90, "ok", 0), (89, "advisory", 0), (30, "advisory", 0), (29, "mandatory", 1), (-1, "past", 1)])
def test_the_windows_are_the_gates(days: int, status: str, code: int, capsys: pytest.CaptureFixture[str]) -> None:
    """The same windows as versions-support-ending (advisory) and versions-in-support (mandatory): exit 1 where check fails."""
    assert K8S_END is not None
    today = date.fromordinal(K8S_END.toordinal() - days)
    got, doc = run(capsys, "--stack", "prod", "--today", today.isoformat())
    k8s = next(p for p in doc["pins"] if p["key"] == "kubernetes.version")
    assert (k8s["daysLeft"], k8s["status"], got) == (days, status, code)


def test_a_stacks_threshold_moves_its_window(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(stack_path("prod").read_text())
    doc["config"].setdefault("gpu-platform:policy", {}).setdefault("thresholds", {})["min-support-days"] = 60
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert K8S_END is not None
    code, out = run(capsys, "--config", str(path), "--today", date.fromordinal(K8S_END.toordinal() - 59).isoformat())
    assert code == 1 and next(p for p in out["pins"] if p["key"] == "kubernetes.version")["status"] == "mandatory"


def test_on_prem_shows_the_node_stack_and_judges_its_driver_branch(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(capsys, "--stack", "onprem", "--today", "2026-11-28")
    pins = {p["key"]: p for p in doc["pins"]}
    assert code == 0 and "kubernetes.version" not in pins  # EKS's calendar is not an on-prem cluster's
    assert pins["nvidia_driver.branch"]["judgedByGate"] and not pins["dcgm.version"]["judgedByGate"]
    assert pins["container_toolkit.version"]["status"] == "no-date" and pins["container_toolkit.version"]["policy"]


def test_a_bad_day_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", "--stack", "prod", "--today", "2027-13-01"]) == 2
    err = without_lines(capsys.readouterr().err)
    assert err.strip().endswith("--today: '2027-13-01' is not a date; allowed: YYYY-MM-DD, e.g. 2027-01-31")
    assert err.count("\n") == 1


def test_a_stack_that_lowers_the_rule_is_not_failed_by_versions(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by review: `versions` exited 1 where `check` passed, for a stack enforcing versions-in-support as advisory."""
    doc = yaml.safe_load(stack_path("prod").read_text())
    doc["config"].setdefault("gpu-platform:policy", {}).setdefault("enforcement", {})["versions-in-support"] = "advisory"
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert K8S_END is not None
    code, _ = run(capsys, "--config", str(path), "--today", date.fromordinal(K8S_END.toordinal() - 5).isoformat())
    assert code == 0
