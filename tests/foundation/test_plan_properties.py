"""Properties of the offline plan of every stack: what `pulumi up` would create, checked like a reviewer would."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from gpu_platform import efa, engine
from gpu_platform.catalog import load_catalog
from gpu_platform.engine import Plan, PlannedResource, auto_name, run_program
from gpu_platform.pools import DRA_GPU_RESOURCE, gpu_of, gpus_per_node, node_groups, resources_per_gpu
from gpu_platform.spec.loader import read_stack_config
from gpu_platform.spec.models import NodePool
from gpu_platform.versions import load_lockfile
from tests.conftest import plan_for, spec_for, stack_path

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EKS_STACKS = ("dev", "staging", "prod")


def _pool_resources(plan: Plan, pool: NodePool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(node group inputs, launch template inputs) of one pool."""
    ng = plan.named(f"pool-{pool.name}-ng").inputs
    lt = plan.named(f"pool-{pool.name}-lt").inputs
    return ng, lt


def _taints(ng: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(t["key"], t.get("value", ""), t["effect"]) for t in ng.get("taints", [])}


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_every_gpu_pool_is_tainted_and_labelled(stack: str) -> None:
    plan, spec = plan_for(stack), spec_for(stack)
    catalog = load_catalog()
    for pool in spec.node_pools:
        ng, _ = _pool_resources(plan, pool)
        assert ("nvidia.com/gpu", "present", "NO_SCHEDULE") in _taints(ng), pool.name
        labels = ng["labels"]
        assert labels["gpu-platform.io/workload-class"] == pool.workload_class
        assert labels["gpu-platform.io/capacity-tier"] == pool.capacity
        assert labels["gpu-platform.io/gpu-model"] == gpu_of(pool, catalog).name
        assert ng["tags"]["gpu-platform:pool"] == pool.name
        assert ng["tags"]["gpu-platform:tier"] == pool.capacity
        assert ng["tags"]["gpu-platform:environment"] == spec.environment


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_spot_pools_are_spot_with_interruptible_taint(stack: str) -> None:
    plan, spec = plan_for(stack), spec_for(stack)
    spot = [p for p in spec.node_pools if p.capacity == "spot"]
    assert spot, f"{stack} is expected to have Spot pools"
    for pool in spot:
        ng, _ = _pool_resources(plan, pool)
        assert ng["capacityType"] == "SPOT"
        assert ("gpu-platform.io/interruptible", "true", "NO_SCHEDULE") in _taints(ng)
        assert ng["labels"]["gpu-platform.io/interruptible"] == "true"
        assert len(ng["instanceTypes"]) >= 2, "Spot pools diversify over several instance types"
    for pool in spec.node_pools:
        if pool.capacity != "spot":
            ng, _ = _pool_resources(plan, pool)
            assert ng["capacityType"] in {"ON_DEMAND", "CAPACITY_BLOCK"}
            assert all(t[0] != "gpu-platform.io/interruptible" for t in _taints(ng))


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_launch_templates_require_imdsv2_and_encrypt_volumes(stack: str) -> None:
    plan = plan_for(stack)
    templates = plan.of_type(LAUNCH_TEMPLATE)
    assert len(templates) == len(node_groups(spec_for(stack), load_catalog()))  # every pool, and each Spot pool's fallback group
    for lt in templates:
        assert lt.inputs["metadataOptions"]["httpTokens"] == "required", lt.name
        assert lt.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1
        for bdm in lt.inputs["blockDeviceMappings"]:
            assert bdm["ebs"]["encrypted"] == "true", lt.name
            assert bdm["ebs"]["volumeType"] == "gp3"
            assert bdm["ebs"]["volumeSize"] >= 100


