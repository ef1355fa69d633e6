"""The latest figure of every benchmark, kept in benchmarks/results.yaml, and its table for docs/benchmarks.md.

A benchmark run with `--record` replaces its own entry (`record`); `python -m benchmarks.results` prints the
table that `scripts/refresh-docs.sh` writes into docs/benchmarks.md, so the page states only what the
results file holds, and only the latest run of each benchmark.
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

import yaml

RESULTS = Path(__file__).resolve().parent / "results.yaml"
FIELDS = ("benchmark", "script", "measured", "conditions", "figure")


def load(path: Path = RESULTS) -> dict[str, dict[str, str]]:
    """Every benchmark's latest entry, by key, in file order."""
    entries = yaml.safe_load(path.read_text()) or {}
    for key, entry in entries.items():
        missing = [name for name in FIELDS if not entry.get(name)]
        if missing:
            raise SystemExit(f"{path}: {key}: missing {', '.join(missing)}; every entry has {', '.join(FIELDS)}")
    return entries


def record(key: str, benchmark: str, figure: str, conditions: str | None = None, path: Path = RESULTS) -> None:
    """Replace one benchmark's entry with this run's figure (today's date, the machine's load unless told)."""
    entries = yaml.safe_load(path.read_text()) if path.exists() else {}
    load1, _, _ = os.getloadavg()
    entries[key] = {
        "benchmark": benchmark,
        "script": f"benchmarks/{Path(sys.argv[0]).name}",
        "measured": datetime.date.today().isoformat(),
        "conditions": conditions or f"{os.cpu_count()} cores, load average {load1:.1f}",
        "figure": figure,
    }
    save(entries, path)


def save(entries: dict[str, dict[str, str]], path: Path = RESULTS) -> None:
    """Write the entries under the file's own header comment, folded to the repository's line length."""
    header = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#")) if path.exists() else ""
    path.write_text(header + yaml.safe_dump(entries, sort_keys=False, width=120, allow_unicode=True))


def markdown(entries: dict[str, dict[str, str]]) -> str:
    """The table of docs/benchmarks.md."""
    rows = ["| benchmark | figure | measured | script |", "|---|---|---|---|"]
    for entry in entries.values():
        cells = (entry["benchmark"], entry["figure"], f"{entry['measured']}, {entry['conditions']}", f"`{entry['script']}`")
        rows.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown(load()))
