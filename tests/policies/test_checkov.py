"""Peer check: checkov's Kubernetes framework finds nothing in any stack's rendered manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.cli import main
from gpu_platform_policies import checkov
from tests.conftest import STACKS, stack_path


def test_every_skip_has_a_reason() -> None:
    for skip in checkov.load_skips():
        assert skip.id.startswith("CKV_K8S_") and len(skip.reason) > 10


def test_checkov_passes_on_every_stacks_rendered_manifests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not checkov.CHECKOV.exists():
        pytest.fail(f"{checkov.CHECKOV} missing: run `make .venv-checkov` (make test does)")
    for name in STACKS:
        assert main(["render", "--config", str(stack_path(name)), "--out", str(tmp_path / name)]) == 0
    capsys.readouterr()
    assert any((tmp_path / name).rglob("*.yaml") for name in STACKS)
    report = checkov.run(tmp_path)
    failed = [f"{f['check_id']} {f['check_name']}: {f['file_path']} {f['resource']}" for f in report["failed"]]
    assert failed == [], "checkov failed checks (fix them, or skip with a reason in policies/checkov-skips.yaml):\n" + "\n".join(failed)
    assert report["passed"] > 0


def test_checkov_wiring_reports_a_bad_manifest(tmp_path: Path) -> None:
    """The gate above is not vacuous: the same call fails on a privileged pod."""
    if not checkov.CHECKOV.exists():
        pytest.fail(f"{checkov.CHECKOV} missing: run `make .venv-checkov` (make test does)")
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad, namespace: serving}\n"
        "spec:\n  containers:\n  - name: c\n    image: busybox:1.36\n    securityContext: {privileged: true}\n"
    )
    failed = {f["check_id"] for f in checkov.run(tmp_path)["failed"]}
    assert "CKV_K8S_16" in failed  # "Container should not be privileged"
