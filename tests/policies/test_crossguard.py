"""The CrossGuard wrappers, called as the engine calls them, agree with the offline gate on every case.

The pack itself (PolicyPack, a gRPC server) is never started: each policy's validate function gets
ResourceValidationArgs / StackValidationArgs built from the very inputs the offline plan records.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy

import gpu_platform_policies.crossguard as crossguard
import gpu_platform_policies.model as policy_model
from gpu_platform.behaviour.wiring import ref_key
from gpu_platform.versions import load_lockfile
from gpu_platform_policies import RULES, Resource
from gpu_platform_policies.crossguard import build_policies, pack_config, plain, versions_override
from tests.conftest import spec_for
from tests.policies.cases import CASES, Case, resources, run_case

URN = "urn:pulumi:{stack}::gpu-platform::{type}::{name}"
POLICIES = {p.name: p for p in build_policies()}


def _opts(parent: str | None) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)


def crossguard_findings(case: Case, res: list[Resource]) -> set[tuple[str, str]]:
    """(resource, message) pairs the case's policy reports through its CrossGuard wrapper."""
    policy = POLICIES[case.rule]
    config = pack_config(spec_for(case.stack))[case.rule]
    if case.lock is not None:  # the case edits the repository lockfile itself: the stack overrides nothing
        config = {k: v for k, v in config.items() if k != "versions"}
    if case.stack_lock is not None:  # what pack_config writes for a stack with this versions override
        config = {**config, "versions": versions_override(case.stack_lock(load_lockfile()), load_lockfile())}
    urns = {r.name: URN.format(stack=case.stack, type=r.type, name=r.name) for r in res}
    found: set[tuple[str, str]] = set()
    if isinstance(policy, ResourceValidationPolicy):
        for r in res:
            args = ResourceValidationArgs(
                r.type, unknown_checking_proxy(r.inputs), urns[r.name], r.name, _opts(urns.get(r.parent or "")), None, config
            )
            policy.validate(args, lambda message, urn=None, name=r.name: found.add((name, message)))
    else:
        assert isinstance(policy, StackValidationPolicy)
        # Keyed by type and name: a URN is unique per type, and a VPC's subnet, route table and association
        # may share one logical name (network-private-<zone>).
        by_key: dict[tuple[str, str], PolicyResource] = {}
        for r in res:
            urn = URN.format(stack=case.stack, type=r.type, name=r.name)
            by_key[(r.type, r.name)] = PolicyResource(r.type, unknown_checking_proxy(r.inputs), urn, r.name, _opts(None), None, None, [], {})
        by_name = {name: pr for (_, name), pr in by_key.items()}
        by_ref = {ref_key(t, name): pr for (t, name), pr in by_key.items()}
        for r in res:
            if r.parent in by_name:
                by_key[(r.type, r.name)].parent = by_name[r.parent]
            # What the engine hands a stack policy: each input's dependencies as the resources themselves
            # (pulumi_policy _PolicyAnalyzerServicer.AnalyzeStack drops a URN that is not in the stack).
            by_key[(r.type, r.name)].property_dependencies = {k: [by_ref[d] for d in deps if d in by_ref] for k, deps in r.refs.items()}
        names = {pr.urn: name for (_, name), pr in by_key.items()}

        def report(message: str, urn: str | None = None) -> None:
            name, _, text = message.partition(": ")
            assert urn is None or names[urn] == name, "the violation's URN is the resource its message names"
            found.add((name, text))

        policy.validate(StackValidationArgs(list(by_key.values()), config), report)
    return found


PACK_CASES = [c for c in CASES if c.repo is None and c.offline_only is None]
BLIND_CASES = [c for c in CASES if c.offline_only is not None]


