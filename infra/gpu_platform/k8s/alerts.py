"""GPU alert and recording rules (Prometheus rule groups), thresholds from `spec.monitoring.alerts`.

Metric sources: DCGM exporter (scraped through the platform's ServiceMonitor; workload labels arrive
as `exported_namespace`/`exported_pod` because honorLabels is off), kube-state-metrics, and Kueue.
Every alert has promtool test cases in tests/promtool/ (one firing and one silent case at least).
"""

from __future__ import annotations

from typing import Any

from gpu_platform.spec.models import AlertThresholds

DCGM_JOB = "nvidia-dcgm-exporter"
GPU = "Hostname, gpu, UUID"
# Recording rules: the basis of chargeback (per-namespace and per-tenant allocation and utilisation).
ALLOCATED = "namespace_resource:gpu_platform_gpu_requests:sum"
TENANT_ALLOCATED = "tenant_resource:gpu_platform_gpu_requests:sum"
UTILISATION = "namespace:gpu_platform_gpu_utilisation:avg"
TENANT_UTILISATION = "tenant:gpu_platform_gpu_utilisation:avg"
GPUS_IN_USE = "namespace:gpu_platform_gpus_in_use:count"
CRITICAL_ALERTS = ("GpuXidError", "GpuDoubleBitEccError", "GpuLost")
# One series per GPU, MIG instance (GPU_I_ID) and workload; the exporter's own target labels are dropped.
WORKLOAD = "Hostname, gpu, UUID, GPU_I_ID, exported_namespace, exported_pod, exported_container"
XID_WINDOW = "10m"


def _workload_ns(expr: str) -> str:
    return f'label_replace({expr}, "namespace", "$1", "exported_namespace", "(.+)")'


def _tenant(expr: str) -> str:
    # Namespaces carry gpu-platform.io/tenant; kube-state-metrics exposes it when allow-listed.
    joined = f'{expr} * on (namespace) group_left (label_gpu_platform_io_tenant) kube_namespace_labels{{label_gpu_platform_io_tenant!=""}}'
    return f'label_replace({joined}, "tenant", "$1", "label_gpu_platform_io_tenant", "(.+)")'


def _utilisation_percent() -> str:
    """Busy percentage per workload GPU or MIG instance.

    DCGM reports DCGM_FI_DEV_GPU_UTIL per physical GPU only, never for a MIG instance, so MIG tenants
    would have no utilisation at all. DCGM_FI_PROF_GR_ENGINE_ACTIVE (a 0..1 ratio) is reported per GPU
    and per MIG instance; GPU_UTIL is the fallback where profiling metrics are missing (GPUs without
    profiling support, or profiling paused by a profiler). Both sides are reduced to the same label set
    first so that `or` drops GPU_UTIL exactly where the profiling metric covers the same GPU and workload.
    """
    prof = f'max by ({WORKLOAD}) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{{exported_namespace!=""}}) * 100'
    util = f'max by ({WORKLOAD}) (DCGM_FI_DEV_GPU_UTIL{{exported_namespace!=""}})'
    return f"({prof} or {util})"


def recording_rules() -> list[dict[str, str]]:
    """Per-namespace and per-tenant GPU allocation and utilisation."""
    running = 'max by (namespace, pod) (kube_pod_status_phase{phase="Running"} == 1)'
    requests = 'kube_pod_container_resource_requests{resource=~"nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"}'
    per_workload = _workload_ns(_utilisation_percent())
    return [
        {"record": ALLOCATED, "expr": f"sum by (namespace, resource) ({requests} * on (namespace, pod) group_left () {running})"},
        {"record": TENANT_ALLOCATED, "expr": f"sum by (tenant, resource) ({_tenant(ALLOCATED)})"},
        {"record": UTILISATION, "expr": f"avg by (namespace) ({per_workload}) / 100"},
        {"record": TENANT_UTILISATION, "expr": f"avg by (tenant) ({_tenant(UTILISATION)})"},
        {"record": GPUS_IN_USE, "expr": f"count by (namespace) ({per_workload})"},
    ]


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_ != "0m":
        rule["for"] = for_
    rule["labels"] = {"severity": severity, "team": "gpu-platform"}
    rule["annotations"] = {"summary": summary, "description": description}
    return rule


# What happens without a person, and where the rest is written.
FENCED = (
    "A fatal XID or a lost GPU fences the node by itself (on EKS node repair replaces it; on bare metal gpu_health_check "
    "cordons and taints it, gpu_node_repair.yml returns it); see docs/deploying.md, When a GPU fails."
)


