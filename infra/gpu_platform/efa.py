"""EFA that pods can use: interface layout, hugepages and the resources an EFA node offers.

Pure facts shared by the launch template (aws.nodepools), the autoscaler's node-template tags, the
EFA device plugin release (k8s.efa), Kueue's configuration (k8s.kueue) and the policy gate.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_platform.catalog import Catalog, InstanceType
from gpu_platform.spec.models import NodePool, PlatformSpec

# What the AWS EFA Kubernetes device plugin advertises: one device per EFA interface of the node.
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# libfabric's EFA provider allocates its buffers from 2 MiB hugepages (not transparent ones), and the
# kubelet only advertises pages reserved before it starts.
HUGEPAGES_RESOURCE = "hugepages-2Mi"
HUGEPAGE_MIB = 2
# Reserved per EFA node: 10 GiB, twice the 5120Mi one training pod per node requests in AWS's EKS EFA
# examples, so a replacement pod can start while the old one still holds its pages.
HUGEPAGES_PER_NODE = 5120
# Prefixes Kueue must not account (Configuration `resources.excludeResourcePrefixes`): EFA devices and
# hugepages come with the GPUs of an EFA node, so the GPU quota already governs them, and a resource
# no ClusterQueue covers would otherwise keep every pod that asks for it pending.
KUEUE_EXCLUDED_PREFIXES = (EFA_RESOURCE, "hugepages-")

ENA = "interface"
EFA_WITH_ENA = "efa"
EFA_ONLY = "efa-only"


@dataclass(frozen=True)
class Interface:
    """One launch-template network interface: card, device index on that card, and type."""

    network_card_index: int
    device_index: int
    interface_type: str

    @property
    def efa(self) -> bool:
        """True when the interface carries an EFA device (EFA with ENA, or EFA-only)."""
        return self.interface_type in (EFA_WITH_ENA, EFA_ONLY)


def interface_layout(instance: InstanceType) -> list[Interface]:
    """Network interfaces for every EFA card of the instance type.

    EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network cards":
    the primary interface (card 0, device 0) is ENA (an EFA-only interface cannot be primary); where
    card 0 supports EFA it gets an EFA-only interface at device index 1; every further card gets an
    EFA-only interface at device index 0. Types without EFA-only support keep EFA with ENA on each
    card (card 0 device 0 primary, further cards device index 1).
    """
    cards = instance.efa_interfaces
    if cards == 0:
        return []
    if instance.efa_only:
        return [Interface(0, 0, ENA), Interface(0, 1, EFA_ONLY), *(Interface(card, 0, EFA_ONLY) for card in range(1, cards))]
    return [Interface(0, 0, EFA_WITH_ENA), *(Interface(card, 1, EFA_WITH_ENA) for card in range(1, cards))]


def efa_devices(instance: InstanceType) -> int:
    """EFA devices a node of this type offers pods (what the device plugin advertises)."""
    return sum(1 for i in interface_layout(instance) if i.efa)


def efa_pools(spec: PlatformSpec) -> list[NodePool]:
    """The stack's EFA pools."""
    return [p for p in spec.node_pools if p.efa]


def node_resources(pool: NodePool, catalog: Catalog) -> dict[str, str]:
    """Extended resources an EFA pool's node offers besides GPUs, as Kubernetes quantities."""
    if not pool.efa:
        return {}
    instance = catalog.instance(pool.instance_types[0])
    return {EFA_RESOURCE: str(efa_devices(instance)), HUGEPAGES_RESOURCE: f"{HUGEPAGES_PER_NODE * HUGEPAGE_MIB}Mi"}


USER_DATA_BOUNDARY = "==GPUPLATFORM=="


def hugepages_script(pages: int = HUGEPAGES_PER_NODE) -> str:
    """The shell script that reserves 2 MiB hugepages now and across reboots (see hugepages_user_data)."""
    return (
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        f"echo 'vm.nr_hugepages = {pages}' > /etc/sysctl.d/90-gpu-platform-efa-hugepages.conf\n"
        f"sysctl -w vm.nr_hugepages={pages}\n"
    )


def mime_user_data(*scripts: str) -> str:
    """Shell scripts as one MIME multi-part user data document, run in order by cloud-init."""
    parts = "".join(f'--{USER_DATA_BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n{script}\n' for script in scripts)
    return f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{USER_DATA_BOUNDARY}"\n\n{parts}--{USER_DATA_BOUNDARY}--\n'


def hugepages_user_data(pages: int = HUGEPAGES_PER_NODE) -> str:
    """Launch-template user data reserving 2 MiB hugepages before the kubelet starts.

    EKS user guide, "Configure hugepages in Amazon EKS clusters": reserve the pages from user data so
    the kubelet reports `hugepages-2Mi` capacity. EKS managed node groups merge a launch template's
    user data only in MIME multi-part form; on AL2023 a shell-script part runs before `nodeadm-run`
    starts the kubelet. The sysctl.d file keeps the reservation across reboots.
    """
    return mime_user_data(hugepages_script(pages))
