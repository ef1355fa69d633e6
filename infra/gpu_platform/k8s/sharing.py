"""GPU sharing per pool: device-plugin configs (whole, time-slicing, MPS, MIG) and mig-parted configs.

A node selects its device-plugin config by its `nvidia.com/device-plugin.config` label and its MIG
layout by `nvidia.com/mig.config`; both labels and the resource names a pool offers come from
`gpu_platform.pools`, so the configs written here, the node labels and the quotas always agree.
"""

from __future__ import annotations

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


def mig_strategy(spec: PlatformSpec) -> str:
    """`mixed` when any pool is MIG-sliced (each profile its own resource), else `single`."""
    return "mixed" if any(p.sharing.mode == "mig" for p in spec.node_pools) else "single"


def device_plugin_config(pool: NodePool | None, strategy: str) -> dict[str, Any]:
    """The device-plugin config a pool selects (None: the default, whole GPUs).

    Shared GPUs are renamed to `nvidia.com/gpu.shared` (renameByDefault) so a pod can never mistake a
    slice for a whole GPU, and a request for more than one slice fails (failRequestsGreaterThanOne):
    two time-slices or MPS shares of one GPU are not twice the GPU.
    """
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy, "failOnInitError": True}}
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


def device_plugin_configs(spec: PlatformSpec) -> dict[str, dict[str, Any]]:
    """Every device-plugin config the stack's pools select, by config name (always with `default`)."""
    strategy = mig_strategy(spec)
    configs = {DEFAULT_CONFIG: device_plugin_config(None, strategy)}
    for pool in spec.node_pools:
        configs.setdefault(sharing_config_name(pool), device_plugin_config(pool, strategy))
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
