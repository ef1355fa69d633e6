"""gpu_platform.behaviour.alertmanager against Alertmanager's dispatch/route.go `Match` semantics."""

from __future__ import annotations

from gpu_platform.behaviour.alertmanager import match, parse_matchers

TREE = {
    "receiver": "default",
    "routes": [
        {"receiver": "null", "matchers": ['alertname = "Watchdog"']},
        {"receiver": "audit", "matchers": ['severity=~"critical|warning"'], "continue": True},
        {"receiver": "pager", "matchers": ['severity = "critical"', 'team!="sandbox"']},
        {"match": {"team": "gpu-platform"}, "routes": [{"receiver": "gpu-slack", "match_re": {"alertname": "Gpu.*"}}]},
    ],
}


def test_first_match_stops_unless_continue() -> None:
    assert match(TREE, {"alertname": "GpuXidError", "severity": "critical", "team": "gpu-platform"}) == ["audit", "pager"]


def test_no_child_matches_means_the_parent() -> None:
    assert match(TREE, {"alertname": "Other", "severity": "info"}) == ["default"]


def test_receiver_is_inherited_and_regex_is_anchored() -> None:
    assert match(TREE, {"alertname": "GpuHot", "severity": "info", "team": "gpu-platform"}) == ["gpu-slack"]
    assert match(TREE, {"alertname": "NotGpuHot", "severity": "info", "team": "gpu-platform"}) == ["default"], (
        "a child with no match returns the parent, which inherits"
    )


def test_negative_matchers_and_absent_labels() -> None:
    assert match(TREE, {"alertname": "X", "severity": "critical", "team": "sandbox"}) == ["audit"]
    assert match(TREE, {"alertname": "X", "severity": "critical"}) == ["audit", "pager"], "absent team is '' which != sandbox"


def test_matcher_list_forms() -> None:
    assert parse_matchers('{severity="critical", alertname=~"Gpu.*"}') == [("severity", "=", "critical"), ("alertname", "=~", "Gpu.*")]
    assert parse_matchers("severity = critical") == [("severity", "=", "critical")]
