"""Journey: a multi-node training job on an EFA pool exchanges all traffic between its nodes.

Stages, in the order a job meets them: the pool's node group -> its launch template (EFA
interfaces in the EC2 multi-card layout) -> the security groups each interface carries -> EFA
traffic between the same interface of two nodes -> the pods' IP traffic (rendezvous, NCCL bootstrap)
between the nodes' primary interfaces. Upstream behaviour: EC2 security groups as
`gpu_platform.behaviour.security_groups` reproduces them (VPC User Guide, "Security group rules":
stateful, group-referencing rules match any interface carrying the group, protocol -1 = all) and the
EFA guide's requirement that EFA traffic be allowed by rules referencing the group itself. On-prem
stacks have no security groups; their EFA/InfiniBand fabric is outside the plan, so only EKS stacks
with EFA pools walk this journey.
"""

from __future__ import annotations

import pytest

from gpu_platform.behaviour import security_groups as sg
from gpu_platform.catalog import load_catalog
from gpu_platform.efa import efa_devices, efa_pools
from gpu_platform.plan_ids import CLUSTER_SECURITY_GROUP, planned_id
from tests.conftest import plan_for, spec_for

EFA_STACKS = ("prod", "staging")


def fail(stage: str, detail: str) -> None:
    """Stop the journey at `stage`, naming it."""
    pytest.fail(f"stage '{stage}': {detail}", pytrace=False)


@pytest.mark.parametrize("stack", EFA_STACKS)
def test_two_nodes_of_an_efa_pool_exchange_all_traffic(stack: str) -> None:
    """A 2-node EFA job trains: every EFA interface and the primary interface of node A reach node B's, both ways."""
    spec, plan = spec_for(stack), plan_for(stack).resources
    catalog = load_catalog()
    pools = [p for p in efa_pools(spec) if p.workload_class == "training"]
    if not pools:
        fail("pool", f"{stack} has no EFA training pool")
    rules = sg.rules_of(plan) + sg.eks_cluster_group_rules(CLUSTER_SECURITY_GROUP)
    for pool in pools:
        ng = next((r for r in plan if r.type == "aws:eks/nodeGroup:NodeGroup" and r.name == f"pool-{pool.name}-ng"), None)
        if ng is None or int(ng.inputs["scalingConfig"]["maxSize"]) < 2:
            fail("pool", f"{pool.name}: no node group that can hold two nodes")
        assert ng is not None
        template_id = ng.inputs["launchTemplate"]["id"]
        lt = next((r for r in plan if r.type == "aws:ec2/launchTemplate:LaunchTemplate" and planned_id(r.name) == template_id), None)
        if lt is None:
            fail("launch template", f"{pool.name}: node group names launch template {template_id}, which the plan does not create")
        assert lt is not None
        node_a, node_b = sg.launch_template_interfaces(lt, "node-a"), sg.launch_template_interfaces(lt, "node-b")
        want = efa_devices(catalog.instance(pool.instance_types[0]))
        got = sum(1 for i in node_a if i.efa)
        if got != want:
            fail("launch template", f"{lt.name} gives a node {got} EFA interfaces; {pool.instance_types[0]} offers {want}")
        for a in node_a:
            if not a.groups:
                fail("security groups", f"{a.name} carries no security group")
        for a, b in zip(node_a, node_b, strict=True):
            if a.efa:
                verdict = sg.exchange_all(rules, a, b, efa=True)
                if not verdict.allowed:
                    fail("efa traffic", f"{pool.name}: {verdict.stage}: {verdict.reason}")
        primary_a = sg.Interface(node_a[0].name, node_a[0].groups, address="10.0.0.10")
        primary_b = sg.Interface(node_b[0].name, node_b[0].groups, address="10.0.0.11")
        verdict = sg.exchange_all(rules, primary_a, primary_b, efa=False)
        if not verdict.allowed:
            fail("pod traffic", f"{pool.name}: {verdict.stage}: {verdict.reason}")


def test_the_efa_group_is_what_admits_efa_not_the_cluster_group() -> None:
    """Without the EFA group, the cluster group's own rules (self inbound, 0.0.0.0/0 outbound) admit IP but not EFA traffic."""
    plan = plan_for("prod").resources
    rules = sg.rules_of(plan) + sg.eks_cluster_group_rules(CLUSTER_SECURITY_GROUP)
    a = sg.Interface("node-a/efa-only", (CLUSTER_SECURITY_GROUP,), kind="efa-only")
    b = sg.Interface("node-b/efa-only", (CLUSTER_SECURITY_GROUP,), kind="efa-only")
    verdict = sg.exchange_all(rules, a, b, efa=True)
    assert not verdict.allowed and verdict.stage == "egress", verdict
    ip_a = sg.Interface("node-a/primary", (CLUSTER_SECURITY_GROUP,), address="10.0.0.10")
    ip_b = sg.Interface("node-b/primary", (CLUSTER_SECURITY_GROUP,), address="10.0.0.11")
    assert sg.exchange_all(rules, ip_a, ip_b, efa=False).allowed
