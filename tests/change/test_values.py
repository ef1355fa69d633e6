"""Old and new values in the change report: secrets never printed, named entries matched by name, hostile sizes cut."""

from __future__ import annotations

from gpu_platform.change.values import MASK, MISSING, field_changes, key_changes, shown
from gpu_platform.spec.secrets import PLACEHOLDER


def test_a_secure_config_value_is_masked_on_both_sides() -> None:
    before = {"gpu-platform:alerting": {"slackWebhook": {"secure": "v1:AAAA"}}}
    after = {"gpu-platform:alerting": {"slackWebhook": {"secure": "v1:BBBB"}}}
    [change] = key_changes(before, after)
    assert (change.key, change.before, change.after) == ("gpu-platform:alerting.slackWebhook", MASK, MASK)
    assert "v1:" not in change.text()


def test_a_secret_appearing_or_going_is_masked_and_the_absent_side_said() -> None:
    [change] = key_changes({"a": {}}, {"a": {"token": {"secure": "v1:CC"}}})
    assert change.before is MISSING and change.after == MASK
    assert change.text() == "a.token: (absent) -> (secret)"
    assert change.to_json() == {"key": "a.token", "after": MASK}


def test_kubernetes_secret_data_and_the_offline_placeholder_are_masked() -> None:
    values = field_changes("kubernetes:core/v1:Secret", {"data": {"kubeconfig": "YWJj"}}, {"data": {"kubeconfig": "ZGVm"}})
    assert [(v.key, v.before, v.after) for v in values] == [("data.kubeconfig", MASK, MASK)]
    [v] = field_changes("kubernetes:helm.sh/v3:Release", {"values": {"url": "a"}}, {"values": {"url": PLACEHOLDER}})
    assert v.after == MASK and v.before == MASK
    [v] = field_changes("aws:rds/instance:Instance", {"password": "hunter2hunter2"}, {"password": "s3cr3tS3cr3t"})
    assert v.before == MASK and v.after == MASK


def test_an_ordinary_value_is_shown() -> None:
    [v] = field_changes("aws:eks/nodeGroup:NodeGroup", {"scalingConfig": {"maxSize": 2}}, {"scalingConfig": {"maxSize": 4}})
    assert v.text() == "scalingConfig.maxSize: 2 -> 4"


def test_pools_and_quotas_are_matched_by_name_so_an_insert_shows_one_change() -> None:
    before = {"gpu-platform:nodePools": [{"name": "a", "gpus": 1}, {"name": "b", "gpus": 2}]}
    after = {"gpu-platform:nodePools": [{"name": "new", "gpus": 9}, {"name": "a", "gpus": 1}, {"name": "b", "gpus": 3}]}
    assert [c.key for c in key_changes(before, after)] == ["gpu-platform:nodePools[b].gpus", "gpu-platform:nodePools[new]"]
    quotas = key_changes({"q": [{"pool": "x", "gpus": 8}]}, {"q": [{"pool": "x", "gpus": 4}, {"pool": "y", "gpus": 1}]})
    assert [(c.key, c.before, c.after) for c in quotas] == [("q[x].gpus", 8, 4), ("q[y]", MISSING, {"pool": "y", "gpus": 1})]


def test_duplicate_names_compare_the_list_whole() -> None:
    [c] = key_changes({"l": [{"name": "a"}, {"name": "a"}]}, {"l": [{"name": "a"}]})
    assert c.key == "l"


def test_a_huge_value_is_cut_with_what_was_left_out() -> None:
    text = shown("x" * 100_000)
    assert len(text) < 120 and text.endswith("(+99920 chars)")
    assert "\n" not in shown("a\nb")


def test_a_secret_deep_inside_an_added_mapping_or_a_tag_list_is_masked() -> None:
    """Found by review: a new key holding `{externalId: {secure: ...}}` printed the ciphertext; tag lists printed a password."""
    [added] = key_changes({}, {"aws:assumeRole": {"roleArn": "arn:aws:iam::1:role/d", "externalId": {"secure": "AAABAcipher"}}})
    assert "AAABAcipher" not in added.text() and added.after["externalId"] == MASK and added.after["roleArn"].startswith("arn:")
    tags = [{"key": "team", "value": "ml"}, {"key": "db-password", "value": "hunter2"}]
    [v] = field_changes(
        "aws:ec2/launchTemplate:LaunchTemplate", {"tagSpecifications": [{"tags": {}}]}, {"tagSpecifications": [{"tags": {"db-password": "hunter2"}}]}
    )
    assert "hunter2" not in str(v.to_json())
    [w] = field_changes("t", {"tags": []}, {"tags": tags})
    assert "hunter2" not in str(w.to_json()) and "ml" in str(w.to_json())
