"""Cross-field rules of a stack spec, each reported with the exact key path it concerns."""

from __future__ import annotations

from collections import Counter
from pathlib import PurePosixPath

from gpu_platform.aws.access import unreachable_reason
from gpu_platform.catalog import Catalog
from gpu_platform.errors import Problem, did_you_mean, one_of
from gpu_platform.pools import FALLBACK_SUFFIX, NETWORK_TOPOLOGY_FAMILIES, always_present, whole_nodes
from gpu_platform.pools import RESERVED_LABEL_PREFIXES as RESERVED_PREFIXES
from gpu_platform.pricing import missing_rate, tier_rate
from gpu_platform.spec import aws_values
from gpu_platform.spec.identity_checks import check_identity
from gpu_platform.spec.labels import KEY_ALLOWED, VALUE_ALLOWED, kubelet_refuses, label_key_problem, label_value_problem
from gpu_platform.spec.models import NodePool, PlatformSpec, Tenant
from gpu_platform.spec.network_checks import check_network_and_storage
from gpu_platform.spec.quota_checks import check_quotas_within_pools

P = "gpu-platform:"
REPLICAS_MIN, REPLICAS_MAX = 2, 48
# EC2 families with NVIDIA GPUs (EC2 User Guide, "Accelerated computing instances"); the catalog lists those it prices.
NVIDIA_FAMILIES = frozenset(
    {"p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6e-gb200", "g3", "g3s", "g4dn", "g5", "g5g", "g6", "g6e", "g6f", "gr6", "gr6f"}
)
CAPACITY_BLOCK_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en")
FIXED_CAPACITY = ("reserved", "capacity-block")


def _inside_repository(path: str) -> bool:
    """A relative POSIX path that cannot leave the repository root."""
    parts = PurePosixPath(path).parts
    return bool(path.strip()) and not PurePosixPath(path).is_absolute() and ".." not in parts and "\\" not in path


def check_spec(spec: PlatformSpec, catalog: Catalog, file: str) -> list[Problem]:
    """Every cross-field problem in the spec (empty when the stack is valid)."""
    problems: list[Problem] = []
    add = problems.append
    if spec.is_eks:
        problems += aws_values.check_region(spec, file)
        problems += _check_eks(spec, file)
        problems += aws_values.check_cluster(spec, file)
    problems += aws_values.check_tags(spec, file)
    inventory = spec.cluster.inventory
    if inventory is not None and not spec.is_eks and not _inside_repository(inventory):
        why = f"'{inventory}' is not a directory inside the repository"
        add(Problem(file, f"{P}cluster.inventory", why, "allowed: a relative path such as ansible/inventories/dc1"))
    for i, pool in enumerate(spec.node_pools):
        if pool.image is None:
            continue
        key = f"{P}nodePools[{i}].image"
        if not spec.is_eks:
            add(Problem(file, key, "only on EKS pools (bare-metal nodes are built by the Ansible roles)", "remove it"))
        elif not _inside_repository(pool.image.manifest) or not pool.image.manifest.endswith(".json"):
            add(
                Problem(
                    file,
                    f"{key}.manifest",
                    f"'{pool.image.manifest}' is not a JSON file inside the repository",
                    "allowed: a relative path such as ansible/packer/manifests/default-image-manifest.json",
                )
            )
    for key, value in spec.monitoring.rule_labels.items():
        problems += _label_problems(key, value, f"{P}monitoring.ruleLabels.{key}", file)
    if not spec.node_pools and not spec.workers:  # a MultiKueue manager's GPUs are its workers' (spec.federation_checks)
        add(Problem(file, f"{P}nodePools", "no node pools", "declare at least one GPU node pool"))
    for name, n in Counter(p.name for p in spec.node_pools).items():
        if n > 1:
            idx = [i for i, p in enumerate(spec.node_pools) if p.name == name][1]
            add(Problem(file, f"{P}nodePools[{idx}].name", f"duplicate pool name '{name}'", "allowed: names unique within the stack"))
    for i, pool in enumerate(spec.node_pools):
        problems += _check_pool(spec, pool, f"{P}nodePools[{i}]", catalog, file)
    if not spec.is_eks:
        seen: dict[str, str] = {}
        for i, pool in enumerate(spec.node_pools):
            for j, node in enumerate(pool.nodes):
                if node in seen:
                    add(
                        Problem(
                            file,
                            f"{P}nodePools[{i}].nodes[{j}]",
                            f"node '{node}' is already in pool '{seen[node]}'",
                            "allowed: each node in one pool",
                        )
                    )
                seen.setdefault(node, pool.name)
    problems += _check_tenants(spec, file)
    problems += check_quotas_within_pools(spec, catalog, file)
    problems += check_identity(spec, file)
    problems += _check_demand(spec, file)
    problems += _check_kueue_preemption(spec, file)
    problems += _check_job_apis(spec, file)
    problems += _check_alertmanager(spec, file)
    problems += check_network_and_storage(spec, file)
    return problems