def gpu_health_alerts(t: AlertThresholds) -> list[dict[str, Any]]:
    """Hardware health: XID, ECC, retired pages, temperature, memory, lost GPUs, throttling, NVLink."""
    on_gpu = "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}"
    return [
        # DCGM_FI_DEV_XID_ERRORS is a gauge holding the last XID code, non-zero forever after the first
        # XID, so alert on a new code: the gauge changed within the window, or a GPU with no sample one
        # window ago (new node, or first report) reports a non-zero code. An exporter restart keeps the
        # GPU's series (per Hostname/gpu/UUID), so an old code is not reported again. The alert's value is
        # the XID code. A repeat of the same code does not change the gauge and cannot be seen here.
        _alert(
            "GpuXidError",
            f"max by ({GPU}) (DCGM_FI_DEV_XID_ERRORS) > 0"
            f" and on ({GPU}) (max by ({GPU}) (changes(DCGM_FI_DEV_XID_ERRORS[{XID_WINDOW}])) > 0"
            f" or (max by ({GPU}) (DCGM_FI_DEV_XID_ERRORS) unless max by ({GPU}) (DCGM_FI_DEV_XID_ERRORS offset {XID_WINDOW})))",
            "0m",
            "critical",
            f"XID error on {on_gpu}",
            f"XID {{{{ $value }}}} reported in the last {XID_WINDOW}. {FENCED}",
        ),
        _alert(
            "GpuDoubleBitEccError",
            "max by (Hostname, gpu, UUID) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL) > 0",
            "0m",
            "critical",
            f"Uncorrectable (double-bit) ECC errors on {on_gpu}",
            "{{ $value }} double-bit ECC errors since the driver loaded (XID 48). " + FENCED,
        ),
        _alert(
            "GpuRetiredPagesGrowing",
            f"sum by ({GPU}) (increase(DCGM_FI_DEV_RETIRED_DBE[1h]) + increase(DCGM_FI_DEV_RETIRED_SBE[1h])) > 0"
            f" or sum by ({GPU}) (increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h])) > 0",
            "0m",
            "warning",
            f"Memory pages retired or rows remapped on {on_gpu}",
            "Retired pages / remapped rows grew in the last hour; plan an RMA if it continues.",
        ),
        _alert(
            "GpuTemperatureHigh",
            f"max by ({GPU}) (DCGM_FI_DEV_GPU_TEMP) > {t.gpu_temp_celsius}",
            "5m",
            "warning",
            f"{on_gpu} above {t.gpu_temp_celsius} C",
            "GPU temperature is {{ $value }} C.",
        ),
        _alert(
            "GpuFramebufferNearlyFull",
            f"max by ({GPU}) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) * 100 > {t.framebuffer_percent}",
            "15m",
            "warning",
            f"{on_gpu} framebuffer above {t.framebuffer_percent} %",
            "Framebuffer use is {{ $value | humanize }} %; the next allocation may fail with OOM.",
        ),
        # A GPU that reported within the hour and is gone now, while its node still reports other GPUs:
        # it fell off the bus. A whole node leaving (scale-down, Spot) is not a lost GPU.
        _alert(
            "GpuLost",
            f"(max by ({GPU}) (max_over_time(DCGM_FI_DEV_GPU_TEMP[1h])) unless max by ({GPU}) (DCGM_FI_DEV_GPU_TEMP))"
            " and on (Hostname) max by (Hostname) (DCGM_FI_DEV_GPU_TEMP)",
            "5m",
            "critical",
            f"{on_gpu} stopped reporting",
            "The node still reports its other GPUs; this one is gone (fallen off the bus or driver failure). " + FENCED,
        ),
        _alert(
            "DcgmExporterDown",
            f'up{{job="{DCGM_JOB}"}} == 0',
            "10m",
            "warning",
            "DCGM exporter on {{ $labels.instance }} is down",
            "No GPU metrics from this node: health alerts cannot fire for it.",
        ),
        _alert(
            "GpuClockThrottled",
            f"max by ({GPU}) (rate(DCGM_FI_DEV_POWER_VIOLATION[10m]) + rate(DCGM_FI_DEV_THERMAL_VIOLATION[10m])) / 1e6 > 0.2",
            "15m",
            "warning",
            f"{on_gpu} is power or thermal throttled",
            "Clocks were throttled {{ $value | humanizePercentage }} of the time.",
        ),
        _alert(
            "GpuNvlinkErrors",
            f"sum by ({GPU}) (increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[10m])"
            " + increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL[10m])) > 0",
            "0m",
            "warning",
            f"NVLink errors on {on_gpu}",
            "NVLink replay/recovery errors in the last 10 minutes; multi-GPU jobs on this node will slow down or fail.",
        ),
    ]


# Taints the AWS node termination handler puts on a node it drains for a Spot interruption or rebalance.
SPOT_INTERRUPTION_TAINTS = "aws-node-termination-handler/(spot-itn|rebalance-recommendation)"
# Taints and node labels of planned drains, which are not Spot interruptions.
PLANNED_DRAIN_TAINTS = "ToBeDeletedByClusterAutoscaler"
DRIVER_UPGRADE_LABEL = "label_nvidia_com_gpu_driver_upgrade_state"