def test_efa_training_pools_get_placement_group_and_all_efa_interfaces() -> None:
    plan, spec = plan_for("prod"), spec_for("prod")
    catalog = load_catalog()
    efa_pools = [p for p in spec.node_pools if p.efa]
    assert {p.name for p in efa_pools} == {"train-h100-reserved", "train-h100-ondemand", "train-h100-block"}
    names = {r.name for r in plan.resources}
    for pool in efa_pools:
        ng, lt = _pool_resources(plan, pool)
        if pool.capacity == "on-demand":  # a new cluster placement group
            pg = plan.named(f"pool-{pool.name}-pg")
            assert pg.inputs["strategy"] == "cluster"
            assert lt["placement"]["groupName"] == auto_name(pg.type, pg.name)
        elif pool.capacity == "reserved":  # the reservation's own placement group, not a new one
            assert f"pool-{pool.name}-pg" not in names
            assert pool.reservation is not None
            assert lt["placement"]["groupName"] == pool.reservation.placement_group == "gpu-prod-h100-cpg"
        else:  # a Capacity Block arrives co-located
            assert f"pool-{pool.name}-pg" not in names and "placement" not in lt
        # EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network
        # cards": ENA primary at card 0 device 0, EFA-only at card 0 device 1, EFA-only at device 0 of
        # every further card: 32 EFA devices and one ENA on a p5.48xlarge.
        layout = {(i["networkCardIndex"], i["deviceIndex"]): i["interfaceType"] for i in lt["networkInterfaces"]}
        assert layout == {(0, 0): "interface", (0, 1): "efa-only", **{(card, 0): "efa-only" for card in range(1, 32)}}
        assert sum(t in ("efa", "efa-only") for t in layout.values()) == catalog.instance("p5.48xlarge").efa_interfaces == 32
        assert all(i["securityGroups"] and "privateIpAddress" not in i for i in lt["networkInterfaces"])
        assert ng["labels"]["gpu-platform.io/efa"] == "true"
        assert len(ng["subnetIds"]) == 1, "an EFA pool lives in one zone"
    for pool in spec.node_pools:
        if not pool.efa:
            _, lt = _pool_resources(plan, pool)
            assert "networkInterfaces" not in lt and "placement" not in lt


def test_reserved_pools_target_their_reservation() -> None:
    plan, spec = plan_for("prod"), spec_for("prod")
    h100 = plan.named("pool-train-h100-reserved-lt").inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert h100 == {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}
    a100 = plan.named("pool-infer-a100-mig-lt").inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert a100 == {"capacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/gpu-prod-a100"}
    for pool in spec.node_pools:
        ng, lt = _pool_resources(plan, pool)
        if pool.capacity == "reserved":
            assert ng["capacityType"] == "ON_DEMAND"
            s = ng["scalingConfig"]
            assert s["minSize"] == s["desiredSize"] == s["maxSize"], "reserved capacity is always on"
        elif pool.capacity != "capacity-block":
            assert "capacityReservationSpecification" not in lt


def test_capacity_block_pool_uses_capacity_block_market() -> None:
    plan = plan_for("prod")
    ng = plan.named("pool-train-h100-block-ng").inputs
    lt = plan.named("pool-train-h100-block-lt").inputs
    assert ng["capacityType"] == "CAPACITY_BLOCK"
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"] == {"capacityReservationId": "cr-0c1b2c3d4e5f6071a"}


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_sharing_labels_select_the_right_config(stack: str) -> None:
    plan, spec = plan_for(stack), spec_for(stack)
    catalog = load_catalog()
    for pool in spec.node_pools:
        labels = _pool_resources(plan, pool)[0]["labels"]
        mode = pool.sharing.mode
        if mode in ("time-slicing", "mps"):
            assert labels["nvidia.com/device-plugin.config"] == f"{mode}-{pool.sharing.replicas}"
        elif mode == "mig":
            assert labels["nvidia.com/mig.config"] == pool.sharing.mig_config
            assert labels["nvidia.com/device-plugin.config"] == "mig-mixed"
        else:
            assert labels["nvidia.com/device-plugin.config"] == "default"
            if gpu_of(pool, catalog).supports_mig:
                assert labels["nvidia.com/mig.config"] == "all-disabled"
            else:
                assert "nvidia.com/mig.config" not in labels


def test_prod_sharing_labels_by_pool() -> None:
    plan = plan_for("prod")
    assert plan.named("pool-infer-h100-mig-ng").inputs["labels"]["nvidia.com/mig.config"] == "all-3g.40gb"
    assert plan.named("pool-infer-a100-mig-ng").inputs["labels"]["nvidia.com/mig.config"] == "all-balanced"
    assert plan.named("pool-train-h100-reserved-ng").inputs["labels"]["nvidia.com/mig.config"] == "all-disabled"
    dev = plan_for("dev")
    assert dev.named("pool-dev-l4-spot-ng").inputs["labels"]["nvidia.com/device-plugin.config"] == "time-slicing-4"


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_node_groups_roll_one_node_at_a_time_and_pin_the_ami(stack: str) -> None:
    lock = load_lockfile()
    for ng in plan_for(stack).of_type(NODE_GROUP):
        assert ng.inputs["updateConfig"]["maxUnavailable"] <= 2, ng.name
        assert ng.inputs["releaseVersion"] == lock.eks.ami_release_version
        assert ng.inputs["version"] == lock.kubernetes.version
        if ng.name != "cluster-system-ng":
            assert ng.inputs["amiType"] == lock.eks.ami_type


