"""The DCGM exporter's metric file parses the way the pinned dcgm-exporter (4.4.1-4.6.0) reads it.

Upstream: NVIDIA/dcgm-exporter internal/pkg/counters/counter_config.go at tag 4.4.1-4.6.0: `ReadCSVFile`
(`csv.NewReader`, `Comment = '#'`, `ReadAll`) then `ExtractCounters` (trim spaces, exactly 3 fields,
`dcgm.GetFieldID`, `promMetricType`); the GPU Operator v26.7.0 mounts our ConfigMap's `dcgm-metrics.csv`
and points DCGM_EXPORTER_COLLECTORS at it (controllers/object_controls.go, MetricsConfigFileName).
The Go reader's behaviour is pinned by cases from golang/go src/encoding/csv/reader_test.go.
"""

from __future__ import annotations

import pytest

from gpu_platform.k8s.dcgm import DCGM_METRICS, CsvError, go_csv_records, known_fields, metrics_csv, read_metrics_csv
from gpu_platform.k8s.gpu_operator import DCGM_METRICS_CONFIGMAP, DCGM_METRICS_FILE
from tests.k8s.helpers import one


@pytest.mark.parametrize(
    ("text", "records"),
    [
        ("a,b,c\n", [["a", "b", "c"]]),  # Simple
        ("#1,2,3\na,b,c\n#comment", [["a", "b", "c"]]),  # Comment
        ('"two\nline","one line","three\nline\nfield"', [["two\nline", "one line", "three\nline\nfield"]]),  # MultiLine
        ('a,"b,c",d\n', [["a", "b,c", "d"]]),  # a quoted comma does not split
        ('a,"b""c",d\n', [["a", 'b"c', "d"]]),  # doubled quote
        ("a,b,c\n\nd,e,f\n\n", [["a", "b", "c"], ["d", "e", "f"]]),  # BlankLine
        ("a, b ,c\n", [["a", " b ", "c"]]),  # no TrimLeadingSpace: spaces stay in the field
        ('a,"b\n', [["a", "b\n"]]),  # an open quote at end of file ends the field (no LazyQuotes needed)
    ],
)
def test_go_reader_records(text: str, records: list[list[str]]) -> None:
    assert go_csv_records(text) == records


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("a,b,c\nd,e", "wrong number of fields"),  # BadFieldCount (ErrFieldCount)
        ("a,b,c\nd,e,f,g\n", "wrong number of fields"),  # BadFieldCount1
        ('a"b,c\n', 'bare "'),  # BadBareQuote (ErrBareQuote)
        ('a, "b",c\n', 'bare "'),  # a quote after a leading space is bare without TrimLeadingSpace
        ('"a"b,c\n', 'extraneous or missing "'),  # BadTrailingQuote (ErrQuote)
    ],
)
def test_go_reader_errors(text: str, error: str) -> None:
    with pytest.raises(CsvError, match=error):
        go_csv_records(text)


def test_the_rendered_metrics_file_is_what_the_exporter_accepts(stack: str) -> None:
    text = one(stack, "ConfigMap", DCGM_METRICS_CONFIGMAP, "gpu-operator")["data"][DCGM_METRICS_FILE]
    counters = read_metrics_csv(text)
    # Every field survives with the name, type and help the program meant (nothing merged or split).
    assert [(c.field, c.kind, c.help) for c in counters] == list(DCGM_METRICS)
    assert all(c.field in known_fields() for c in counters)


def test_a_help_text_with_a_comma_would_stop_the_exporter() -> None:
    """The defect this guards: one help text with a comma made a 4-field record and the exporter exit."""
    broken = metrics_csv().replace("reasons as a bitmask", "reasons, a bitmask")
    with pytest.raises(CsvError, match="wrong number of fields"):
        read_metrics_csv(broken)


def test_unknown_field_or_type_is_refused() -> None:
    with pytest.raises(CsvError, match="not a DCGM field"):
        read_metrics_csv("DCGM_FI_DEV_GPU_TEMPERATURE, gauge, Temperature.\n")
    with pytest.raises(CsvError, match="type 'gauges' unknown"):
        read_metrics_csv("DCGM_FI_DEV_GPU_TEMP, gauges, Temperature.\n")
    # Legacy names still resolve (go-dcgm GetFieldID falls back to legacyDCGMFields).
    assert read_metrics_csv("dcgm_gpu_temp, gauge, Temperature.\n")[0].field == "dcgm_gpu_temp"


def test_field_list_matches_the_exporters_own_defaults() -> None:
    """Types agree with dcgm-exporter's etc/default-counters.csv at the pinned tag for the fields both list."""
    upstream = {
        "DCGM_FI_DEV_SM_CLOCK": "gauge",
        "DCGM_FI_DEV_GPU_TEMP": "gauge",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter",
        "DCGM_FI_DEV_XID_ERRORS": "gauge",
        "DCGM_FI_DEV_FB_USED": "gauge",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "counter",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": "gauge",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
    }
    ours = {field: kind for field, kind, _ in DCGM_METRICS}
    assert {f: ours[f] for f in upstream} == upstream
