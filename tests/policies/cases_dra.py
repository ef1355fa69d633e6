"""Cases of `dra-pool-served`: staging's DRA pool (batch-l40s-dra) broken one part at a time.

Each edit is what a pull request could do by hand to the plan's inputs; the rule names the pool or the release.
"""

from __future__ import annotations

from tests.policies.builders import DROP, Case, at, compliant, drop, fires, silent

NG = "pool-batch-l40s-dra-ng"
OTHER_NG = "pool-infer-l4-ondemand-ng"

DRA_CASES: list[Case] = [
    *compliant("dra-pool-served", "staging", "prod", "dev", "onprem"),
    silent("dra-pool-served", "no-dra-pool-no-driver-needed", stack="prod"),
    fires(
        "dra-pool-served",
        "device-plugin-left-on",
        at(NG, {"labels.nvidia.com/gpu.deploy.device-plugin": DROP}),
        on=NG,
        says="the device plugin and the DRA driver would both hand out its GPUs",
        stack="staging",
    ),
    fires(
        "dra-pool-served",
        "no-driver-release",
        drop("dra-driver-release"),
        on=NG,
        says="has no dra-driver-nvidia-gpu release",
        stack="staging",
    ),
    fires(
        "dra-pool-served",
        "driver-on-every-gpu-node",
        at("dra-driver-release", {"values.kubeletPlugin.nodeSelector": {}}),
        on=NG,
        says="would also run beside the device plugin",
        stack="staging",
    ),
    fires(
        "dra-pool-served",
        "driver-not-tolerating-the-gpu-taint",
        at("dra-driver-release", {"values.kubeletPlugin.tolerations": []}),
        on=NG,
        says="does not tolerate the pool's taint nvidia.com/gpu=present:NoSchedule",
        stack="staging",
    ),
    fires(
        "dra-pool-served",
        "device-plugin-off-on-a-plain-pool",
        at(OTHER_NG, {"labels.nvidia.com/gpu.deploy.device-plugin": "false"}),
        on=OTHER_NG,
        says="switches the device plugin off but is no DRA pool",
        stack="staging",
    ),
    fires(
        "dra-pool-served",
        "kueue-extended-resource-path-on",
        at("kueue-release", {"values.controllerManager.featureGates": []}),
        on="kueue-release",
        says="KueueDRAIntegrationExtendedResource",
        stack="staging",
    ),
]