def _check_alertmanager(spec: PlatformSpec, file: str) -> list[Problem]:
    """Routes name declared receivers (`null` drops alerts); receiver names are unique."""
    am = spec.monitoring.alertmanager
    at = f"{P}monitoring.alertmanager"
    problems = []
    names = [r.name for r in am.receivers]
    for name, n in Counter(names).items():
        if n > 1:
            problems.append(
                Problem(
                    file, f"{at}.receivers[{names.index(name, names.index(name) + 1)}].name", f"duplicate receiver '{name}'", "allowed: unique names"
                )
            )
    known = ["null", *names]
    for key, value in (("criticalReceiver", am.critical_receiver), ("defaultReceiver", am.default_receiver)):
        if value not in known:
            problems.append(Problem(file, f"{at}.{key}", f"unknown receiver '{value}'{did_you_mean(value, known)}", one_of(known)))
    return problems


def _check_demand(spec: PlatformSpec, file: str) -> list[Problem]:
    """Each class's demand once, and only for classes the stack has pools for (else coverage is meaningless)."""
    out = []
    if spec.workers and spec.demand:
        # The capacity rules compare one cluster's pools with the demand; a federation's is spread over its workers.
        why = "demand is compared with one cluster's pools; a MultiKueue manager has none, and per-worker demand is not built"
        return [Problem(file, f"{P}demand", why, "allowed: no demand with workers (docs/multi-cluster.md, 'Not supported yet')")]
    classes = {p.workload_class for p in spec.node_pools}
    seen: set[str] = set()
    for i, d in enumerate(spec.demand):
        at = f"{P}demand[{i}].workloadClass"
        if d.workload_class in seen:
            out.append(Problem(file, at, f"'{d.workload_class}' is listed twice", "allowed: each workload class once"))
        elif d.workload_class not in classes:
            out.append(Problem(file, at, f"no node pool serves '{d.workload_class}'", f"allowed: {', '.join(sorted(classes))}"))
        seen.add(d.workload_class)
    return out


def _check_eks(spec: PlatformSpec, file: str) -> list[Problem]:
    out: list[Problem] = []
    net = spec.network
    if not spec.region:
        out.append(Problem(file, "aws:region", "required for an EKS stack", "set aws:region, e.g. us-east-1"))
    if net.mode == "new":
        if len(net.availability_zones) < 2:
            out.append(
                Problem(
                    file,
                    f"{P}network.availabilityZones",
                    f"{len(net.availability_zones)} zone(s) given",
                    "allowed: at least 2 zones (EKS needs subnets in two)",
                )
            )
        # Zones are judged only against a region AWS has; a misspelled region is reported once, as itself.
        region = spec.region if spec.region in aws_values.aws_regions() else None
        for i, az in enumerate(net.availability_zones):
            why = aws_values.zone_problem(az, region) if region else None
            if region and why:
                out.append(Problem(file, f"{P}network.availabilityZones[{i}]", why, f"allowed: {region}a, {region}b, ... (region code + one letter)"))
        for az, n in Counter(net.availability_zones).items():
            if n > 1:
                out.append(Problem(file, f"{P}network.availabilityZones", f"zone '{az}' listed twice", "allowed: distinct zones"))
    else:
        if not net.vpc_id:
            out.append(Problem(file, f"{P}network.vpcId", "required when network.mode is existing", "allowed: vpc-<hex>"))
        if "cidr" not in net.model_fields_set:
            # The default (a new VPC's) would name the wrong addresses in every tenant's NetworkPolicies: the
            # API endpoint's ENIs, the interface endpoints, `ingress.vpc`, and the Service CIDR EKS picks from it.
            out.append(
                Problem(
                    file,
                    f"{P}network.cidr",
                    "required when network.mode is existing (tenant NetworkPolicies name the VPC's CIDR)",
                    "allowed: your VPC's primary IPv4 CIDR, e.g. 10.50.0.0/16",
                )
            )
        if len(net.subnets) < 2:
            out.append(
                Problem(file, f"{P}network.subnets", f"{len(net.subnets)} subnet(s) given", "allowed: at least 2 private subnets, as zone: subnet-id")
            )
    if spec.cluster.kubeconfig:
        out.append(Problem(file, f"{P}cluster.kubeconfig", "only for cluster.provider existing", "remove it, or set provider: existing"))
    if spec.cluster.inventory:
        why = "EKS nodes come from their AMI and node groups, not from Ansible"
        out.append(Problem(file, f"{P}cluster.inventory", f"only for cluster.provider existing ({why})", "remove it, or set provider: existing"))
    unreachable = unreachable_reason(spec)
    if unreachable is not None:
        out.append(
            Problem(
                file,
                f"{P}cluster.endpointPublicAccess",
                unreachable,
                "allowed: endpointPublicAccess: true with publicAccessCidrs (the deployers' egress CIDRs), "
                "or network.mode: existing with cluster.deployerCidrs (networks routed to that VPC)",
            )
        )
    c = spec.cluster.system_nodes
    if not c.min_size <= c.desired_size <= c.max_size:
        out.append(
            Problem(
                file, f"{P}cluster.systemNodes", f"min {c.min_size}, desired {c.desired_size}, max {c.max_size}", "allowed: min <= desired <= max"
            )
        )
    return out


