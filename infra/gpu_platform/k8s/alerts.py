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


def _workload_ns(expr: str) -> str:
    return f'label_replace({expr}, "namespace", "$1", "exported_namespace", "(.+)")'


def _tenant(expr: str) -> str:
    # Namespaces carry gpu-platform.io/tenant; kube-state-metrics exposes it when allow-listed.
    joined = f'{expr} * on (namespace) group_left (label_gpu_platform_io_tenant) kube_namespace_labels{{label_gpu_platform_io_tenant!=""}}'
    return f'label_replace({joined}, "tenant", "$1", "label_gpu_platform_io_tenant", "(.+)")'


def recording_rules() -> list[dict[str, str]]:
    """Per-namespace and per-tenant GPU allocation and utilisation."""
    running = 'max by (namespace, pod) (kube_pod_status_phase{phase="Running"} == 1)'
    requests = 'kube_pod_container_resource_requests{resource=~"nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"}'
    per_workload = _workload_ns('DCGM_FI_DEV_GPU_UTIL{exported_namespace!=""}')
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


def gpu_health_alerts(t: AlertThresholds) -> list[dict[str, Any]]:
    """Hardware health: XID, ECC, retired pages, temperature, memory, lost GPUs, throttling, NVLink."""
    on_gpu = "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}"
    return [
        _alert(
            "GpuXidError",
            "max by (Hostname, gpu, UUID) (DCGM_FI_DEV_XID_ERRORS) > 0",
            "0m",
            "critical",
            f"XID error on {on_gpu}",
            "Last XID error code {{ $value }}; check dmesg and drain the node if it repeats.",
        ),
        _alert(
            "GpuDoubleBitEccError",
            "max by (Hostname, gpu, UUID) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL) > 0",
            "0m",
            "critical",
            f"Uncorrectable (double-bit) ECC errors on {on_gpu}",
            "{{ $value }} double-bit ECC errors since the driver loaded; drain and reset the GPU.",
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
            "The node still reports its other GPUs; this one is gone (fallen off the bus or driver failure).",
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
        _alert(
            "SpotGpuNodeInterrupted",
            'kube_node_spec_unschedulable == 1 and on (node) kube_node_labels{label_gpu_platform_io_capacity_tier="spot"}',
            "0m",
            "info",
            "Spot GPU node {{ $labels.node }} is being reclaimed",
            "The node is cordoned for a Spot interruption or rebalance; its jobs will be evicted within minutes.",
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


def rule_groups(t: AlertThresholds) -> list[dict[str, Any]]:
    """All rule groups, in the shape of a PrometheusRule spec and a promtool rule file alike."""
    return [
        {"name": "gpu-platform.recording", "interval": "1m", "rules": recording_rules()},
        {"name": "gpu-platform.gpu-health", "rules": gpu_health_alerts(t)},
        {"name": "gpu-platform.usage", "rules": platform_alerts(t)},
    ]