@pytest.mark.parametrize("stack", EKS_STACKS)
def test_gpu_pools_can_scale_from_zero(stack: str) -> None:
    """The autoscaler reads node-template tags from the Auto Scaling group to size a zero-node pool."""
    plan, spec = plan_for(stack), spec_for(stack)
    catalog = load_catalog()
    prefix = "k8s.io/cluster-autoscaler"
    for pool in spec.node_pools:
        ng = _pool_resources(plan, pool)[0]
        assert ng["tags"][f"{prefix}/{spec.cluster.name}"] == "owned"
        asg_tags = {
            r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in plan.children(f"pool-{pool.name}") if r.type == "aws:autoscaling/tag:Tag"
        }
        assert all(
            r.inputs["autoscalingGroupName"] == f"eks-{ng['nodeGroupName']}-mock"
            for r in plan.children(f"pool-{pool.name}")
            if r.type == "aws:autoscaling/tag:Tag"
        )
        assert asg_tags[f"{prefix}/node-template/taint/nvidia.com/gpu"] == "present:NoSchedule"
        assert asg_tags[f"{prefix}/node-template/label/gpu-platform.io/pool"] == pool.name
        per_node = gpus_per_node(pool, catalog)
        resources = {k.rsplit("/resources/", 1)[1]: v for k, v in asg_tags.items() if "/resources/" in k}
        # A DRA pool's claimed GPUs are devices, not a resource a node template can carry (its size is fixed: min = max).
        gpu_resources = {name: str(n * per_node) for name, n in resources_per_gpu(pool, catalog).items() if name != DRA_GPU_RESOURCE}
        # MIG, shared and DRA pools say 0 whole GPUs: the autoscaler's AWS template starts from the instance's GPU count.
        whole = {} if "nvidia.com/gpu" in gpu_resources else {"nvidia.com/gpu": "0"}
        assert resources == {**whole, **gpu_resources, **efa.node_resources(pool, catalog)}
        if pool.efa:  # a zero-node EFA pool must still be known to offer EFA devices and hugepages
            assert resources[efa.EFA_RESOURCE] == str(efa.efa_devices(catalog.instance(pool.instance_types[0])))
            assert resources[efa.HUGEPAGES_RESOURCE] == "10240Mi"


def test_shared_and_mig_pools_advertise_their_slices_for_scale_up() -> None:
    dev = {
        r.inputs["tag"]["key"].split("/resources/", 1)[1]: r.inputs["tag"]["value"]
        for r in plan_for("dev").children("pool-dev-a10g-spot")
        if r.type == "aws:autoscaling/tag:Tag" and "/resources/" in r.inputs["tag"]["key"]
    }
    assert dev == {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "4"}  # 1 A10G x 4 time-slicing replicas, no whole GPU
    prod = {
        r.inputs["tag"]["key"].split("/resources/", 1)[1]: r.inputs["tag"]["value"]
        for r in plan_for("prod").children("pool-infer-h100-mig")
        if r.type == "aws:autoscaling/tag:Tag" and "/resources/" in r.inputs["tag"]["key"]
    }
    assert prod == {"nvidia.com/gpu": "0", "nvidia.com/mig-3g.40gb": "16"}  # 8 H100 x all-3g.40gb (2 each), no whole GPU


def test_inference_pools_span_every_zone_unless_bound_to_a_reservation() -> None:
    """On-demand/Spot inference spreads over the zones; a reservation exists in one zone only (EC2 guide, Capacity Reservations)."""
    plan, spec = plan_for("prod"), spec_for("prod")
    for pool in spec.node_pools:
        if pool.workload_class == "inference":
            ng = _pool_resources(plan, pool)[0]
            expected = 1 if pool.capacity == "reserved" else len(spec.network.availability_zones)
            assert len(ng["subnetIds"]) == expected, pool.name


def test_autoscaler_tries_spot_first_then_on_demand() -> None:
    release = plan_for("prod").named("autoscaler-release").inputs
    lock = load_lockfile()
    assert release["chart"] == lock.chart("cluster-autoscaler").chart
    assert release["version"] == lock.chart("cluster-autoscaler").version
    values = release["values"]
    assert values["extraArgs"]["expander"] == "priority"
    assert values["image"]["tag"] == lock.image("cluster-autoscaler").tag
    prio = {int(k): v for k, v in values["expanderPriorities"].items()}

    def priority_of(pool: str) -> int:
        # The name EKS gives a managed node group's Auto Scaling group: eks-<node group name>-<uuid>.
        asg = f"eks-gpu-prod-{pool}-4ec6b1f2-9d3a-7c55-0b8e-1a2b3c4d5e6f"
        (found,) = [p for p, patterns in prio.items() if any(re.match(x, asg) for x in patterns)]
        return found

    assert priority_of("infer-l4-spot") > priority_of("infer-l4-ondemand") > priority_of("train-h100-reserved")
    assert priority_of("batch-l40s-spot") > priority_of("batch-l40s-ondemand")
    # Each Spot pool's fallback group is scaled when its Spot group cannot launch, like any on-demand group.
    assert priority_of("infer-l4-spot") > priority_of("infer-l4-spot-fallback") == priority_of("infer-l4-ondemand")