def _check_pool(spec: PlatformSpec, pool: NodePool, at: str, catalog: Catalog, file: str) -> list[Problem]:
    out: list[Problem] = []
    add = out.append
    out += _check_node_labels(pool, at, spec.is_eks, file)
    out += _check_fallback(spec, pool, at, file)
    out += _check_whole_nodes(spec, pool, at, file)
    out += _check_allocation(spec, pool, at, file)
    gpu_name: str | None = None
    if spec.is_eks:
        if pool.scaling is None:
            add(Problem(file, f"{at}.scaling", "required key is missing", "allowed: {min, desired, max}"))
        else:
            s = pool.scaling
            if not s.min_size <= s.desired_size <= s.max_size:
                add(Problem(file, f"{at}.scaling", f"min {s.min_size}, desired {s.desired_size}, max {s.max_size}", "allowed: min <= desired <= max"))
        for key, value in (("gpuModel", pool.gpu_model), ("gpusPerNode", pool.gpus_per_node), ("nodes", pool.nodes or None)):
            if value is not None:
                add(
                    Problem(
                        file, f"{at}.{key}", "only for pools of an existing (on-prem) cluster", "remove it: EKS pools take this from instanceTypes"
                    )
                )
        if not pool.instance_types:
            add(Problem(file, f"{at}.instanceTypes", "no instance types", "allowed: one or more EC2 GPU instance types, e.g. g6.xlarge"))
        known = [t for t in pool.instance_types if t in catalog.instance_types]
        for j, t in enumerate(pool.instance_types):
            if t in catalog.instance_types:
                continue
            # An EC2 type botocore knows but the catalog does not: a newer NVIDIA type, or not a GPU type at all (no typo to suggest).
            ec2_knows = t in aws_values.ec2_instance_types()
            if ec2_knows and t.split(".", 1)[0] in NVIDIA_FAMILIES:
                what = "is an NVIDIA GPU type the catalog does not list yet (add it to data/catalog.yaml with its GPU, count and price)"
            elif ec2_knows:
                what = "is not a GPU instance type (an EC2 type without an NVIDIA GPU)"
            else:
                what = "is unknown"
            hint = "" if ec2_knows else did_you_mean(t, catalog.instance_types)
            add(
                Problem(
                    file,
                    f"{at}.instanceTypes[{j}]",
                    f"'{t}' {what}{hint}",
                    "allowed: a GPU instance type: " + one_of(catalog.instance_types).removeprefix("allowed: "),
                )
            )
        if known:
            first = catalog.instance(known[0])
            gpu_name = first.gpu.name
            for t in known[1:]:
                it = catalog.instance(t)
                if it.gpu.name != first.gpu.name or it.gpus != first.gpus:
                    j = pool.instance_types.index(t)
                    add(
                        Problem(
                            file,
                            f"{at}.instanceTypes[{j}]",
                            f"'{t}' has {it.gpus}x {it.gpu.name}, unlike {known[0]} ({first.gpus}x {first.gpu.name})",
                            "allowed: types with the same GPU model and count in one pool",
                        )
                    )
        out += _check_capacity(pool, at, catalog, file)
        out += _check_rates(pool, at, catalog, file)
        zones = spec.network.zones()
        for j, az in enumerate(pool.availability_zones):
            if az not in zones:
                add(Problem(file, f"{at}.availabilityZones[{j}]", f"'{az}' is not one of the network's zones", one_of(zones)))
        if pool.efa:
            for t in known:
                if not catalog.instance(t).supports_efa:
                    add(
                        Problem(
                            file,
                            f"{at}.efa",
                            f"'{t}' has no EFA network interface",
                            "allowed: efa on EFA-capable types (p4d, p5, g6e.8xlarge and larger, ...)",
                        )
                    )
            # Fixed-capacity pools already report their zone count against the reservation.
            if len(pool.availability_zones) != 1 and pool.capacity not in FIXED_CAPACITY:
                add(
                    Problem(
                        file,
                        f"{at}.availabilityZones",
                        "an EFA pool needs exactly one zone",
                        "allowed: one zone (its cluster placement group lives in one zone)",
                    )
                )
    else:
        eks_only: tuple[tuple[str, object], ...] = (
            ("instanceTypes", pool.instance_types or None),
            ("reservation", pool.reservation),
            ("scaling", pool.scaling),
            ("availabilityZones", pool.availability_zones or None),
        )
        for field_name, given in eks_only:
            if given is not None:
                add(Problem(file, f"{at}.{field_name}", "only for pools of an EKS cluster", "remove it: an on-prem pool is its listed nodes"))
        if pool.efa:
            add(Problem(file, f"{at}.efa", "EFA is an AWS network interface", "remove it for on-prem pools"))
        if pool.capacity not in ("reserved", "on-demand"):
            add(Problem(file, f"{at}.capacity", f"'{pool.capacity}' is not available on bare metal", "allowed: reserved, on-demand"))
        if pool.gpu_model is None:
            add(Problem(file, f"{at}.gpuModel", "required for an on-prem pool", one_of(catalog.gpus)))
        elif pool.gpu_model not in catalog.gpus:
            add(
                Problem(
                    file, f"{at}.gpuModel", f"unknown GPU model '{pool.gpu_model}'{did_you_mean(pool.gpu_model, catalog.gpus)}", one_of(catalog.gpus)
                )
            )
        else:
            gpu_name = pool.gpu_model
        if pool.gpus_per_node is None:
            add(Problem(file, f"{at}.gpusPerNode", "required for an on-prem pool", "allowed: 1..16"))
        if not pool.nodes:
            add(Problem(file, f"{at}.nodes", "no nodes listed", "allowed: the Kubernetes node names of the pool's machines"))
    if gpu_name is not None:
        out += _check_sharing(pool, at, catalog, gpu_name, file)
    return out


