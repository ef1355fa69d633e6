"""The rollout uncordons a node only once the device plugin advertises its GPUs again.

The Node's status.allocatable carries what k8s-device-plugin v0.20.0 registered with the kubelet:
`nvidia.com/gpu` (times the replicas under time-slicing or MPS), `nvidia.com/mig-<profile>` per
profile under the `mixed` MIG strategy (readme-example-config1-mig-mixed.yaml), and a `.shared`
suffix with `renameByDefault` (readme-example-timeslicing-renamebydefault.yaml). Right after a
reboot the kubelet reports the node without them until the plugin re-registers.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.ansible.helpers import ROLES

spec = importlib.util.spec_from_file_location("gpu_allocatable", ROLES / "k8s_node_maintenance" / "filter_plugins" / "gpu_allocatable.py")
assert spec and spec.loader
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)

BASE = {"cpu": "191", "memory": "2060000000Ki", "pods": "110", "ephemeral-storage": "1800000000Ki", "vpc.amazonaws.com/efa": "32"}


@pytest.mark.parametrize(
    ("allocatable", "want"),
    [
        ({}, 0),  # just rebooted: the device plugin has not re-registered yet
        ({"nvidia.com/gpu": "0"}, 0),  # registered, but the driver did not come up
        ({"nvidia.com/gpu": "8"}, 8),
        ({"nvidia.com/gpu": "32"}, 32),  # time-slicing, 4 replicas
        ({"nvidia.com/gpu.shared": "16"}, 16),  # renameByDefault
        ({"nvidia.com/mig-1g.10gb": "28"}, 28),  # mixed strategy, all-1g.10gb on 4 A100s
        ({"nvidia.com/mig-3g.40gb": "4", "nvidia.com/mig-2g.20gb": "4", "nvidia.com/mig-1g.10gb": "4"}, 12),
        ({"nvidia.com/gpu.product": "7"}, 0),  # not a resource the plugin advertises
    ],
)
def test_advertised_gpus_counts_what_the_device_plugin_registers(allocatable: dict[str, str], want: int):
    node = {"metadata": {"name": "gpu-h100-01"}, "status": {"allocatable": {**BASE, **allocatable}}}
    assert plugin.advertised_gpus(node) == want


def test_no_node_object_counts_as_nothing_advertised():
    assert plugin.advertised_gpus(None) == 0
    assert plugin.advertised_gpus({}) == 0


def test_the_release_waits_for_the_pools_gpu_count_before_uncordoning():
    import yaml

    from tests.ansible.helpers import ANSIBLE_DIR

    release = yaml.safe_load((ROLES / "k8s_node_maintenance" / "tasks" / "release.yml").read_text())
    block = [t["name"] for t in release[0]["block"]]
    assert block == ["Validate the node", "Wait until the device plugin advertises the node's GPUs again"]
    names = [t["name"] for t in release]
    # Uncordon after the block; the GPU health check (paused for the maintenance) resumes only after that.
    assert names.index("Uncordon the node") > 0 and names[-1] == "Resume the GPU health check"
    wait = release[0]["block"][1]
    assert "advertised_gpus >= k8s_node_maintenance_expected_gpus" in wait["until"]
    for inventory in ("lab", "prod"):
        wiring = yaml.safe_load((ANSIBLE_DIR / "inventories" / inventory / "group_vars" / "gpu_nodes.yml").read_text())
        assert wiring["k8s_node_maintenance_expected_gpus"] == "{{ gpu_pool_gpu_count }}"