def _cordoned_unplanned() -> str:
    cordoned = "max by (node) (kube_node_spec_unschedulable == 1)"
    planned_taint = f'kube_node_spec_taint{{key=~"{PLANNED_DRAIN_TAINTS}"}}'
    upgrading = f'kube_node_labels{{{DRIVER_UPGRADE_LABEL}!=""}}'
    return f"{cordoned} unless on (node) {planned_taint} unless on (node) {upgrading}"


def platform_alerts(t: AlertThresholds) -> list[dict[str, Any]]:
    """Platform usage: idle allocated GPUs, Spot interruptions, Kueue starvation, tenants at quota."""
    return [
        _alert(
            "GpuAllocatedIdle",
            f"{UTILISATION} * 100 < {t.idle_util_percent}",
            f"{t.idle_minutes}m",
            "warning",
            "GPUs in {{ $labels.namespace }} are allocated but idle",
            f"Average utilisation {{{{ $value | humanize }}}} % for {t.idle_minutes} minutes (threshold {t.idle_util_percent} %); release them.",
        ),
        # The signal: the AWS node termination handler's interruption/rebalance taints where it runs
        # (interruption-specific), else a cordon (EKS managed node groups cordon a Spot node on a rebalance
        # recommendation) that is not a planned one: cluster-autoscaler scale-down (its
        # ToBeDeletedByClusterAutoscaler taint) or a GPU Operator driver upgrade (node label
        # nvidia.com/gpu-driver-upgrade-state, seen only where kube-state-metrics allow-lists it).
        # kube_node_spec_taint is a default kube-state-metrics metric. A manual cordon still fires.
        _alert(
            "SpotGpuNodeInterrupted",
            f'(({_cordoned_unplanned()}) or max by (node) (kube_node_spec_taint{{key=~"{SPOT_INTERRUPTION_TAINTS}"}}))'
            ' and on (node) kube_node_labels{label_gpu_platform_io_capacity_tier="spot"}',
            "0m",
            "info",
            "Spot GPU node {{ $labels.node }} is being reclaimed",
            "The node is tainted or cordoned for a Spot interruption or rebalance (not a planned scale-down or"
            " driver upgrade); its jobs will be evicted within minutes.",
        ),
        _alert(
            "KueueWorkloadsPendingTooLong",
            f"sum by (cluster_queue) (kueue_pending_workloads) > 0"
            f" unless on (cluster_queue) sum by (cluster_queue) (increase(kueue_admitted_workloads_total[{t.pending_minutes}m])) > 0",
            f"{t.pending_minutes}m",
            "warning",
            "ClusterQueue {{ $labels.cluster_queue }} admits nothing",
            f"Workloads have been pending with no admission for {t.pending_minutes} minutes.",
        ),
        _alert(
            "TenantAtGpuQuota",
            "max by (cluster_queue, flavor, resource) (kueue_cluster_queue_resource_usage"
            " / on (cluster_queue, flavor, resource) (kueue_cluster_queue_nominal_quota > 0)) >= 1",
            "30m",
            "info",
            "Tenant {{ $labels.cluster_queue }} uses all its {{ $labels.resource }} quota on {{ $labels.flavor }}",
            "Further work waits or borrows from the cohort.",
        ),
    ]


# kube-state-metrics' custom-resource metric of each MultiKueueCluster's conditions (monitoring.multikueue_state_metrics):
# `kube_customresource_` (the default metricNamePrefix) + the metric's name, 1 for status True and 0 for False.
MULTIKUEUE_CLUSTER_METRIC = "kube_customresource_multikueue_cluster_condition"


def multikueue_alerts() -> list[dict[str, Any]]:
    """A MultiKueue manager: a worker the manager cannot reach (its MultiKueueCluster's Active condition False).

    Kueue (the lockfile's release) multikueuecluster.go sets Active False with reasons BadKubeConfig, InsecureKubeConfig or
    ClientConnectionFailed; workloads are then not dispatched there, and those already there are requeued after
    `workerLostTimeout` (15 minutes by default).
    """
    return [
        _alert(
            "MultiKueueWorkerInactive",
            f'{MULTIKUEUE_CLUSTER_METRIC}{{condition="Active"}} == 0',
            "5m",
            "critical",
            "MultiKueue worker {{ $labels.cluster }} is not connected",
            "The manager cannot reach the worker's API (its MultiKueueCluster's Active condition is False): no workload is"
            " dispatched there, and its running workloads are requeued after the worker-lost timeout.",
        )
    ]


def rule_groups(t: AlertThresholds, multikueue: bool = False) -> list[dict[str, Any]]:
    """All rule groups, in the shape of a PrometheusRule spec and a promtool rule file alike (`multikueue`: a manager's)."""
    groups = [
        {"name": "gpu-platform.recording", "interval": "1m", "rules": recording_rules()},
        {"name": "gpu-platform.gpu-health", "rules": gpu_health_alerts(t)},
        {"name": "gpu-platform.usage", "rules": platform_alerts(t)},
    ]
    if multikueue:
        groups.append({"name": "gpu-platform.multikueue", "rules": multikueue_alerts()})
    return groups
