"""End of standard support in the lockfile, and the EKS AMI driver branch as the AMI's changelog states it."""

from __future__ import annotations

import copy
import re
from datetime import date
from pathlib import Path

import pytest

from gpu_platform.errors import ConfigError
from gpu_platform.versions import (
    SUPPORT_DRIVER_BRANCHES,
    SUPPORT_EKS_AMI,
    SUPPORT_KUBERNETES,
    load_lockfile,
    parse_lockfile,
    past_support,
    raw_lockfile,
    support_end,
)

CHANGELOG = Path(__file__).parent / "fixtures" / "amazon-eks-ami" / "CHANGELOG-excerpt.md"


def ami_nvidia_driver(changelog: str, release_version: str) -> str:
    """The `kmod-nvidia-latest-dkms` version an EKS AMI release ships for AL2023_x86_64_NVIDIA.

    Reads the release's package table the way amazon-eks-ami's CHANGELOG.md lays it out (one table per
    Kubernetes minor: AMI names with `<td rowspan="5">RELEASE</td>`, then one row per package whose first
    cell after the name is the AL2023_x86_64_NVIDIA column).
    """
    start = changelog.index(f'<td rowspan="5">{release_version}</td>')
    end = changelog.find("</details>", start)
    table = changelog[start:end]
    m = re.search(r"<td>kmod-nvidia-latest-dkms</td>\s*<td[^>]*>([0-9.]+)-", table)
    assert m, f"no kmod-nvidia-latest-dkms row for {release_version}"
    return m.group(1)


def test_ami_driver_branch_is_what_the_pinned_ami_release_ships() -> None:
    """amazon-eks-ami CHANGELOG.md, "AMI Release v20260714", Kubernetes 1.35 table: the NVIDIA AMI's driver."""
    lock = load_lockfile()
    shipped = ami_nvidia_driver(CHANGELOG.read_text(), lock.eks.ami_release_version)
    assert shipped.split(".")[0] == lock.eks.ami_driver_branch
    assert lock.eks.ami_release_version.startswith(lock.kubernetes.version + ".")


def test_the_previous_pin_claimed_a_branch_its_ami_did_not_ship() -> None:
    """The old pin (1.33.5-20251120 with branch 570) was wrong: that release shipped R580 (same changelog)."""
    assert ami_nvidia_driver(CHANGELOG.read_text(), "1.33.5-20251120").startswith("580.")


def test_every_pin_has_a_sourced_end_of_support_and_is_in_support_today() -> None:
    """Kubernetes (EKS standard support), the AMI release and both driver branches carry a dated, sourced entry."""
    lock = load_lockfile()
    for component, key in (
        (SUPPORT_KUBERNETES, lock.kubernetes.version),
        (SUPPORT_EKS_AMI, lock.eks.ami_release_version),
        (SUPPORT_DRIVER_BRANCHES, lock.eks.ami_driver_branch),
        (SUPPORT_DRIVER_BRANCHES, lock.nvidia_driver.branch),
    ):
        entry = support_end(lock, component, key)
        assert entry is not None, (component, key)
        assert entry.source.startswith("https://"), entry.source
    # EKS: 1.33 left standard support on 2026-07-29 (the finding); the pinned minor has not.
    assert past_support(support_end(lock, SUPPORT_KUBERNETES, "1.33"), date(2026, 11, 26))
    assert not past_support(support_end(lock, SUPPORT_KUBERNETES, lock.kubernetes.version), date(2026, 11, 26))
    assert not past_support(support_end(lock, SUPPORT_DRIVER_BRANCHES, lock.eks.ami_driver_branch), date(2026, 11, 26))


def test_the_last_day_of_support_is_still_in_support() -> None:
    entry = support_end(load_lockfile(), SUPPORT_KUBERNETES, "1.35")
    assert entry is not None
    assert not past_support(entry, entry.ends)
    assert past_support(entry, date.fromordinal(entry.ends.toordinal() + 1))


def test_a_pin_without_a_support_entry_is_rejected_on_load() -> None:
    data = copy.deepcopy(raw_lockfile())
    del data["support"]["kubernetes"][data["kubernetes"]["version"]]
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    lines = [str(p) for p in err.value.problems]
    assert any(": support.kubernetes: no end-of-support entry for '1.35' (pinned at kubernetes.version)" in line for line in lines), lines


@pytest.mark.parametrize(
    ("entry", "path"),
    [
        ({"ends": "2027-02-30", "source": "https://docs.aws.amazon.com/eks/"}, "support.kubernetes.1.35.ends"),
        ({"ends": "2027-03-27", "source": "aws docs"}, "support.kubernetes.1.35.source"),
        ({"ends": "2027-03-27"}, "support.kubernetes.1.35.source"),
    ],
)
def test_a_malformed_support_entry_names_its_key(entry: dict, path: str) -> None:
    data = copy.deepcopy(raw_lockfile())
    data["support"]["kubernetes"]["1.35"] = entry
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    assert path in str(err.value), str(err.value)
