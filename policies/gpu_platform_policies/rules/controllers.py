"""Controllers' own acceptance logic: what the DCGM exporter, Kueue, Volcano and Helm do with the values we hand them.

Each rule repeats the check the consuming component runs (cited per rule), so the gate fails where the
component would refuse the object or silently ignore a setting.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_platform.k8s.dcgm import CsvError, read_metrics_csv
from gpu_platform_policies.model import Context, Resource, rule

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DCGM_METRICS_FILE = "dcgm-metrics.csv"


@rule(
    "dcgm-metrics-parse",
    "The DCGM exporter's metrics CSV parses as the exporter reads it: Go csv, 3 fields, known DCGM fields and Prometheus types.",
    "mandatory",
    "resource",
    category="controllers",
    types=(CONFIG_MAP,),
)
def dcgm_metrics_parse(r: Resource, ctx: Context) -> Iterator[str]:
    """dcgm-exporter exits on a file it cannot read (counter_config.go ReadCSVFile/ExtractCounters), and every GPU alert goes dark."""
    text = (r.inputs.get("data") or {}).get(DCGM_METRICS_FILE)
    if not isinstance(text, str):
        return
    try:
        read_metrics_csv(text)
    except CsvError as exc:
        yield f"data.{DCGM_METRICS_FILE}: dcgm-exporter would exit: {exc}"