WHOLE_NODES_SUFFIX = "-whole-nodes"  # gpu_platform.k8s.kueue.WHOLE_NODES_QUEUE (that module imports this one's package)
# EKS CreateNodegroup: nodegroupName is at most 63 characters (the node group is `<cluster>-<pool>`).
NODEGROUP_NAME_MAX = 63


def _check_fallback(spec: PlatformSpec, pool: NodePool, at: str, file: str) -> list[Problem]:
    """`fallback` only on Spot pools; the generated `<pool>-fallback` group's name is free and short enough."""
    if pool.fallback is not None and pool.capacity != "spot":
        return [Problem(file, f"{at}.fallback", f"set on a {pool.capacity} pool", "allowed: on spot pools only (their on-demand fallback group)")]
    if pool.capacity != "spot" or pool.fallback is False or not spec.is_eks:
        return []
    name = pool.name + FALLBACK_SUFFIX
    if any(p.name == name for p in spec.node_pools):
        return [
            Problem(
                file,
                f"{at}.name",
                f"'{pool.name}' makes a fallback group '{name}', which another pool is named",
                "rename that pool, or set fallback: false",
            )
        ]
    group = f"{spec.cluster.name}-{name}"
    if len(group) > NODEGROUP_NAME_MAX:
        return [
            Problem(
                file,
                f"{at}.name",
                f"fallback node group '{group}' is {len(group)} characters",
                f"allowed: cluster name and pool name together at most {NODEGROUP_NAME_MAX - len(FALLBACK_SUFFIX) - 1} characters",
            )
        ]
    return []


