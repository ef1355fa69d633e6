"""Cases of the repository rules over the Ansible inventories, roles and golden image, on copies of the repository.

Kept apart so the repository rules' cases read together; tests/policies/cases.py joins every module's cases into CASES.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.versions import Lockfile
from tests.policies.builders import DROP, REPO, Case, at, fires, silent

DC1 = Path("ansible/inventories/dc1")
ONPREM_NODES = (
    "hgx-h100-train-dgx-h100-01",
    "hgx-h100-train-dgx-h100-02",
    "hgx-h100-train-dgx-h100-03",
    "hgx-h100-train-dgx-h100-04",
    "hgx-a100-mig-dgx-a100-01",
    "hgx-a100-mig-dgx-a100-02",
    "l40s-dev-l40s-01",
    "l40s-dev-l40s-02",
)
A100_NODE = "pool-hgx-a100-mig-dgx-a100-01"


def copy_repo(files: Callable[[], list[Path]], edit: tuple[str, str, str] | None = None) -> Callable[[Path], None]:
    """A repository copy of these files (paths relative to the repository), one of them edited (path, old, new)."""

    def make(root: Path) -> None:
        for rel in files():
            text = (REPO / rel).read_text()
            if edit and rel.as_posix() == edit[0]:
                assert edit[1] in text, edit
                text = text.replace(edit[1], edit[2])
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)

    return make


def copy_dc1(edit: tuple[str, str, str] | None = None) -> Callable[[Path], None]:
    """A repository copy holding the onprem stack's inventory (ansible/inventories/dc1), one file edited (path, old, new)."""
    return copy_repo(lambda: [p.relative_to(REPO) for p in sorted((REPO / DC1).rglob("*")) if p.is_file()], edit)


# A file ansible-core's `script` inventory plugin would run: it leaves a mark and claims every node is fine.
SCRIPT_INVENTORY = '#!/bin/sh\ntouch "$(dirname "$0")/ran"\necho \'{"_meta": {"hostvars": {}}}\'\n'
ALIAS_BOMB = "---\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcde", "bcdef", strict=True)
)


def write_file(rel: str, text: str, mode: int = 0o644) -> Callable[[Path], None]:
    """A repository copy with one more file."""

    def make(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)

    return make


