"""The rendered alert and recording rules pass `promtool check rules` and the unit tests beside this file.

promtool comes from Debian's `prometheus` package, which `make test` installs; without it these tests
fail (not skip), saying how to install it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_platform.commands.render import RULES_FILE
from gpu_platform.k8s.alerts import CRITICAL_ALERTS
from gpu_platform.k8s.dcgm import DCGM_METRICS
from tests.conftest import STACKS
from tests.k8s.helpers import rendered

HERE = Path(__file__).parent
TEST_FILE = HERE / "gpu-platform.test.yaml"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool not found: apt-get install -y --no-install-recommends prometheus (make test does this)")
    return path


def _rules(stack: str) -> dict:
    return rendered(stack)[RULES_FILE]


@pytest.mark.parametrize("stack", STACKS)
def test_promtool_check_rules(stack: str, tmp_path: Path) -> None:
    rules = tmp_path / "gpu-platform-rules.yaml"
    rules.write_text(yaml.safe_dump(_rules(stack), sort_keys=False))
    done = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_unit_tests_fire_and_stay_silent(tmp_path: Path) -> None:
    (tmp_path / "gpu-platform-rules.yaml").write_text(yaml.safe_dump(_rules("prod"), sort_keys=False))
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    done = subprocess.run([promtool(), "test", "rules", TEST_FILE.name], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    tests = yaml.safe_load(TEST_FILE.read_text())["tests"]
    alerts = [r["alert"] for g in _rules("prod")["groups"] for r in g["rules"] if "alert" in r]
    for alert in alerts:
        cases = [c for t in tests for c in t.get("alert_rule_test", []) if c["alertname"] == alert]
        series = [s["series"] for t in tests if any(c["alertname"] == alert for c in t.get("alert_rule_test", [])) for s in t["input_series"]]
        fired = {str(a["exp_labels"]) for c in cases for a in c["exp_alerts"]}
        assert fired, f"{alert}: no case where it fires"
        # Silent: an empty expectation, or input series for more GPUs/queues than the alerts expected.
        assert any(not c["exp_alerts"] for c in cases) or len(series) > len(fired), f"{alert}: no case where it stays silent"


def test_critical_alerts_and_thresholds_come_from_the_spec() -> None:
    rules = {r["alert"]: r for g in _rules("prod")["groups"] for r in g["rules"] if "alert" in r}
    for name in CRITICAL_ALERTS:
        assert rules[name]["labels"]["severity"] == "critical"
    assert rules["GpuTemperatureHigh"]["expr"].endswith("> 83")
    assert rules["GpuAllocatedIdle"]["for"] == "30m"


def test_every_dcgm_field_the_rules_use_is_exported() -> None:
    exported = {field for field, _, _ in DCGM_METRICS}
    for stack in STACKS:
        text = yaml.safe_dump(_rules(stack))
        used = set(re.findall(r"DCGM_FI_[A-Z_]+", text))
        assert used, "rules use DCGM metrics"
        assert used <= exported, f"not in the exporter's metric list: {used - exported}"
