"""`versions-in-support` against the day the gate runs (clock injected through Context.today)."""

from __future__ import annotations

import dataclasses
from datetime import date

from gpu_platform.versions import load_lockfile
from gpu_platform_policies import Violation, evaluate
from tests.policies.builders import lock_edit
from tests.policies.cases import context, resources

RULE = "versions-in-support"


def _violations(stack: str, today: date, lock_changes: dict[str, str] | None = None) -> list[Violation]:
    lock = lock_edit(**lock_changes)(load_lockfile()) if lock_changes else None
    ctx = dataclasses.replace(context(stack, lock), today=today)
    return [v for v in evaluate(resources(stack), ctx, repository=False) if v.policy == RULE]


def test_prod_passes_until_thirty_days_before_eks_standard_support_ends() -> None:
    """EKS user guide, Kubernetes release calendar: 1.35 is in standard support until 2027-03-27; the gate
    fails from fewer than 30 days before (min-support-days), while the upgrade can still be planned."""
    assert _violations("prod", date(2026, 11, 26)) == []
    assert _violations("prod", date(2027, 2, 25)) == []  # 30 days left
    hits = _violations("prod", date(2027, 2, 26))  # 29 days left
    assert any(v.resource == "cluster-eks" and "Kubernetes 1.35 leaves standard support on 2027-03-27, in 29 day(s)" in v.message for v in hits)
    assert all(v.level == "mandatory" for v in hits)


def test_ninety_days_ahead_is_an_advisory_not_a_failure() -> None:
    def ending(day: date) -> list[Violation]:
        ctx = dataclasses.replace(context("prod", None), today=day)
        return [v for v in evaluate(resources("prod"), ctx, repository=False) if v.policy == "versions-support-ending"]

    assert ending(date(2026, 12, 27)) == []  # 90 days left
    hits = ending(date(2026, 12, 28))  # 89 days left
    assert hits and all(v.level == "advisory" for v in hits)
    assert any("Kubernetes 1.35 leaves standard support on 2027-03-27, in 89 day(s)" in v.message for v in hits)
    assert _violations("prod", date(2026, 12, 28)) == []  # not yet the gate's failure
    assert ending(date(2027, 2, 26)) == []  # inside the mandatory window: versions-in-support says it once


def test_thresholds_move_the_windows() -> None:
    ctx = dataclasses.replace(context("prod", None), today=date(2027, 1, 27), thresholds={"min-support-days": 60})
    assert any(v.policy == RULE for v in evaluate(resources("prod"), ctx, repository=False))  # 59 days left


def test_the_day_after_fails_the_cluster_and_every_node_group_ami() -> None:
    hits = _violations("prod", date(2027, 3, 28))
    assert any(v.resource == "cluster-eks" and "Kubernetes 1.35 left standard support on 2027-03-27" in v.message for v in hits), hits
    amis = [v for v in hits if "EKS AMI release" in v.message]
    assert len(amis) == 1, amis  # one release on every node group: one finding naming them all
    assert "cluster-system-ng" in amis[0].message and "pool-train-h100-reserved-ng" in amis[0].message
    assert all(v.level == "mandatory" for v in hits)


def test_driver_branch_past_nvidia_eol_fails_every_eks_gpu_pool() -> None:
    """NVIDIA driver lifecycle: R570 (production branch) reached end of life in February 2026."""
    hits = _violations("prod", date(2026, 11, 26), {"eks__ami_driver_branch": "570"})
    assert {v.resource for v in hits} >= {"pool-train-h100-reserved-ng", "pool-infer-l4-spot-ng"}
    assert all("570 left standard support on 2026-02-28" in v.message for v in hits), hits


def test_bare_metal_branch_is_read_from_nvidia_driver_branch() -> None:
    """On-prem pools run the lockfile's `nvidia_driver.branch`: R535 is EOL after June 2026, R580 is not."""
    hits = _violations("onprem", date(2026, 11, 26), {"nvidia_driver__branch": "535"})
    assert hits and all("nvidia_driver.branch) 535 left standard support on 2026-06-30" in v.message for v in hits), hits
    assert _violations("onprem", date(2026, 5, 31), {"nvidia_driver__branch": "535"}) == []  # 30 days left
    assert _violations("onprem", date(2026, 11, 26), {"nvidia_driver__branch": "580"}) == []


def test_r595_is_a_production_branch_that_ends_in_march_2027() -> None:
    """NVIDIA's Table 2 (docs/620): R595 "End of Life March 2027", R620 "September 2029". A site that moves its
    bare-metal pin to R595 is told 90 days ahead and refused from 30 days before; R620 runs on."""

    def policies(branch: str, day: date) -> set[str]:
        lock = lock_edit(nvidia_driver__branch=branch)(load_lockfile())
        ctx = dataclasses.replace(context("onprem", lock), today=day)
        return {v.policy for v in evaluate(resources("onprem"), ctx, repository=False) if v.policy.startswith("versions-")}

    assert policies("595", date(2026, 12, 31)) == set()  # 90 days left
    assert policies("595", date(2027, 1, 1)) == {"versions-support-ending"}
    assert policies("595", date(2027, 3, 2)) == {RULE}  # 29 days left
    assert policies("620", date(2027, 3, 2)) == set()
