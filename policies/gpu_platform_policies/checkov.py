"""Peer check: checkov's Kubernetes framework over rendered manifests, with the one skip list."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SKIPS_FILE = Path(__file__).resolve().parents[1] / "checkov-skips.yaml"
CHECKOV = Path(__file__).resolve().parents[2] / ".venv-checkov" / "bin" / "checkov"


@dataclass(frozen=True)
class Skip:
    """One skipped checkov check and why it does not apply."""

    id: str
    reason: str


def load_skips(path: Path = SKIPS_FILE) -> list[Skip]:
    """The skip list; every entry must give an id and a non-empty reason."""
    doc = yaml.safe_load(path.read_text()) or {}
    skips = [Skip(str(s["id"]), str(s.get("reason", "")).strip()) for s in doc.get("skips") or []]
    for s in skips:
        if not s.id.startswith("CKV") or not s.reason:
            raise ValueError(f"{path}: skips: {s.id!r} needs a CKV id and a reason")
    return skips


def command(directory: Path, checkov: Path = CHECKOV, skips: list[Skip] | None = None) -> list[str]:
    """The checkov command line (offline: --skip-download) for one directory of manifests."""
    argv = [str(checkov), "--framework", "kubernetes", "--skip-download", "-d", str(directory), "--compact", "--quiet", "-o", "json"]
    ids = [s.id for s in (load_skips() if skips is None else skips)]
    if ids:
        argv += ["--skip-check", ",".join(ids)]
    return argv


def run(directory: Path, checkov: Path = CHECKOV) -> dict[str, Any]:
    """Checkov's JSON summary and failed checks for a directory (one report, even when it prints a list)."""
    proc = subprocess.run(command(directory, checkov), capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"checkov exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    reports = doc if isinstance(doc, list) else [doc]
    failed = [f for r in reports for f in (r.get("results") or {}).get("failed_checks", [])]
    passed = sum(int((r.get("summary") or {}).get("passed", 0)) for r in reports)
    return {"passed": passed, "failed": failed}