def _check_allocation(spec: PlatformSpec, pool: NodePool, at: str, file: str) -> list[Problem]:
    """`allocation: dra` only where the DRA path works end to end (docs/dra.md, "What is not supported").

    Whole GPUs only: the DRA driver's chart puts every MIG profile in one DeviceClass (mig.nvidia.com), and Kueue counts
    claimed devices per DeviceClass (Configuration resources.deviceClassMappings), so a 1g and a 7g slice would cost the
    same quota; time-slicing and MPS are device-plugin settings. No Topology-Aware Scheduling (Kueue places DRA
    claims without it). A fixed size: the cluster-autoscaler learns a group's devices from a running node's
    ResourceSlices only with its alpha DRA flag, and never for a group scaled to zero.
    """
    if pool.allocation != "dra":
        return []
    out: list[Problem] = []
    if not spec.is_eks:
        # ansible/roles/k8s_node_maintenance (release.yml) uncordons a node once it reports nvidia.com/gpu or MIG
        # allocatable, which a node without the device plugin never does: every upgrade or repair would leave it cordoned.
        out.append(
            Problem(
                file,
                f"{at}.allocation",
                "dra on an existing (on-prem) cluster",
                "allowed: device-plugin (the Ansible node maintenance waits for nvidia.com/gpu allocatable, which a DRA node never reports)",
            )
        )
    if pool.capacity not in ("reserved", "on-demand"):
        out.append(
            Problem(
                file,
                f"{at}.capacity",
                f"{pool.capacity} for a DRA pool",
                "allowed: reserved or on-demand (a DRA pool has a fixed size; Spot's fallback and a Capacity Block scale from zero)",
            )
        )
    if pool.sharing.mode != "none":
        out.append(
            Problem(
                file,
                f"{at}.sharing.mode",
                f"{pool.sharing.mode} on a DRA pool",
                "allowed: none (a DRA pool hands out whole GPUs by claim; MIG and time-slicing stay on device-plugin pools)",
            )
        )
    if pool.whole_nodes:
        out.append(Problem(file, f"{at}.wholeNodes", "on a DRA pool", "allowed: false (Kueue's topology placement does not place DRA claims)"))
    if pool.scaling is not None and pool.scaling.min_size != pool.scaling.max_size:
        s = pool.scaling
        out.append(
            Problem(
                file,
                f"{at}.scaling",
                f"min {s.min_size}, max {s.max_size} on a DRA pool",
                "allowed: min = max (the autoscaler cannot size a group from devices it has not seen)",
            )
        )
    if pool.scaling is None and not pool.nodes:
        out.append(Problem(file, f"{at}.nodes", "a DRA pool with no nodes", "allowed: the pool's node names"))
    return out


def _check_whole_nodes(spec: PlatformSpec, pool: NodePool, at: str, file: str) -> list[Problem]:
    """`wholeNodes` only where Kueue's TAS can place pods; `networkTopology` only where AWS sets the labels."""
    out: list[Problem] = []
    if pool.whole_nodes:
        if not always_present(pool):
            # kueue pkg/cache/scheduler/tas_flavor_snapshot.go findLevelWithFitDomains: no node, no domain, no fit; the
            # job stays suspended, so no pod asks the autoscaler for one (only a ProvisioningRequest check would).
            out.append(
                Problem(
                    file,
                    f"{at}.wholeNodes",
                    f"a {pool.capacity} pool that can scale to zero: Kueue's topology placement needs its nodes to exist",
                    "allowed: on reserved pools with min = max, and on-prem pools",
                )
            )
        if pool.sharing.mode != "none":
            out.append(Problem(file, f"{at}.wholeNodes", f"on a {pool.sharing.mode} pool", "allowed: on pools of whole GPUs (sharing: none)"))
    if pool.network_topology:
        families = ", ".join(NETWORK_TOPOLOGY_FAMILIES)
        if not (spec.is_eks and pool.efa and whole_nodes(pool)):
            out.append(Problem(file, f"{at}.networkTopology", "needs an EKS EFA pool with wholeNodes", "allowed: true on such pools only"))
        elif bad := [t for t in pool.instance_types if t.split(".")[0] not in NETWORK_TOPOLOGY_FAMILIES]:
            out.append(Problem(file, f"{at}.networkTopology", f"AWS gives {bad[0]} no network topology labels", f"allowed: types of {families}"))
    return out


