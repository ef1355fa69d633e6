"""Rules over the Ansible tree.

Inventories never override a pinned version nor converge an unsupported driver or node component, and the nodes
an inventory builds have one owner for each setting.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.behaviour.ansible_inventory import read_inventory, resolve
from gpu_platform.pools import ANNOTATION_INVENTORY, LABEL_GPU_MODEL, LABEL_GPUS_PER_NODE, LABEL_MIG_CONFIG, LABEL_POOL
from gpu_platform.versions import (
    SUPPORT_DRIVER_BRANCHES,
    Lockfile,
    kubelet_refuses_cgroup_v1,
    node_support_keys,
    overlay_lockfile,
    past_support,
    support_end,
)
from gpu_platform_policies.model import Context, Finding, PlanView, rule
from gpu_platform_policies.view import MIG_OFF, NODE_PATCH, get, helm_releases, truthy, walk

# Variable names that carry a version: nvidia_driver_version, *_branch, *_package_version, *_tag.
VERSION_VAR = re.compile(r"(^|_)(version|versions|branch|tag)$")


YAML_SUFFIXES = (".yml", ".yaml", ".json")
INI_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:[;#].*)?$")


def inventory_files(root: Path) -> list[Path]:
    """Inventory sources (YAML or INI, any name) and every group_vars/host_vars file under ansible/."""
    base = root / "ansible"
    if not base.is_dir():
        return []
    found: set[Path] = set()
    for pattern in ("**/group_vars/**/*", "**/host_vars/**/*", "inventories/**/*"):
        for p in base.glob(pattern):
            if p.is_file() and ".git" not in p.parts and p.suffix not in (".md", ".j2", ".retry"):
                found.add(p)
    return sorted(found)


def is_ini_inventory(path: Path) -> bool:
    """Ansible reads an inventory source that is not .yml/.yaml/.json with its `ini` plugin; vars files are YAML."""
    return path.suffix not in YAML_SUFFIXES and not {"group_vars", "host_vars"} & set(path.parts)


def _ini_value(text: str) -> Any:
    # ansible-core plugins/inventory/ini.py `_parse_value`: a Python literal when it is one, else the text.
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_ini_inventory(text: str) -> dict[str, Any]:
    """The variables an INI inventory sets, as `{"<group>:vars": {k: v}, "<group>.hosts": {host: {k: v}}}`.

    Mirrors ansible-core `plugins/inventory/ini.py` `InventoryModule._parse`: `[group:vars]` lines are
    `key=value` split at the first `=` (`_parse_variable_definition`); host lines are shell-split, the
    first token the host, the rest `key=value` (`_parse_host_definition`); `#` and `;` start comments.
    """
    out: dict[str, Any] = {}
    group, state = "ungrouped", "hosts"
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        section = INI_SECTION.match(line)
        if section:
            group, state = section.group(1), section.group(2) or "hosts"
            continue
        if state == "vars" and "=" in line:
            key, value = (e.strip() for e in line.split("=", 1))
            out.setdefault(f"{group}:vars", {})[key] = _ini_value(value)
        elif state == "hosts":
            try:
                tokens = shlex.split(line, comments=True)
            except ValueError:
                continue
            host_vars = dict(t.split("=", 1) for t in tokens[1:] if "=" in t)
            if tokens and host_vars:
                out.setdefault(f"{group}.hosts", {})[tokens[0]] = {k: _ini_value(v) for k, v in host_vars.items()}
    return out


def pinned_values(lock: Lockfile) -> set[str]:
    """Every version string the lockfile pins (so a copied literal is caught whatever its name)."""
    values: set[str] = set()
    for _, key, value in walk(lock.model_dump(by_alias=True, exclude={"compatibility"})):
        if isinstance(value, str) and key in ("version", "tag", "branch", "ami_release_version") and any(c.isdigit() for c in value):
            values.add(value)
    for pkgs in (lock.nvidia_driver.packages, lock.cuda.packages, lock.container_toolkit.packages, lock.dcgm.packages):
        values.update(pkgs.values())
    for overlay in lock.overlays.values():  # an overlay's package builds are pins too (the lab's 535 build)
        values.update(v for where, _, v in walk(overlay.overrides) if ".packages." in where and isinstance(v, str))
    return values


def _literal(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and "{{" not in value and value.strip() != ""


@rule(
    "ansible-no-version-override",
    "No Ansible inventory (YAML or INI), group_vars or host_vars file sets a version literal; versions come from the lockfile.",
    "mandatory",
    "repository",
    category="ansible",
)
def ansible_no_version_override(root: Path, ctx: Context) -> Iterator[Finding]:
    """An inventory pin silently forks one environment off the lockfile everything else reads."""
    pinned = pinned_values(ctx.lock)
    for path in inventory_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text()
            docs = [parse_ini_inventory(text)] if is_ini_inventory(path) else list(yaml.safe_load_all(text))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue  # a vault-encrypted or binary file: no plain version literal to find
        for doc in docs:
            for where, key, value in walk(doc):
                if VERSION_VAR.search(str(key)) and _literal(value):
                    yield Finding(
                        rel, f"{where} sets {value!r}; read it from the lockfile (lookup('gpu_platform_versions', ...))", file=rel, key=where
                    )
                elif isinstance(value, str) and value in pinned:
                    yield Finding(rel, f"{where} repeats the pinned version {value!r}; read it from the lockfile instead", file=rel, key=where)


OVERLAY_VAR = "gpu_platform_versions_overlay"
LOCKFILE = "infra/gpu_platform/data/versions.yaml"  # where every pin lives (gpu_platform.versions)


def inventory_dirs(root: Path) -> list[Path]:
    """Each environment's inventory directory (ansible/inventories/<env>)."""
    base = root / "ansible" / "inventories"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def selected_overlays(inventory: Path) -> list[tuple[Path, str]]:
    """(file, overlay name) for every place an inventory sets gpu_platform_versions_overlay."""
    found: list[tuple[Path, str]] = []
    for path in sorted(p for p in inventory.rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml")):
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        for doc in docs:
            found.extend((path, str(value)) for _, key, value in walk(doc) if key == OVERLAY_VAR and value)
    return found


def branch_support_problem(lock: Lockfile, branch: str, today: date) -> str | None:
    """Why a driver branch may not be pinned on `today` (no recorded end of support, or past it); None if it may."""
    end = support_end(lock, "nvidia_driver_branches", branch)
    if end is None:
        known = ", ".join(sorted(lock.support.get("nvidia_driver_branches", {}))) or "none"
        return f"driver branch {branch} has no end-of-support date in the lockfile; add support.nvidia_driver_branches.{branch} (recorded: {known})"
    if past_support(end, today):
        return f"driver branch {branch} reached end of support on {end.ends} ({end.source}); pin a branch supported today"
    return None


@rule(
    "ansible-driver-branch-in-support",
    "Every Ansible inventory converges its GPU nodes to a driver branch NVIDIA still supports, lockfile overlays included.",
    "mandatory",
    "repository",
    category="ansible",
)
def ansible_driver_branch_in_support(root: Path, ctx: Context) -> Iterator[Finding]:
    """The roles install whatever branch the lockfile (or an overlay the inventory selects) pins, EOL or not."""
    today = ctx.day
    for inventory in inventory_dirs(root):
        selected = selected_overlays(inventory)
        if not selected:
            hosts = next((p for p in sorted(inventory.glob("hosts*")) if p.is_file()), inventory)
            problem = branch_support_problem(ctx.lock, ctx.lock.nvidia_driver.branch, today)
            if problem:
                rel = hosts.relative_to(root).as_posix()
                # The inventory converges what the lockfile pins: the fix is the lockfile's key.
                yield Finding(rel, f"{problem} (nvidia_driver.branch in the lockfile)", file=LOCKFILE, key="nvidia_driver.branch")
            continue
        for path, name in selected:
            rel = path.relative_to(root).as_posix()
            overlay = ctx.lock.overlays.get(name)
            if overlay is None:
                defined = ", ".join(sorted(ctx.lock.overlays)) or "none"
                yield Finding(rel, f"{OVERLAY_VAR}={name} is not an overlay in the lockfile; defined: {defined}", file=rel, key=OVERLAY_VAR)
                continue
            branch = str(overlay.overrides.get("nvidia_driver", {}).get("branch", ctx.lock.nvidia_driver.branch))
            problem = branch_support_problem(ctx.lock, branch, today)
            if problem:
                yield Finding(rel, f"{OVERLAY_VAR}={name}: {problem}", file=rel, key=OVERLAY_VAR)


# What the roles call each node component in a finding.
NODE_COMPONENT_NAMES = {
    "cuda": "CUDA",
    "fabric_manager": "Fabric Manager",
    "dcgm": "DCGM",
    "container_toolkit": "NVIDIA Container Toolkit",
    "mig_parted": "mig-parted",
}


def node_support_problems(lock: Lockfile, today: date) -> list[tuple[str, str]]:
    """(lockfile key, why) for each node component `lock` pins (beyond the driver branch) that may not be converged on `today`."""
    problems = []
    for where, component, key in node_support_keys(lock):
        if component == SUPPORT_DRIVER_BRANCHES:
            continue  # ansible-driver-branch-in-support
        end = support_end(lock, component, key)
        what = NODE_COMPONENT_NAMES.get(component, component)
        if end is None:
            problems.append((where, f'{what} {key} ({where}) has no end-of-support entry; add support.{component}."{key}" with its source'))
        elif past_support(end, today):
            problems.append((where, f"{what} {key} ({where}) reached end of support on {end.ends} ({end.source}); pin a release supported today"))
    return problems


@rule(
    "ansible-node-stack-in-support",
    "Every Ansible inventory converges CUDA, Fabric Manager, DCGM, the Container Toolkit and mig-parted at supported releases, overlays included.",
    "mandatory",
    "repository",
    category="ansible",
)
def ansible_node_stack_in_support(root: Path, ctx: Context) -> Iterator[Finding]:
    """The roles install whatever the lockfile (or an overlay the inventory selects) pins, EOL or not.

    Dates come from the lockfile's `support:` section: CUDA and Fabric Manager end with the driver
    branch that runs them (NVIDIA's "Supported Drivers and CUDA Toolkit Versions"), DCGM minors a
    year after release (DCGM docs/support_EOL.md); the Container Toolkit and mig-parted have no
    published date and their entries say what governs them instead.
    """
    for inventory in inventory_dirs(root):
        selected = selected_overlays(inventory)
        if not selected:
            hosts = next((p for p in sorted(inventory.glob("hosts*")) if p.is_file()), inventory)
            rel = hosts.relative_to(root).as_posix()
            for where, problem in node_support_problems(ctx.lock, ctx.day):
                yield Finding(rel, problem, file=LOCKFILE, key=where)
            continue
        for path, name in selected:
            if name not in ctx.lock.overlays:
                continue  # ansible-driver-branch-in-support names the unknown overlay
            rel = path.relative_to(root).as_posix()
            for _, problem in node_support_problems(overlay_lockfile(ctx.lock, name), ctx.day):
                yield Finding(rel, f"{OVERLAY_VAR}={name}: {problem}", file=rel, key=OVERLAY_VAR)


PACKER_TEMPLATE = "ansible/packer/gpu-node.pkr.hcl"
BASE_OS_CHOICES = re.compile(r"condition\s*=\s*contains\(\[([^\]]*)\],\s*var\.base_os\)")
# A role's `_<role>_supported_os` distribution -> the lockfile's package_availability key of a major.
OS_KEY = {"Ubuntu": "ubuntu{}04", "Debian": "debian{}", "RedHat": "rhel{}", "Rocky": "rhel{}", "AlmaLinux": "rhel{}"}


def node_os_offers(root: Path) -> Iterator[tuple[str, str, str]]:
    """(file, where, package_availability key) for every OS the Packer template or a role's supported platforms offer."""
    template = root / PACKER_TEMPLATE
    if template.is_file():
        match = BASE_OS_CHOICES.search(template.read_text())
        for choice in re.findall(r'"([a-z0-9]+)"', match.group(1)) if match else []:
            yield PACKER_TEMPLATE, "variable base_os validation", choice
    for path in sorted((root / "ansible" / "roles").glob("*/vars/main.yml")):
        rel = path.relative_to(root).as_posix()
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError:
            continue
        for var, platforms in data.items() if isinstance(data, dict) else []:
            if str(var).endswith("_supported_os") and isinstance(platforms, dict):
                for distro, majors in platforms.items():
                    for major in majors if distro in OS_KEY and isinstance(majors, list) else []:
                        yield rel, f"{var}.{distro}", OS_KEY[distro].format(major)


@rule(
    "ansible-node-os-cgroup-v2",
    "No golden image or role platform offers an OS whose images boot cgroup v1 once the pinned kubelet refuses cgroup v1.",
    "mandatory",
    "repository",
    category="ansible",
)
def ansible_node_os_cgroup_v2(root: Path, ctx: Context) -> Iterator[Finding]:
    """An OS booting cgroup v1 converges cleanly and its node never turns Ready.

    The kubelet of Kubernetes >= compatibility.kubelet.cgroup_v2_from exits on cgroup v1 (1.35:
    failCgroupV1 defaults to true, pkg/kubelet/apis/config/v1beta1/defaults.go
    SetDefaults_KubeletConfiguration).
    """
    if not kubelet_refuses_cgroup_v1(ctx.lock):
        return
    v1 = {key for key, avail in ctx.lock.package_availability.items() if avail.cgroup == "v1"}
    since = ctx.lock.compatibility.kubelet["cgroup_v2_from"]
    for rel, where, os_key in node_os_offers(root):
        if os_key in v1:
            yield Finding(
                rel,
                f"{where} offers {os_key}, whose images boot cgroup v1 (package_availability.{os_key}.cgroup); "
                f"the kubelet of Kubernetes {ctx.lock.kubernetes.version} refuses it (compatibility.kubelet.cgroup_v2_from {since}); "
                "allowed: OSes booting cgroup v2",
                file=rel,
                key=where.removesuffix(" validation").replace(" ", "."),
            )


# --- one owner for every node setting -------------------------------------------------------------

# The pool's description and the role inputs wired from it (ansible/inventories/*/group_vars/gpu_nodes.yml):
# node label, inventory variable, the label's value when the stack leaves it unset. A role input overridden
# anywhere (host_vars, the playbooks' own group_vars) is what the node gets, so it is compared as resolved.
POOL_VARS = (
    (LABEL_GPU_MODEL, "gpu_pool_gpu_model", None),
    (LABEL_GPUS_PER_NODE, "gpu_pool_gpu_count", None),
    (LABEL_MIG_CONFIG, "gpu_pool_mig_config", MIG_OFF),
    (LABEL_GPU_MODEL, "nvidia_driver_gpu_model", None),
    (LABEL_GPU_MODEL, "mig_gpu_model", None),
    (LABEL_MIG_CONFIG, "mig_config", MIG_OFF),
)


def _inventory_of(plan: PlanView) -> str | None:
    """The inventory the stack's on-prem nodes name (ANNOTATION_INVENTORY, from cluster.inventory)."""
    for r in plan.of_type(NODE_PATCH):
        value = (get(r.inputs, "metadata", "annotations", default={}) or {}).get(ANNOTATION_INVENTORY)
        if value:
            return str(value)
    return None


def _no_inventory(plan: PlanView, ctx: Context) -> str | None:
    if not plan.of_type(NODE_PATCH):
        return "the stack has no on-prem nodes"
    if _inventory_of(plan) is None:
        return "the stack names no cluster.inventory"
    return None


@rule(
    "node-settings-one-owner",
    "On nodes an Ansible inventory builds, Ansible alone owns driver, toolkit and MIG layout, and each pool matches its inventory group.",
    "mandatory",
    "stack",
    category="ansible",
    not_applicable=_no_inventory,
)
def node_settings_one_owner(plan: PlanView, ctx: Context) -> Iterator[Finding]:
    """Two owners of a node setting fight after every reboot.

    The Ansible `mig` role applies its layout at boot, the operator's mig-manager re-partitions by the node's label,
    evicting the pods that just landed. The inventory is read by ansible-core itself (behaviour.ansible_inventory).
    """
    name = _inventory_of(plan)
    if name is None:
        return
    for r in helm_releases(plan, "gpu-operator"):
        values = r.inputs.get("values") or {}
        owners = (
            ("migManager", "MIG layout", "mig role applies each node's layout at boot, and two owners re-partition after every reboot"),
            ("driver", "driver", "nvidia_driver role installs its own: set gpuOperator.driver: preinstalled"),
            ("toolkit", "container toolkit", "nvidia_container_toolkit role installs its own: set gpuOperator.driver: preinstalled"),
        )
        for key, what, why in owners:
            if truthy(get(values, key, "enabled")):
                yield Finding(r.name, f"the GPU Operator manages the {what} on nodes {name} builds, whose {why}", field=f"values.{key}.enabled")
    root = ctx.root or Path.cwd()
    path = root / name
    first = plan.of_type(NODE_PATCH)[0]
    if not path.is_dir():
        yield Finding(first.name, f"cluster.inventory {name} is not a directory under {root}")
        return
    hosts = read_inventory(path, root, root / "ansible")
    if isinstance(hosts, str):
        yield Finding(first.name, f"cluster.inventory {name}: {hosts}")
        return
    for r in plan.of_type(NODE_PATCH):
        labels = get(r.inputs, "metadata", "labels", default={}) or {}
        node, pool = str(get(r.inputs, "metadata", "name")), labels.get(LABEL_POOL, "?")
        host = hosts.get(node)
        if host is None or "gpu_nodes" not in host.groups:
            yield Finding(r.name, f"node {node} of pool {pool} is not in gpu_nodes of {name}: Ansible never builds it")
            continue
        for label, var, unset in POOL_VARS:
            want = labels.get(label, unset)
            got = resolve(host, var)
            if want is None or (got is None and not var.startswith("gpu_pool_")):
                continue  # a role input the inventory does not set takes the role's default, wired from gpu_pool_*
            if not isinstance(got, (str, int, float, bool)):
                yield Finding(r.name, f"node {node} of pool {pool}: {name} sets {var} to a {type(got).__name__}, not a plain value")
            elif str(got) != str(want):
                shown = got if len(str(got)) <= 80 else f"{str(got)[:80]}..."
                yield Finding(r.name, f"node {node} of pool {pool}: the stack says {label}={want}, {name} says {var}={shown!r}")
