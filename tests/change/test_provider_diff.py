"""Provider decisions (terraform-provider-aws eks node_group.go, ec2 launch template) and the per-resource diff."""

from __future__ import annotations

import copy

from gpu_platform.behaviour.provider_diff import LAUNCH_TEMPLATE, NODE_GROUP, NODE_GROUP_FORCE_NEW, decide
from gpu_platform.change.diff import by_key, diff_plans
from gpu_platform.change.lines import key_line
from tests.conftest import plan_for, stack_path

NG = "pool-train-h100-reserved-ng"


def _ng() -> dict:
    return copy.deepcopy(plan_for("prod").named(NG).inputs)


def test_force_new_fields_replace_the_node_group() -> None:
    for field, value in (
        ("instanceTypes", ["p5e.48xlarge"]),
        ("subnetIds", ["subnet-b"]),
        ("capacityType", "SPOT"),
        ("amiType", "AL2023_ARM_64_NVIDIA"),
    ):
        after = {**_ng(), field: value}
        d = decide(NODE_GROUP, _ng(), after)
        assert d is not None and d.action == "replace" and d.replace_fields == (field,), (field, d)


def test_release_version_and_kubernetes_version_roll_nodes_in_place() -> None:
    for field, value in (("releaseVersion", "1.35.7-20260812"), ("version", "1.36")):
        d = decide(NODE_GROUP, _ng(), {**_ng(), field: value})
        assert d is not None and d.action == "update" and d.rolls_nodes, (field, d)


def test_scaling_labels_and_taints_update_without_rolling() -> None:
    after = _ng()
    after["scalingConfig"] = {"minSize": 2, "desiredSize": 2, "maxSize": 4}
    after["labels"] = {**after["labels"], "team": "x"}
    d = decide(NODE_GROUP, _ng(), after)
    assert d is not None and d.action == "update" and not d.rolls_nodes
    assert set(d.fields) == {"scalingConfig.minSize", "scalingConfig.desiredSize", "labels.team"}


def test_launch_template_id_is_force_new_but_version_is_not() -> None:
    assert "launchTemplate.id" in NODE_GROUP_FORCE_NEW and "launchTemplate.version" not in NODE_GROUP_FORCE_NEW
    after = _ng()
    after["launchTemplate"] = {**after["launchTemplate"], "version": "2"}
    d = decide(NODE_GROUP, _ng(), after)
    assert d is not None and d.action == "update" and d.rolls_nodes


def test_a_new_launch_template_version_rolls_its_node_group_only() -> None:
    before = [r.to_json() for r in plan_for("prod").resources]
    after = copy.deepcopy(before)
    lt = next(r for r in after if r["name"] == "pool-train-h100-reserved-lt")
    lt["inputs"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] = 2000
    changes = {c.name: c for c in diff_plans(by_key(before), by_key(after))}
    assert changes["pool-train-h100-reserved-lt"].action == "update"
    assert decide(LAUNCH_TEMPLATE, {"name": "a"}, {"name": "b"}).action == "replace"  # type: ignore[union-attr]
    ng = changes[NG]
    assert ng.action == "update" and ng.rolls_nodes and ng.rolled_by == "pool-train-h100-reserved-lt" and "launchTemplate.version" in ng.fields
    assert set(changes) == {"pool-train-h100-reserved-lt", NG}, "no other node group rolls"


def test_diff_lists_creates_and_deletes_by_type_and_name() -> None:
    before = [r.to_json() for r in plan_for("prod").resources]
    after = [r for r in before if r["name"] != "kueue-flavor-batch-l40s-spot"] + [{"type": "x:y:Z", "name": "new", "inputs": {}}]
    actions = {(c.name, c.action) for c in diff_plans(by_key(before), by_key(after))}
    assert actions == {("kueue-flavor-batch-l40s-spot", "delete"), ("new", "create")}


def test_key_line_finds_the_line_the_user_wrote() -> None:
    text = stack_path("prod").read_text()
    lines = text.splitlines()
    at = key_line(text, "gpu-platform:nodePools[0].instanceTypes")
    assert at is not None and lines[at - 1].strip() == "instanceTypes: [p5.48xlarge]"
    at = key_line(text, "gpu-platform:tenants[1].quotas[0].gpus")
    assert at is not None and "pool: train-h100-reserved, gpus: 8" in lines[at - 1]
    gone = key_line(text, "gpu-platform:nodePools[0].noSuchKey")
    assert gone is not None and lines[gone - 1].strip() == "- name: train-h100-reserved", "a removed key lands on its parent"


def test_kubernetes_objects_are_replaced_on_a_new_name_or_role_ref_only() -> None:
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "a", "namespace": "t"}, "roleRef": {"name": "x"}}
    assert decide("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", rb, {**rb, "roleRef": {"name": "y"}}).action == "replace"  # type: ignore[union-attr]
    renamed = {**rb, "metadata": {"name": "b", "namespace": "t"}}
    assert decide("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", rb, renamed).replace_fields == ("metadata.name",)  # type: ignore[union-attr]
    labelled = {**rb, "metadata": {**rb["metadata"], "labels": {"a": "b"}}}
    assert decide("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", rb, labelled).action == "update"  # type: ignore[union-attr]