def chain_repo(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    """Several repository edits in order."""

    def make(root: Path) -> None:
        for step in steps:
            step(root)

    return make


def write_inventory(group_vars: dict[str, Any]) -> Callable[[Path], None]:
    """A repository copy whose prod inventory has these group_vars/all values."""

    def make(root: Path) -> None:
        gv = root / "ansible" / "inventories" / "prod" / "group_vars"
        gv.mkdir(parents=True)
        (gv / "all.yml").write_text(yaml.safe_dump(group_vars))
        (root / "ansible" / "inventories" / "prod" / "hosts.yml").write_text("all:\n  hosts:\n    gpu-01: {}\n")

    return make


def write_ini_inventory(text: str, name: str = "hosts.ini") -> Callable[[Path], None]:
    """A repository copy whose prod inventory is an INI file with this text."""

    def make(root: Path) -> None:
        inv = root / "ansible" / "inventories" / "prod"
        inv.mkdir(parents=True)
        (inv / name).write_text(text)

    return make


def copy_node_os_offers(edit: tuple[str, str, str] | None = None) -> Callable[[Path], None]:
    """A repository copy with the real Packer template and role vars, one of them edited (path, old, new)."""
    return copy_repo(
        lambda: [Path("ansible/packer/gpu-node.pkr.hcl"), *(p.relative_to(REPO) for p in sorted((REPO / "ansible/roles").glob("*/vars/main.yml")))],
        edit,
    )


def support_ended(component: str, key: str, ends: str) -> Callable[[Lockfile], Lockfile]:
    """A lockfile copy whose recorded end of support for `component.key` is `ends`."""

    def make(lock: Lockfile) -> Lockfile:
        support = {c: dict(entries) for c, entries in lock.support.items()}
        support[component][key] = support[component][key].model_copy(update={"ends": date.fromisoformat(ends)})
        return lock.model_copy(update={"support": support})

    return make


def kubelet_cgroup_v2_from(minor: str) -> Callable[[Lockfile], Lockfile]:
    """A lockfile copy whose kubelet refuses cgroup v1 from `minor` on."""

    def make(lock: Lockfile) -> Lockfile:
        compat = lock.compatibility.model_copy(update={"kubelet": {"cgroup_v2_from": minor}})
        return lock.model_copy(update={"compatibility": compat})

    return make


INI_DRIVER_PIN = "[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11\n\n[gpu_nodes:vars]\nnvidia_driver_version=535.104.05\n"
GROUP_VARS = "ansible/inventories/prod/group_vars/all.yml"
HOSTS_YML = "ansible/inventories/prod/hosts.yml"
PLAIN_INVENTORY = write_inventory({"ansible_user": "gpu-admin"})  # reads every pin from the lockfile
LAB_OVERLAY = write_inventory({"gpu_platform_versions_overlay": "debian12-lab"})
RHEL8_IN_PACKER = ("ansible/packer/gpu-node.pkr.hcl", '"ubuntu2404", "rhel9"]', '"ubuntu2404", "rhel8", "rhel9"]')


ANSIBLE_CASES: list[Case] = [
    # one owner per node setting: the onprem stack against the inventory it names (read by ansible-core)
    silent("node-settings-one-owner", "onprem-matches-dc1", stack="onprem", repo=copy_dc1()),
    silent("node-settings-one-owner", "eks-has-no-inventory", repo=copy_dc1(), idle="the stack has no on-prem nodes"),
    silent(
        "node-settings-one-owner",
        "no-inventory-named",
        *[at(f"pool-{p}", {"metadata.annotations.gpu-platform.io/inventory": DROP}) for p in ONPREM_NODES],
        stack="onprem",
        repo=copy_dc1(),
        idle="the stack names no cluster.inventory",
    ),
    fires(
        "node-settings-one-owner",
        "mig-layout-differs",
        stack="onprem",
        repo=copy_dc1(("ansible/inventories/dc1/group_vars/pool_hgx_a100_mig.yml", "all-1g.10gb", "all-balanced")),
        on=A100_NODE,
        says="the stack says nvidia.com/mig.config=all-1g.10gb, ansible/inventories/dc1 says gpu_pool_mig_config='all-balanced'",
    ),
    fires(
        "node-settings-one-owner",
        "gpu-count-differs",
        stack="onprem",
        repo=copy_dc1(("ansible/inventories/dc1/group_vars/pool_l40s_dev.yml", "gpu_pool_gpu_count: 4", "gpu_pool_gpu_count: 8")),
        on="pool-l40s-dev-l40s-01",
        says="gpu-platform.io/gpus-per-node=4, ansible/inventories/dc1 says gpu_pool_gpu_count=8",
    ),
    fires(
        "node-settings-one-owner",
        "node-not-in-inventory",
        stack="onprem",
        repo=copy_dc1(("ansible/inventories/dc1/hosts.yml", "l40s-[01:02]", "l40s-01")),
        on="pool-l40s-dev-l40s-02",
        says="node l40s-02 of pool l40s-dev is not in gpu_nodes of ansible/inventories/dc1: Ansible never builds it",
    ),
    fires(
        "node-settings-one-owner",
        "host-vars-override-the-role-input",
        stack="onprem",
        repo=chain_repo(copy_dc1(), write_file("ansible/inventories/dc1/host_vars/dgx-a100-02.yml", "---\nmig_config: all-balanced\n")),
        on="pool-hgx-a100-mig-dgx-a100-02",
        says="ansible/inventories/dc1 says mig_config='all-balanced'",
    ),
    fires(
        "node-settings-one-owner",
        "playbook-group-vars-override-the-role-input",
        stack="onprem",
        repo=chain_repo(copy_dc1(), write_file("ansible/group_vars/gpu_nodes.yml", "---\nmig_config: all-balanced\n")),
        on=A100_NODE,
        says="ansible/inventories/dc1 says mig_config='all-balanced'",
    ),
    fires(
        "node-settings-one-owner",
        "script-inventory-is-never-run",
        stack="onprem",
        repo=chain_repo(copy_dc1(), write_file("ansible/inventories/dc1/extra.sh", SCRIPT_INVENTORY, mode=0o755)),
        on=A100_NODE,
        says="ansible-core cannot parse extra.sh",
    ),
    fires(
        "node-settings-one-owner",
        "host-range-bomb",
        stack="onprem",
        repo=chain_repo(copy_dc1(), write_file("ansible/inventories/dc1/more.yml", "all:\n  hosts:\n    n[0000000:9999999]:\n")),
        on=A100_NODE,
        says="not read: its host patterns expand to more than 10,000 hosts",
    ),
    fires(
        "node-settings-one-owner",
        "alias-bomb",
        stack="onprem",
        repo=chain_repo(copy_dc1(), write_file("ansible/inventories/dc1/group_vars/all.yml", ALIAS_BOMB)),
        on=A100_NODE,
        says="expands to more than 200,000 nodes",
    ),
    fires(
        "node-settings-one-owner",
        "symlink-out",
        stack="onprem",
        repo=chain_repo(copy_dc1(), lambda root: (root / "ansible/inventories/dc1/group_vars/all.yml").symlink_to("/etc/hostname")),
        on=A100_NODE,
        says="dc1/group_vars/all.yml is a symlink",
    ),
    fires(
        "node-settings-one-owner",
        "two-mig-owners",
        at("gpu-operator-release", {"values.migManager.enabled": True}),
        stack="onprem",
        repo=copy_dc1(),
        on="gpu-operator-release",
        says="the GPU Operator manages the MIG layout on nodes ansible/inventories/dc1 builds",
    ),
    fires(
        "node-settings-one-owner",
        "two-drivers",
        at("gpu-operator-release", {"values.driver.enabled": True}),
        stack="onprem",
        repo=copy_dc1(),
        on="gpu-operator-release",
        says="set gpuOperator.driver: preinstalled",
    ),
    fires(
        "node-settings-one-owner",
        "inventory-missing",
        stack="onprem",
        repo=lambda root: root.mkdir(parents=True),
        on=A100_NODE,
        says="cluster.inventory ansible/inventories/dc1 is not a directory",
    ),
    fires(
        "node-settings-one-owner",
        "inventory-unreadable",
        stack="onprem",
        repo=copy_dc1(("ansible/inventories/dc1/hosts.yml", "  children:\n    gpu_nodes:", "  children: [\n    gpu_nodes:")),
        on=A100_NODE,
        says="cluster.inventory ansible/inventories/dc1: ansible-core cannot parse hosts.yml",
    ),
    silent(
        "ansible-no-version-override",
        "lookup-is-fine",
        repo=write_inventory({"nvidia_driver_version": "{{ lookup('gpu_platform_versions', 'nvidia_driver.version') }}", "dcgm_enabled": True}),
    ),
    fires(
        "ansible-no-version-override",
        "literal-driver-version",
        on=GROUP_VARS,
        says="nvidia_driver_version sets '535.104.05'",
        repo=write_inventory({"nvidia_driver_version": "535.104.05"}),
    ),
    fires(
        "ansible-no-version-override",
        "copied-pinned-version",
        on=GROUP_VARS,
        says="driver_pkg repeats the pinned version '535.261.03-1'",
        repo=write_inventory({"driver_pkg": "535.261.03-1"}),
    ),
    # The golden image and the roles offer only OSes booting cgroup v2 (RHEL 8 boots v1; 1.35's kubelet refuses it).
    silent("ansible-node-os-cgroup-v2", "repository-as-is", repo=copy_node_os_offers()),
    fires(
        "ansible-node-os-cgroup-v2",
        "packer-offers-rhel8",
        on="ansible/packer/gpu-node.pkr.hcl",
        says="variable base_os validation offers rhel8, whose images boot cgroup v1",
        repo=copy_node_os_offers(RHEL8_IN_PACKER),
    ),
    fires(
        "ansible-node-os-cgroup-v2",
        "role-supports-rocky-8",
        on="ansible/roles/nvidia_driver/vars/main.yml",
        says="_nvidia_driver_supported_os.Rocky offers rhel8",
        repo=copy_node_os_offers(("ansible/roles/nvidia_driver/vars/main.yml", 'Rocky: ["9"]', 'Rocky: ["8", "9"]')),
    ),
    # Before 1.35 the kubelet still starts on cgroup v1: RHEL 8 may be offered.
    silent(
        "ansible-node-os-cgroup-v2",
        "rhel8-while-the-kubelet-accepts-v1",
        lock=kubelet_cgroup_v2_from("1.36"),
        repo=copy_node_os_offers(RHEL8_IN_PACKER),
    ),
    # The real inventories read the production pins (R580, supported until 2028-06-30).
    silent("ansible-driver-branch-in-support", "prod-on-the-lockfile-branch", repo=PLAIN_INVENTORY),
    fires(
        "ansible-driver-branch-in-support",
        "prod-selects-the-eol-lab-overlay",
        on=GROUP_VARS,
        says="driver branch 535 reached end of support on 2026-06-30",
        repo=LAB_OVERLAY,
    ),
    fires(
        "ansible-driver-branch-in-support",
        "lockfile-branch-past-its-end",
        on=HOSTS_YML,
        says="reached end of support on 2020-01-31",
        lock=support_ended("nvidia_driver_branches", "580", "2020-01-31"),
        repo=PLAIN_INVENTORY,
    ),
    silent("ansible-node-stack-in-support", "prod-on-the-lockfile-pins", repo=PLAIN_INVENTORY),
    fires(
        "ansible-node-stack-in-support",
        "lockfile-dcgm-past-its-year",
        on=HOSTS_YML,
        says="DCGM 4.6 (dcgm.version) reached end of support on 2020-01-31",
        lock=support_ended("dcgm", "4.6", "2020-01-31"),
        repo=PLAIN_INVENTORY,
    ),
    fires(
        "ansible-node-stack-in-support",
        "prod-selects-the-lab-overlay-cuda",
        on=GROUP_VARS,
        says="gpu_platform_versions_overlay=debian12-lab: CUDA 12.2 (cuda.version) reached end of support on 2026-06-30",
        repo=LAB_OVERLAY,
    ),
    fires(
        "ansible-driver-branch-in-support",
        "unknown-overlay",
        on=GROUP_VARS,
        says="gpu_platform_versions_overlay=debian13-lab is not an overlay in the lockfile; defined: debian12-lab",
        repo=write_inventory({"gpu_platform_versions_overlay": "debian13-lab"}),
    ),
    fires(
        "ansible-no-version-override",
        "ini-group-vars-pin",
        on="ansible/inventories/prod/hosts.ini",
        says="gpu_nodes:vars.nvidia_driver_version sets '535.104.05'",
        repo=write_ini_inventory(INI_DRIVER_PIN),
    ),
    fires(
        "ansible-no-version-override",
        "ini-host-var-pin-no-suffix",
        on="ansible/inventories/prod/hosts",
        says="gpu_nodes.hosts.gpu-01.cuda_version sets '12.8.0'",
        repo=write_ini_inventory("[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11 cuda_version='12.8.0'\n", name="hosts"),
    ),
    silent(
        "ansible-no-version-override",
        "ini-without-pins",
        repo=write_ini_inventory("[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11\n\n[gpu_nodes:vars]\nansible_user=ops\n"),
    ),
]
