"""Controllers' own acceptance logic: what the DCGM exporter, Kueue, Volcano and Helm do with the values we hand them.

Each rule repeats the check the consuming component runs (cited per rule), so the gate fails where the
component would refuse the object or silently ignore a setting.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_platform.k8s.admission import volcano_queue_errors
from gpu_platform.k8s.dcgm import CsvError, read_metrics_csv
from gpu_platform.versions import OCI
from gpu_platform_policies.model import Context, Resource, rule
from gpu_platform_policies.view import HELM_RELEASE, get

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DCGM_METRICS_FILE = "dcgm-metrics.csv"
VOLCANO_QUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"


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


@rule(
    "helm-chart-locatable",
    "Helm releases name OCI charts as chart: oci://... with no repositoryOpts, and classic charts with an https repository.",
    "mandatory",
    "resource",
    category="controllers",
    types=(HELM_RELEASE,),
)
def helm_chart_locatable(r: Resource, ctx: Context) -> Iterator[str]:
    """The Pulumi provider (helm_release.go resolveChartName/locateChart) fetches index.yaml from any repo URL: an OCI registry there fails at up."""
    chart = str(r.inputs.get("chart", ""))
    repo = get(r.inputs, "repositoryOpts", "repo")
    if chart.startswith(OCI) and repo:
        yield f"chart {chart} is an OCI reference and also names repositoryOpts.repo {repo!r}; allowed: the OCI reference alone"
    elif isinstance(repo, str) and repo.startswith(OCI):
        yield (
            f"repositoryOpts.repo {repo!r} is an OCI registry, which the provider reads as a classic index.yaml repository; "
            f"allowed: chart: {repo.rstrip('/')}/{chart} with no repositoryOpts"
        )


@rule(
    "volcano-queue-admitted",
    "Volcano Queues pass Volcano's queue admission webhook: valid quantities, guarantee <= deserved <= capability.",
    "mandatory",
    "resource",
    category="controllers",
    types=(VOLCANO_QUEUE,),
)
def volcano_queue_admitted(r: Resource, ctx: Context) -> Iterator[str]:
    """The webhook (validate_queue.go validateQueue) refuses the Queue at `pulumi up`, after other resources changed."""
    for error in volcano_queue_errors(dict(r.inputs)):
        yield f"Volcano's queue webhook refuses it: {error}"