def _check_node_labels(pool: NodePool, at: str, eks: bool, file: str) -> list[Problem]:
    """Pool labels the platform, the API server, the kubelet and (EKS) the node group API accept."""
    out: list[Problem] = []
    for key, value in pool.labels.items():
        where = f"{at}.labels.{key}"
        if key.startswith(RESERVED_PREFIXES):
            out.append(Problem(file, where, "label key uses a domain the platform manages", f"allowed: keys outside {', '.join(RESERVED_PREFIXES)}"))
        elif kubelet_refuses(key):
            out.append(
                Problem(
                    file,
                    where,
                    f"the kubelet refuses node label '{key}' (kubernetes.io and k8s.io domains are reserved), so the node never joins",
                    "allowed: your own domain (example.com/team), or the node.kubernetes.io / kubelet.kubernetes.io domains",
                )
            )
        invalid = _label_problems(key, value, where, file)
        out += invalid
        if eks and not invalid:
            # EKS API model: labelKey 1..63 characters in all (prefix included), labelValue 1..63.
            if len(key) > aws_values.EKS_LABEL_MAX:
                out.append(Problem(file, where, f"label key is {len(key)} characters", "allowed: at most 63 with the prefix (EKS labelKey)"))
            if value == "":
                out.append(Problem(file, where, "label value is empty", "allowed: 1..63 characters (EKS labelValue has no empty form)"))
    return out


def _label_problems(key: str, value: str, at: str, file: str) -> list[Problem]:
    """The API server's label-key and label-value rules (labels.py)."""
    out = []
    key_problem = label_key_problem(key)
    if key_problem:
        out.append(Problem(file, at, key_problem, KEY_ALLOWED))
    value_problem = label_value_problem(value)
    if value_problem:
        out.append(Problem(file, at, value_problem, VALUE_ALLOWED))
    return out


def _check_block_dates(pool: NodePool, at: str, file: str) -> list[Problem]:
    """Block dates: only on Capacity Block pools, both or neither, start before end."""
    r = pool.reservation
    if r is None or (r.start is None and r.end is None):
        return []
    if pool.capacity != "capacity-block":
        key = "start" if r.start is not None else "end"
        return [Problem(file, f"{at}.reservation.{key}", f"dates on a {pool.capacity} pool", "allowed: start and end on capacity-block pools only")]
    if r.start is None or r.end is None:
        missing = "start" if r.start is None else "end"
        return [Problem(file, f"{at}.reservation.{missing}", "missing", "allowed: both start and end of the block (YYYY-MM-DD)")]
    if r.start >= r.end:
        return [Problem(file, f"{at}.reservation.end", f"{r.end} is not after start {r.start}", "allowed: a day after the block's start")]
    return []


def _check_rates(pool: NodePool, at: str, catalog: Catalog, file: str) -> list[Problem]:
    """Every instance type has a rate for the pool's tier (gpu_platform.pricing.tier_rate), so `check` and `capacity` agree.

    The same line `capacity` would print when it prices the pool: a type AWS sells only as Capacity
    Blocks has no On-Demand rate, so no reserved, on-demand or Spot pool of it can be costed or bought.
    """
    out = []
    for j, t in enumerate(pool.instance_types):
        itype = catalog.instance_types.get(t)
        if itype is None or (pool.capacity == "capacity-block" and itype.family not in CAPACITY_BLOCK_FAMILIES):
            continue  # reported above: unknown, or not sold as a Capacity Block
        if tier_rate(itype, pool.capacity, catalog) is None:
            out.append(Problem(file, f"{at}.instanceTypes[{j}]", *missing_rate(itype, pool.capacity)))
    return out


