"""Device-plugin and mig-parted configs match the pools, the upstream formats and the resource names."""

from __future__ import annotations

import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.sharing import device_plugin_refusal, effective_mig_strategy
from gpu_platform.pools import LABEL_DEVICE_PLUGIN_CONFIG, LABEL_MIG_CONFIG, SHARED_GPU_RESOURCE, node_labels, resources_per_gpu
from tests.conftest import require_shared_crds, spec_for
from tests.k8s.helpers import helm_values, one

TOP = {"version", "flags", "resources", "sharing", "imex"}
SHARING_KEYS = {"renameByDefault", "failRequestsGreaterThanOne", "resources"}


def test_every_pool_selects_a_config_that_exists(stack: str) -> None:
    catalog = load_catalog()
    configs = one(stack, "ConfigMap", "device-plugin-config", "gpu-operator")["data"]
    for pool in spec_for(stack).node_pools:
        name = node_labels(pool, catalog)[LABEL_DEVICE_PLUGIN_CONFIG]
        config = yaml.safe_load(configs[name])
        assert set(config) <= TOP and config["version"] == "v1"
        if pool.sharing.mode in ("time-slicing", "mps"):
            key = "timeSlicing" if pool.sharing.mode == "time-slicing" else "mps"
            body = config["sharing"][key]
            assert set(body) <= SHARING_KEYS
            assert body["renameByDefault"] is True and body["failRequestsGreaterThanOne"] is True
            assert body["resources"] == [{"name": "nvidia.com/gpu", "replicas": pool.sharing.replicas}]
            # renameByDefault gives `<name>.shared`, the resource the quotas count.
            assert resources_per_gpu(pool, catalog) == {SHARED_GPU_RESOURCE: pool.sharing.replicas}
        else:
            assert "sharing" not in config


def test_time_slicing_config_has_the_upstream_shape() -> None:
    example = yaml.safe_load((require_shared_crds() / "k8s-device-plugin/v0.20.0/readme-example-timeslicing-renamebydefault.yaml").read_text())
    ours = yaml.safe_load(one("dev", "ConfigMap", "device-plugin-config", "gpu-operator")["data"]["time-slicing-4"])
    assert set(example["sharing"]["timeSlicing"]) <= set(ours["sharing"]["timeSlicing"])
    assert ours["sharing"]["timeSlicing"]["resources"][0].keys() == example["sharing"]["timeSlicing"]["resources"][0].keys()
    onprem = yaml.safe_load(one("onprem", "ConfigMap", "device-plugin-config", "gpu-operator")["data"]["mps-8"])
    assert onprem["sharing"]["mps"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 8}]


def test_mig_configs_are_only_those_used_and_match_mig_parted() -> None:
    upstream = yaml.safe_load((require_shared_crds() / "mig-parted/v0.15.0/config-default.yaml").read_text())["mig-configs"]
    catalog = load_catalog()
    for stack in ("prod", "staging", "onprem"):
        spec = spec_for(stack)
        ours = yaml.safe_load(one(stack, "ConfigMap", "mig-parted-config", "gpu-operator")["data"]["config.yaml"])["mig-configs"]
        used = {node_labels(p, catalog).get(LABEL_MIG_CONFIG) for p in spec.node_pools} - {None}
        assert set(ours) == used
        for name, entries in ours.items():
            for entry in entries:
                # The same layout upstream gives for this GPU's PCI id (or for all GPUs when unfiltered).
                matches = [
                    u
                    for u in upstream[name]
                    if u["mig-enabled"] == entry["mig-enabled"]
                    and u.get("mig-devices") == entry.get("mig-devices")
                    and (("device-filter" not in u) or set(entry.get("device-filter", [])) <= set(u["device-filter"]))
                ]
                assert matches, (name, entry)


def test_prod_mig_layouts() -> None:
    ours = yaml.safe_load(one("prod", "ConfigMap", "mig-parted-config", "gpu-operator")["data"]["config.yaml"])["mig-configs"]
    assert ours["all-3g.40gb"] == [{"device-filter": ["0x233010DE"], "devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}]
    assert ours["all-disabled"] == [{"devices": "all", "mig-enabled": False}]


def test_every_pool_device_plugin_starts_under_the_operator_strategy(stack: str) -> None:
    """Each node's device plugin accepts its config under the MIG strategy the operator imposes.

    Reproduces k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go `validateFlags` (MPS with
    `mixed` is refused) after api/config/v1/config.go `NewConfig`, where the MIG_STRATEGY environment
    variable the GPU Operator v26.7.0 sets from ClusterPolicy `mig.strategy` (controllers/object_controls.go
    `applyMIGConfiguration`; the chart renders it only when non-empty, default `single`) wins over the file.
    """
    catalog = load_catalog()
    configs = one(stack, "ConfigMap", "device-plugin-config", "gpu-operator")["data"]
    operator = helm_values(stack, "gpu-operator")
    for pool in spec_for(stack).node_pools:
        config = yaml.safe_load(configs[node_labels(pool, catalog)[LABEL_DEVICE_PLUGIN_CONFIG]])
        assert device_plugin_refusal(config, operator) is None, pool.name
        strategy = effective_mig_strategy(config, operator)
        # MIG pools advertise nvidia.com/mig-<profile> only under `mixed`; the others advertise whole or shared GPUs.
        assert strategy == ("mixed" if pool.sharing.mode == "mig" else "single"), pool.name


def test_onprem_mps_pool_advertises_gpus_next_to_a_mig_pool() -> None:
    """The onprem stack has an MPS L40S pool and a MIG A100 pool: a cluster-wide `mixed` killed the MPS plugin."""
    configs = one("onprem", "ConfigMap", "device-plugin-config", "gpu-operator")["data"]
    mps, mig = yaml.safe_load(configs["mps-8"]), yaml.safe_load(configs["mig-mixed"])
    operator = helm_values("onprem", "gpu-operator")
    assert device_plugin_refusal(mps, operator) is None and effective_mig_strategy(mig, operator) == "mixed"
    # The old model: one cluster-wide strategy, `mixed` because a MIG pool exists.
    old = {**operator, "mig": {"strategy": "mixed"}}
    assert device_plugin_refusal(mps, old) == "using --mig-strategy=mixed is not supported with MPS"
    # Leaving the value out is no better: the chart's default `single` hides the MIG pool's profiles.
    assert effective_mig_strategy(mig, {"mig": {}}) == "single"
