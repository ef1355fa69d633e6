"""Controllers' own acceptance logic: what the DCGM exporter, Kueue, Volcano and Helm do with the values we hand them.

Each rule repeats the check the consuming component runs (cited per rule), so the gate fails where the
component would refuse the object or silently ignore a setting.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from gpu_platform.k8s.admission import volcano_queue_errors
from gpu_platform.k8s.dcgm import CsvError, read_metrics_csv
from gpu_platform.versions import OCI
from gpu_platform_policies.model import Context, Finding, PlanView, Resource, rule
from gpu_platform_policies.view import HELM_RELEASE, get, helm_releases, object_name, objects

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


def kueue_manager_config(plan: PlanView) -> dict[str, Any] | None:
    """Kueue's controller configuration as the chart hands it to the manager (None without a Kueue release)."""
    releases = helm_releases(plan, "kueue")
    if not releases:
        return None
    text = get(releases[0].inputs, "values", "managerConfig", "controllerManagerConfigYaml")
    try:
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None
    return config if isinstance(config, dict) else None


@rule(
    "kueue-preemption-enforced",
    "ClusterQueues set no borrowWithinCohort while Kueue fair sharing is on (Kueue ignores it there).",
    "mandatory",
    "stack",
    category="controllers",
)
def kueue_preemption_enforced(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Kueue's getTargets runs fairPreemptions when `fairSharing` is configured, which never reads borrowWithinCohort."""
    config = kueue_manager_config(plan)
    if config is None or config.get("fairSharing") is None:
        return
    for r in objects(plan, "ClusterQueue", "kueue.x-k8s.io"):
        borrow = get(r.inputs, "spec", "preemption", "borrowWithinCohort")
        if isinstance(borrow, dict) and borrow.get("policy", "Never") != "Never":
            yield Finding(
                r.name,
                f"ClusterQueue {object_name(r)} sets borrowWithinCohort {borrow.get('policy')!r}, which Kueue ignores under fair sharing; "
                "allowed: no borrowWithinCohort, or Kueue without fairSharing",
            )