def _check_capacity(pool: NodePool, at: str, catalog: Catalog, file: str) -> list[Problem]:
    out: list[Problem] = []
    r = pool.reservation
    if pool.capacity in ("on-demand", "spot"):
        if r is not None:
            out.append(Problem(file, f"{at}.reservation", f"a {pool.capacity} pool takes no reservation", "remove it, or set capacity: reserved"))
        return out
    out += _check_block_dates(pool, at, file)
    if r is None or (r.id is None and r.resource_group_arn is None):
        hint = (
            "reservation.id (cr-...) or reservation.resourceGroupArn"
            if pool.capacity == "reserved"
            else "reservation.id of the Capacity Block (cr-...)"
        )
        out.append(Problem(file, f"{at}.reservation", f"a {pool.capacity} pool must name its reservation", f"allowed: {hint}"))
    elif r.id and r.resource_group_arn:
        out.append(Problem(file, f"{at}.reservation", "both id and resourceGroupArn given", "allowed: exactly one of them"))
    elif pool.capacity == "capacity-block" and r.resource_group_arn:
        out.append(Problem(file, f"{at}.reservation.resourceGroupArn", "a Capacity Block is targeted by id", "allowed: reservation.id (cr-...)"))
    if len(pool.instance_types) != 1:
        out.append(
            Problem(
                file,
                f"{at}.instanceTypes",
                f"{len(pool.instance_types)} types for a {pool.capacity} pool",
                "allowed: exactly one (a reservation is for one instance type)",
            )
        )
    if pool.capacity == "capacity-block":
        for j, t in enumerate(pool.instance_types):
            if t in catalog.instance_types and catalog.instance(t).family not in CAPACITY_BLOCK_FAMILIES:
                out.append(
                    Problem(
                        file,
                        f"{at}.instanceTypes[{j}]",
                        f"'{t}' is not sold as a Capacity Block",
                        f"allowed: {', '.join(CAPACITY_BLOCK_FAMILIES)} families",
                    )
                )
    s = pool.scaling
    if pool.capacity == "reserved" and s is not None and not s.min_size == s.desired_size == s.max_size:
        out.append(
            Problem(
                file,
                f"{at}.scaling",
                f"min {s.min_size}, desired {s.desired_size}, max {s.max_size} for {pool.capacity} capacity",
                "allowed: min = desired = max (reserved capacity is paid for whether used or not, so it is always on)",
            )
        )
    if pool.capacity == "capacity-block" and s is not None and s.min_size != 0:
        out.append(
            Problem(
                file,
                f"{at}.scaling.min",
                f"{s.min_size} for a Capacity Block pool",
                "allowed: 0 (the block's instances end with the block, so the group must be able to sit at 0 nodes)",
            )
        )
    # EC2 user guide, "Capacity Reservations" / "Capacity Blocks for ML": each is bound to one
    # Availability Zone; instances launched elsewhere run at On-Demand price (ODCR) or fail (block).
    if len(pool.availability_zones) != 1:
        given = ", ".join(pool.availability_zones) or "none (every cluster zone)"
        out.append(
            Problem(
                file,
                f"{at}.availabilityZones",
                f"{given} for a {pool.capacity} pool",
                "allowed: exactly one zone, the reservation's (instances outside it are billed On-Demand or fail to launch)",
            )
        )
    if r is not None and r.placement_group is not None and not (pool.capacity == "reserved" and pool.efa):
        out.append(
            Problem(
                file,
                f"{at}.reservation.placementGroup",
                f"set on a {pool.capacity} pool{'' if pool.efa else ' without efa'}",
                "allowed: only on a reserved EFA pool whose reservation sits in that cluster placement group",
            )
        )
    return out


def _check_sharing(pool: NodePool, at: str, catalog: Catalog, gpu_name: str, file: str) -> list[Problem]:
    out: list[Problem] = []
    s = pool.sharing
    gpu = catalog.gpu(gpu_name)
    at = f"{at}.sharing"
    if s.mode != "none" and s.mode not in gpu.sharing:
        allowed = ", ".join(["none", *gpu.sharing])
        out.append(
            Problem(
                file,
                f"{at}.mode",
                f"{gpu.name} does not support {s.mode}",
                f"allowed for {gpu.name}: {allowed} (MIG needs an A100/H100/H200-class GPU)",
            )
        )
        return out
    if s.mode in ("time-slicing", "mps"):
        if s.replicas is None:
            out.append(Problem(file, f"{at}.replicas", f"required for {s.mode}", f"allowed: {REPLICAS_MIN}..{REPLICAS_MAX}"))
        elif not REPLICAS_MIN <= s.replicas <= REPLICAS_MAX:
            out.append(Problem(file, f"{at}.replicas", f"{s.replicas} is out of range", f"allowed: {REPLICAS_MIN}..{REPLICAS_MAX}"))
        if s.mig_config is not None:
            out.append(
                Problem(
                    file,
                    f"{at}.migConfig",
                    f"set with mode {s.mode}",
                    "allowed: migConfig only with mode mig (time-slicing and MIG never share a pool)",
                )
            )
    elif s.mode == "mig":
        if s.replicas is not None:
            out.append(Problem(file, f"{at}.replicas", "set with mode mig", "allowed: replicas only with time-slicing or mps"))
        if s.mig_config is None:
            out.append(Problem(file, f"{at}.migConfig", "required for mode mig", one_of(gpu.mig_configs)))
        elif s.mig_config not in gpu.mig_configs:
            out.append(
                Problem(
                    file,
                    f"{at}.migConfig",
                    f"'{s.mig_config}' does not exist for {gpu.name}{did_you_mean(s.mig_config, gpu.mig_configs)}",
                    f"allowed for {gpu.name}: {', '.join(sorted(gpu.mig_configs))}",
                )
            )
    else:
        for key, value in (("replicas", s.replicas), ("migConfig", s.mig_config)):
            if value is not None:
                out.append(Problem(file, f"{at}.{key}", "set with mode none", "allowed: only with a sharing mode (time-slicing, mps, mig)"))
    return out


