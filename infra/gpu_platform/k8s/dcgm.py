"""The DCGM exporter's metric list: what the platform asks for, and how the exporter reads it.

dcgm-exporter reads `dcgm-metrics.csv` with Go's `encoding/csv` reader (`Comment = '#'`, every other
option at its default) and exits when the file does not parse (internal/pkg/counters/counter_config.go,
`ReadCSVFile` and `ExtractCounters`). `read_metrics_csv` repeats both steps, so the program, its tests
and the policy gate refuse a file the exporter would refuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

# (field, Prometheus type, help). The exporter's default list lacks ECC, retired pages, throttling
# and NVLink errors, which the platform's alerts need, so the operator gets this list instead.
# Help texts never contain a comma or a double quote: the exporter's CSV reader would split or refuse them.
DCGM_METRICS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors."),
    ("DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us)."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event (throttle) reasons as a bitmask."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active (works on MIG)."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
)

# internal/pkg/counters/variables.go `promMetricType`: the types ExtractCounters accepts.
PROMETHEUS_TYPES = frozenset({"gauge", "counter", "histogram", "summary", "label"})
COMMENT = "#"


def metrics_csv() -> str:
    """The `dcgm-metrics.csv` the GPU Operator mounts into the exporter."""
    return "\n".join(f"{field}, {kind}, {text}" for field, kind, text in DCGM_METRICS) + "\n"


class CsvError(ValueError):
    """What Go's csv.Reader returns instead of records (its `ParseError` text)."""


def go_csv_records(text: str, comment: str = COMMENT) -> list[list[str]]:
    """Records of `text` exactly as Go's `csv.NewReader` with `Comment` set and `ReadAll` return them.

    Go encoding/csv reader.go `readRecord`: lines starting with the comment character and empty lines
    are skipped; a field that starts with `"` is quoted (`""` is a quote, it may span lines, must be
    followed by a comma or the line end, and an open quote at end of file ends the field); a `"` anywhere else is a bare quote (LazyQuotes off); with
    FieldsPerRecord 0 the first record fixes the field count and every later record must match it.
    TrimLeadingSpace is off, so a leading space makes a following quote bare.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records: list[list[str]] = []
    expected: int | None = None
    i = 0
    while i < len(lines):
        line, start = lines[i], i + 1
        i += 1
        if line == "" or line.startswith(comment):
            continue
        fields: list[str] = []
        pos = 0
        while True:
            if not line[pos:].startswith('"'):
                end = line.find(",", pos)
                field = line[pos:] if end < 0 else line[pos:end]
                if '"' in field:
                    raise CsvError(f'record on line {start}: bare " in non-quoted field')
                fields.append(field)
                if end < 0:
                    break
                pos = end + 1
                continue
            value, pos = "", pos + 1
            while True:
                close = line.find('"', pos)
                if close < 0:  # the quoted field continues on the next line
                    if i >= len(lines):  # Go ends the field at end of file (reader.go: "Abrupt end of file")
                        value += line[pos:] + ("\n" if text.endswith("\n") else "")
                        pos = len(line)
                        break
                    value += line[pos:] + "\n"
                    line, pos = lines[i], 0
                    i += 1
                    continue
                value += line[pos:close]
                after = line[close + 1 : close + 2]
                if after == '"':
                    value += '"'
                    pos = close + 2
                    continue
                if after not in ("", ","):
                    raise CsvError(f'record on line {start}: extraneous or missing " in quoted-field')
                pos = close + 1
                break
            fields.append(value)
            if pos >= len(line):
                break
            pos += 1  # the comma
        if expected is None:
            expected = len(fields)
        elif len(fields) != expected:
            raise CsvError(f"record on line {start}: wrong number of fields ({len(fields)}, the first record has {expected})")
        records.append(fields)
    return records


@dataclass(frozen=True)
class Counter:
    """One metric the exporter will collect: DCGM field name, Prometheus type, help text."""

    field: str
    kind: str
    help: str


@cache
def known_fields() -> frozenset[str]:
    """Field names go-dcgm's `GetFieldID` resolves (current and legacy names), from package data."""
    data = yaml.safe_load(resources.files("gpu_platform").joinpath("data/dcgm_fields.yaml").read_text())
    return frozenset(data["fields"]) | frozenset(data["legacy_fields"])


def read_metrics_csv(text: str) -> list[Counter]:
    """The counters dcgm-exporter builds from this file, or CsvError with the reason it would exit.

    Mirrors counter_config.go `ReadCSVFile` (Go csv, `#` comments) then `ExtractCounters`: fields are
    trimmed of spaces, a record must have exactly 3 fields, the name must resolve to a DCGM field and
    the type must be one of `promMetricType`.
    """
    counters = []
    for n, raw in enumerate(go_csv_records(text)):
        record = [f.strip(" ") for f in raw]
        if len(record) != 3:
            raise CsvError(f"malformed CSV record {n} ({record}): expected 3 fields")
        name, kind, text_ = record
        if name not in known_fields():
            raise CsvError(f"record {n}: {name!r} is not a DCGM field the exporter knows")
        if kind not in PROMETHEUS_TYPES:
            raise CsvError(f"record {n}: Prometheus metric type {kind!r} unknown; allowed: {', '.join(sorted(PROMETHEUS_TYPES))}")
        counters.append(Counter(name, kind, text_))
    return counters