def test_eks_cluster_is_restricted_encrypted_and_logged() -> None:
    plan = plan_for("prod")
    cluster = plan.of_type("aws:eks/cluster:Cluster")[0].inputs
    assert cluster["vpcConfig"]["endpointPrivateAccess"] is True
    # public only to the deployers (the deploy path), never to the world
    assert cluster["vpcConfig"]["endpointPublicAccess"] is True
    assert cluster["vpcConfig"]["publicAccessCidrs"] == ["198.51.100.0/27"]
    assert cluster["encryptionConfig"]["resources"] == ["secrets"]
    assert set(cluster["enabledClusterLogTypes"]) >= {"api", "audit", "authenticator"}
    key = plan.of_type("aws:kms/key:Key")[0].inputs
    assert key["enableKeyRotation"] is True
    dev = plan_for("dev").of_type("aws:eks/cluster:Cluster")[0].inputs
    assert dev["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_node_role_has_only_the_policies_nodes_need() -> None:
    plan = plan_for("prod")
    arns = {r.inputs["policyArn"] for r in plan.children("cluster") if r.name.startswith("cluster-node-policy-")}
    assert arns == {
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    }


def test_onprem_creates_no_aws_resources_and_patches_nodes() -> None:
    plan = plan_for("onprem")
    spec = spec_for("onprem")
    assert not [r for r in plan.resources if r.type.startswith("aws:")]
    catalog = load_catalog()
    patches = {r.inputs["metadata"]["name"]: r for r in plan.of_type("kubernetes:core/v1:NodePatch")}
    for pool in spec.node_pools:
        for node in pool.nodes:
            patch: PlannedResource = patches[node]
            assert patch.inputs["metadata"]["labels"]["gpu-platform.io/pool"] == pool.name
            assert patch.inputs["metadata"]["labels"]["gpu-platform.io/gpu-model"] == gpu_of(pool, catalog).name
            # Taints are declared, never applied by Pulumi: spec.taints is an atomic list (k8s_node_taints merges them in).
            declared = json.loads(patch.inputs["metadata"]["annotations"]["gpu-platform.io/taints"])
            assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in declared
            assert "spec" not in patch.inputs
    assert patches["dgx-a100-01"].inputs["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g.10gb"
    assert patches["l40s-01"].inputs["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "mps-8"


def test_every_aws_resource_carries_stack_tags() -> None:
    plan = plan_for("prod")
    taggable = [r for r in plan.resources if r.type.startswith("aws:") and "tags" in r.inputs]
    assert len(taggable) > 30
    for r in taggable:
        assert r.inputs["tags"]["gpu-platform:environment"] == "prod", r.name


def test_existing_network_uses_the_given_subnets_and_creates_no_vpc() -> None:
    config = read_stack_config(stack_path("staging"))
    subnets = {"us-east-1a": "subnet-0aaa1111", "us-east-1b": "subnet-0bbb2222", "us-east-1c": "subnet-0ccc3333"}
    config["gpu-platform:network"] = {"mode": "existing", "vpcId": "vpc-0123abcd", "cidr": "10.50.0.0/16", "subnets": subnets}
    plan = run_program(config, "staging-existing-net")
    assert not plan.of_type("aws:ec2/vpc:Vpc")
    assert not plan.of_type("aws:ec2/natGateway:NatGateway")
    cluster = plan.of_type("aws:eks/cluster:Cluster")[0].inputs
    assert sorted(cluster["vpcConfig"]["subnetIds"]) == sorted(subnets.values())
    efa = plan.named("pool-train-a100-ng").inputs
    assert efa["subnetIds"] == ["subnet-0aaa1111"], "an EFA pool stays in its one zone"
    spot = plan.named("pool-infer-l4-spot-ng").inputs
    assert sorted(spot["subnetIds"]) == sorted(subnets.values())


def test_an_input_built_from_an_output_the_engine_does_not_provide_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine runs the program as `pulumi preview` does: an output the mock provider does not return is
    unknown there, and so is every input built from it. A plan must record real inputs, so the engine
    refuses to record one with an unknown input and names the resources (every stack planning at all, as
    the other tests do, shows `computed_outputs` returns each output the program reads)."""
    returned = engine.computed_outputs

    def without_role_name(type_token: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        out = returned(type_token, name, inputs)
        return {k: v for k, v in out.items() if not (type_token == "aws:iam/role:Role" and k == "name")}

    monkeypatch.setattr(engine, "computed_outputs", without_role_name)
    refused = r"outputs the offline engine does not provide .*aws:iam/rolePolicyAttachment:RolePolicyAttachment cluster-"
    with pytest.raises(RuntimeError, match=refused):
        run_program(read_stack_config(stack_path("prod")), "prod")