def _check_tenants(spec: PlatformSpec, file: str) -> list[Problem]:
    out: list[Problem] = []
    pools = {p.name for p in spec.node_pools}
    for attr, label in (("name", "tenant name"), ("ns", "namespace")):
        counts = Counter(getattr(t, attr) for t in spec.tenants)
        for value, n in counts.items():
            if n > 1:
                idx = [i for i, t in enumerate(spec.tenants) if getattr(t, attr) == value][1]
                key = "name" if attr == "name" else "namespace"
                out.append(Problem(file, f"{P}tenants[{idx}].{key}", f"duplicate {label} '{value}'", "allowed: unique per stack"))
    system = {"kube-system", "kube-public", "default", "gpu-operator", "kueue-system", "volcano-system", spec.monitoring.namespace}
    for i, t in enumerate(spec.tenants):
        if t.ns in system:
            out.append(Problem(file, f"{P}tenants[{i}].namespace", f"'{t.ns}' is a platform namespace", "allowed: a namespace of the tenant's own"))
        if t.name.endswith(WHOLE_NODES_SUFFIX):
            # gpu_platform.k8s.kueue.whole_nodes_queue_name: `<tenant>-whole-nodes` is another tenant's second ClusterQueue.
            why = f"'{t.name}' ends in '{WHOLE_NODES_SUFFIX}', the suffix of the tenants' whole-node ClusterQueues"
            out.append(Problem(file, f"{P}tenants[{i}].name", why, f"allowed: a name not ending in '{WHOLE_NODES_SUFFIX}'"))
        out += _check_quotas(t, i, pools, file)
    return out


def _check_quotas(t: Tenant, i: int, pools: set[str], file: str) -> list[Problem]:
    out: list[Problem] = []
    seen: set[str] = set()
    for j, q in enumerate(t.quotas):
        at = f"{P}tenants[{i}].quotas[{j}]"
        if q.pool not in pools:
            out.append(Problem(file, f"{at}.pool", f"unknown pool '{q.pool}'{did_you_mean(q.pool, pools)}", one_of(pools)))
        if q.pool in seen:
            out.append(Problem(file, f"{at}.pool", f"pool '{q.pool}' appears twice for tenant '{t.name}'", "allowed: one quota per pool"))
        seen.add(q.pool)
        if q.lending_limit is not None and q.lending_limit > q.gpus:
            out.append(Problem(file, f"{at}.lendingLimit", f"{q.lending_limit} is more than the tenant's {q.gpus} GPUs", f"allowed: 0..{q.gpus}"))
    return out


def _check_job_apis(spec: PlatformSpec, file: str) -> list[Problem]:
    """Kubeflow Trainer builds every TrainJob as a JobSet: without JobSet's CRD its controller cannot start.

    kubeflow/trainer (the lockfile's tag) pkg/runtime/framework/plugins/jobset/jobset.go: "JobSet CRDs must be installed in advance".
    """
    apis = spec.queueing.job_apis
    if apis.trainer and not apis.jobset:
        return [
            Problem(
                file,
                f"{P}queueing.jobApis.trainer",
                "Kubeflow Trainer runs every TrainJob as a JobSet, and jobset is off",
                "allowed: jobset: true with trainer, or trainer: false",
            )
        ]
    return []


def _check_kueue_preemption(spec: PlatformSpec, file: str) -> list[Problem]:
    """The borrowWithinCohort setting exists only in classical preemption: under fair sharing Kueue never reads it.

    Kueue's Preemptor.getTargets (pkg/scheduler/preemption/preemption.go) takes fairPreemptions whenever
    the `fairSharing` configuration is present, and that path consults only withinClusterQueue and
    reclaimWithinCohort; accepting the setting would promise a guard that does not run.
    """
    kueue = spec.queueing.kueue
    if kueue.enabled and kueue.fair_sharing and kueue.preemption.borrow_within_cohort is not None:
        return [
            Problem(
                file,
                f"{P}queueing.kueue.preemption.borrowWithinCohort",
                f"'{kueue.preemption.borrow_within_cohort}' is ignored by Kueue when fairSharing is true (fair sharing preempts by share)",
                "allowed: remove it, or set queueing.kueue.fairSharing: false to keep classical preemption with it",
            )
        ]
    return []