@pytest.mark.parametrize("case", PACK_CASES, ids=[f"{c.rule}:{c.id}" for c in PACK_CASES])
def test_wrapper_reports_what_the_offline_gate_reports(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if case.lock is not None:
        monkeypatch.setattr(crossguard, "load_lockfile", lambda: case.lock(load_lockfile()))  # type: ignore[misc]
    if case.today is not None:  # the pack reads the machine's day (Context.day): pin it as the case pins the gate's
        day = case.today

        class Day(date):
            @classmethod
            def today(cls) -> Day:
                return cls(day.year, day.month, day.day)

        monkeypatch.setattr(policy_model, "date", Day)
    res = resources(case.stack)
    for edit in case.edits:
        res = edit(res)
    offline = {(v.resource, v.message) for v in run_case(case, tmp_path)}
    assert crossguard_findings(case, res) == offline
    if case.fires_on is not None:
        assert any(name == case.fires_on for name, _ in offline)


@pytest.mark.parametrize("case", BLIND_CASES, ids=[f"{c.rule}:{c.id}" for c in BLIND_CASES])
def test_what_the_pack_cannot_see_is_caught_offline_only(case: Case, tmp_path: Path) -> None:
    """A break the policy pack has no data for (case.offline_only says why): the offline gate names it, the pack does not."""
    res = resources(case.stack)
    for edit in case.edits:
        res = edit(res)
    offline = {(v.resource, v.message) for v in run_case(case, tmp_path)}
    assert any(name == case.fires_on for name, _ in offline)
    assert crossguard_findings(case, res) == {f for f in offline if f[0] != case.fires_on}


def test_every_resource_and_stack_rule_is_a_policy_at_its_level() -> None:
    for rule in RULES.values():
        if rule.scope == "repository":
            assert rule.name not in POLICIES  # reads files, not resources: gpu-platform check only
            continue
        policy = POLICIES[rule.name]
        assert policy.enforcement_level == EnforcementLevel(rule.level)
        assert policy.description == rule.description
        assert policy.config_schema is not None
        assert set(rule.thresholds) | {"environment", "production", "versions"} == set(policy.config_schema.properties)


def test_environment_comes_from_tags_without_pack_config() -> None:
    """Run with no --policy-pack-config, the prod-only rule still knows it is in prod."""
    cluster = next(r for r in resources("prod") if r.name == "cluster-eks")
    cluster.inputs["vpcConfig"]["endpointPublicAccess"] = True
    cluster.inputs["vpcConfig"].pop("publicAccessCidrs", None)  # prod's are the deployers' only
    found: list[str] = []
    args = ResourceValidationArgs(cluster.type, cluster.inputs, "urn", cluster.name, _opts(None), None, {})
    POLICIES["eks-endpoint-restricted"].validate(args, lambda message, urn=None: found.append(message))  # type: ignore[attr-defined]
    assert found and "open to the internet" in found[0]


def test_unknown_preview_values_do_not_stop_a_policy() -> None:
    """During preview, computed inputs are unknown; the wrapper still checks everything else."""
    unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown-value sentinel
    props: dict[str, Any] = {"metadataOptions": {"httpTokens": "optional", "httpPutResponseHopLimit": 1}, "vpcSecurityGroupIds": [unknown]}
    assert plain(unknown_checking_proxy(props))["vpcSecurityGroupIds"] == [crossguard.UNKNOWN]
    found: list[str] = []
    args = ResourceValidationArgs("aws:ec2/launchTemplate:LaunchTemplate", unknown_checking_proxy(props), "urn", "lt", _opts(None), None, {})
    POLICIES["imdsv2-required"].validate(args, lambda message, urn=None: found.append(message))  # type: ignore[attr-defined]
    assert found == ["metadataOptions.httpTokens is 'optional'; set it to 'required' (IMDSv2 only)"]


def test_pack_main_builds_the_pack_from_the_rule_set() -> None:
    text = (Path(__file__).resolve().parents[2] / "policies" / "pack" / "__main__.py").read_text()
    assert "build_policies()" in text and "PolicyPack(" in text


def test_pack_config_carries_the_production_setting() -> None:
    """`policy.production: true` on a stack named dev makes the pack apply the production-only rules."""
    spec = spec_for("dev").model_copy(update={"policy": spec_for("dev").policy.model_copy(update={"production": True})})
    config = pack_config(spec)["eks-endpoint-restricted"]
    assert config["production"] is True
    cluster = next(r for r in resources("dev") if r.name == "cluster-eks")
    cluster.inputs["vpcConfig"]["publicAccessCidrs"] = ["0.0.0.0/1", "128.0.0.0/1"]
    found: list[str] = []
    args = ResourceValidationArgs(cluster.type, cluster.inputs, "urn", cluster.name, _opts(None), None, config)
    POLICIES["eks-endpoint-restricted"].validate(args, lambda message, urn=None: found.append(message))  # type: ignore[attr-defined]
    assert found and "the whole internet" in found[0]
    found.clear()
    args = ResourceValidationArgs(
        cluster.type, cluster.inputs, "urn", cluster.name, _opts(None), None, pack_config(spec_for("dev"))["eks-endpoint-restricted"]
    )
    POLICIES["eks-endpoint-restricted"].validate(args, lambda message, urn=None: found.append(message))  # type: ignore[attr-defined]
    assert found == []  # dev by its name is not production
