"""GPU sharing per pool: device-plugin configs (whole, time-slicing, MPS, MIG) and mig-parted configs.

A node selects its device-plugin config by its `nvidia.com/device-plugin.config` label and its MIG
layout by `nvidia.com/mig.config`; both labels and the resource names a pool offers come from
`gpu_platform.pools`, so the configs written here, the node labels and the quotas always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from gpu_platform.catalog import Catalog
from gpu_platform.k8s.objects import GPU_OPERATOR_NAMESPACE, Manifest, metadata
from gpu_platform.pools import GPU_RESOURCE, gpu_of, sharing_config_name
from gpu_platform.spec.models import NodePool, PlatformSpec

SHARING_CONFIGMAP = "device-plugin-config"
MIG_CONFIGMAP = "mig-parted-config"
DEFAULT_CONFIG = "default"
MIG_DISABLED = "all-disabled"


# The GPU Operator's ClusterPolicy `mig.strategy`, when set, becomes the MIG_STRATEGY environment
# variable of the device plugin, GFD and MPS daemon (gpu-operator controllers/object_controls.go,
# applyMIGConfiguration), and an environment variable overrides the per-node config file's
# `flags.migStrategy` (k8s-device-plugin api/config/v1/config.go NewConfig -> UpdateFromCLIFlags). The
# chart only renders the field when the value is non-empty, so "" leaves each node's config in charge.
OPERATOR_MIG_STRATEGY = ""


def mig_strategy(pool: NodePool | None) -> str:
    """The MIG strategy of the config a pool selects: `mixed` for MIG-sliced pools, `single` otherwise.

    Per node, not per cluster: the device plugin refuses MPS under `mixed` (k8s-device-plugin
    cmd/nvidia-device-plugin/main.go validateFlags), so an MPS pool and a MIG pool need different values.
    `single` on a GPU with MIG off advertises whole GPUs, like `none`.
    """
    return "mixed" if pool is not None and pool.sharing.mode == "mig" else "single"


def device_plugin_config(pool: NodePool | None) -> dict[str, Any]:
    """The device-plugin config a pool selects (None: the default, whole GPUs).

    Shared GPUs are renamed to `nvidia.com/gpu.shared` (renameByDefault) so a pod can never mistake a
    slice for a whole GPU, and a request for more than one slice fails (failRequestsGreaterThanOne):
    two time-slices or MPS shares of one GPU are not twice the GPU.
    """
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": mig_strategy(pool), "failOnInitError": True}}
    if pool is not None and pool.sharing.mode in ("time-slicing", "mps"):
        key = "timeSlicing" if pool.sharing.mode == "time-slicing" else "mps"
        config["sharing"] = {
            key: {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": GPU_RESOURCE, "replicas": pool.sharing.replicas}],
            }
        }
    return config


# deployments/gpu-operator/values.yaml `mig.strategy` when the release does not set it.
CHART_MIG_STRATEGY = "single"
MIG_STRATEGIES = ("none", "single", "mixed")


def effective_mig_strategy(config: Mapping[str, Any], operator_values: Mapping[str, Any]) -> str:
    """The MIG strategy the device plugin runs with on a node selecting `config`, under these operator values.

    A non-empty ClusterPolicy `mig.strategy` (the chart's value, `single` when unset) is an environment
    variable and wins over the file (see OPERATOR_MIG_STRATEGY); an empty one leaves the file's flag.
    """
    mig = operator_values.get("mig")
    operator = mig.get("strategy", CHART_MIG_STRATEGY) if isinstance(mig, Mapping) else CHART_MIG_STRATEGY
    if operator:
        return str(operator)
    flags = config.get("flags")
    return str(flags.get("migStrategy", "none")) if isinstance(flags, Mapping) and flags.get("migStrategy") else "none"


def device_plugin_refusal(config: Mapping[str, Any], operator_values: Mapping[str, Any]) -> str | None:
    """Why the device plugin would refuse to start on a node selecting `config`, or None.

    k8s-device-plugin cmd/nvidia-device-plugin/main.go validateFlags: MPS with `--mig-strategy=mixed`
    is refused, and so is a strategy other than none, single or mixed. A refused plugin advertises
    no GPUs at all on that node.
    """
    strategy = effective_mig_strategy(config, operator_values)
    sharing = config.get("sharing")
    if isinstance(sharing, Mapping) and sharing.get("mps") and strategy == "mixed":
        return "using --mig-strategy=mixed is not supported with MPS"
    if strategy not in MIG_STRATEGIES:
        return f"unknown MIG strategy: {strategy}"
    return None


def device_plugin_configs(spec: PlatformSpec) -> dict[str, dict[str, Any]]:
    """Every device-plugin config the stack's pools select, by config name (always with `default`)."""
    configs = {DEFAULT_CONFIG: device_plugin_config(None)}
    for pool in spec.node_pools:
        configs.setdefault(sharing_config_name(pool), device_plugin_config(pool))
    return dict(sorted(configs.items()))


def sharing_configmap(spec: PlatformSpec) -> Manifest:
    """The ConfigMap the device plugin and GFD read: one YAML document per config name."""
    data = {name: yaml.safe_dump(cfg, sort_keys=False) for name, cfg in device_plugin_configs(spec).items()}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(SHARING_CONFIGMAP, GPU_OPERATOR_NAMESPACE), "data": data}


def mig_parted_configs(spec: PlatformSpec, catalog: Catalog) -> dict[str, list[dict[str, Any]]]:
    """The mig-parted `mig-configs` the pools use: only their layouts, per GPU model (device-filter)."""
    configs: dict[str, list[dict[str, Any]]] = {}
    mig_capable = False
    for pool in spec.node_pools:
        gpu = gpu_of(pool, catalog)
        mig_capable = mig_capable or gpu.supports_mig
        name = pool.sharing.mig_config
        if pool.sharing.mode != "mig" or name is None:
            continue
        entry = {
            "device-filter": [gpu.pci_device_id],
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": dict(gpu.mig_configs[name]),
        }
        entries = configs.setdefault(name, [])
        if entry not in entries:
            entries.append(entry)
    if mig_capable:
        # Non-sliced MIG-capable pools are labelled all-disabled (gpu_platform.pools.node_labels).
        configs[MIG_DISABLED] = [{"devices": "all", "mig-enabled": False}]
    return dict(sorted(configs.items()))


def mig_configmap(spec: PlatformSpec, catalog: Catalog) -> Manifest | None:
    """The mig-manager ConfigMap (`config.yaml`), or None when no pool has a MIG-capable GPU."""
    configs = mig_parted_configs(spec, catalog)
    if not configs:
        return None
    text = yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=False)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(MIG_CONFIGMAP, GPU_OPERATOR_NAMESPACE), "data": {"config.yaml": text}}
