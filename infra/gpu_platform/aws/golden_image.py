"""A golden image (built by `ansible/packer`) as an EKS pool's AMI: what the launch template must say.

EKS adds no bootstrap to a custom AMI's user data (behaviour.image_manifest), so the launch template
runs the image's own `/etc/eks/bootstrap.sh` with the cluster's endpoint and CA, and hands the
kubelet the pool's labels and taints the way eksctl's bootstrappers do (`--node-labels`,
`--register-with-taints` in `--kubelet-extra-args`): a node registers already tainted, so no pod
lands on it in the window before a label or taint would be patched on.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from gpu_platform import efa
from gpu_platform.pools import Taint

# Canonical's and Red Hat's AMIs name their root device /dev/sda1 (the Packer template grows the
# same device); /dev/xvda would attach a second, empty volume and leave the root at its 8-10 GiB.
ROOT_DEVICE = "/dev/sda1"
# On the node group and its launch template: the image manifest the gate judges the AMI by.
MANIFEST_TAG = "gpu-platform:image-manifest"
REGION_TAG = "gpu-platform:image-region"
BOOTSTRAP = "/etc/eks/bootstrap.sh"


def kubelet_flags(labels: Mapping[str, str], taints: Sequence[Taint]) -> str:
    """`--node-labels` and `--register-with-taints` as the kubelet parses them (key=value,...; key=value:Effect,...)."""
    flags = ["--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items()))]
    if taints:
        flags.append("--register-with-taints=" + ",".join(f"{t.key}={t.value}:{t.effect}" for t in taints))
    return " ".join(flags)


def bootstrap_script(cluster_name: str, endpoint: str, ca_data: str, labels: Mapping[str, str], taints: Sequence[Taint]) -> str:
    """The shell part that joins the node to the cluster."""
    argv = [
        BOOTSTRAP,
        cluster_name,
        "--apiserver-endpoint",
        endpoint,
        "--b64-cluster-ca",
        ca_data,
        "--kubelet-extra-args",
        kubelet_flags(labels, taints),
    ]
    return "#!/bin/bash\nset -euo pipefail\n" + " ".join(shlex.quote(a) for a in argv) + "\n"


def user_data(cluster_name: str, endpoint: str, ca_data: str, labels: Mapping[str, str], taints: Sequence[Taint], hugepages: bool) -> str:
    """The launch template's user data: hugepages first (EFA pools), so the kubelet reports them when it starts."""
    scripts = ([efa.hugepages_script()] if hugepages else []) + [bootstrap_script(cluster_name, endpoint, ca_data, labels, taints)]
    return efa.mime_user_data(*scripts)
