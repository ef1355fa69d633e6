"""Stack files that put reserved or Capacity Block pools where AWS cannot serve them fail with one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import stack_path, without_lines
from tests.foundation.bad_stack import assert_at_key
from tests.foundation.bad_stack import plan_errors as _run
from tests.foundation.test_bad_stacks import Mutation, drop_pool_key, set_pool

A100 = "gpu-platform:nodePools[3]"  # prod's reserved A100 pool (a reservation group)
BLOCK = "gpu-platform:nodePools[8]"  # prod's Capacity Block pool

CASES: list[tuple[str, Mutation, str, str]] = [
    # EC2 user guide, On-Demand Capacity Reservations: one reservation, one Availability Zone.
    (
        "reserved-over-three-zones",
        set_pool("infer-a100-mig", availabilityZones=["us-east-1a", "us-east-1b", "us-east-1c"]),
        f"{A100}.availabilityZones",
        "exactly one zone",
    ),
    ("reserved-without-zone", drop_pool_key("infer-a100-mig", "availabilityZones"), f"{A100}.availabilityZones", "none (every cluster zone)"),
    ("block-without-zone", drop_pool_key("train-h100-block", "availabilityZones"), f"{BLOCK}.availabilityZones", "the reservation's"),
    # EKS user guide, Capacity Blocks with managed node groups: the group must be able to sit at 0.
    ("block-never-zero", set_pool("train-h100-block", scaling={"min": 1, "desired": 1, "max": 2}), f"{BLOCK}.scaling.min", "allowed: 0"),
    (
        "placement-group-without-efa",
        set_pool(
            "infer-a100-mig",
            reservation={"resourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/gpu-prod-a100", "placementGroup": "pg-x"},
        ),
        f"{A100}.reservation.placementGroup",
        "reserved EFA pool",
    ),
]


@pytest.mark.parametrize(("case", "mutate", "key", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_fixed_capacity_mistake_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, mutate: Mutation, key: str, fragment: str
) -> None:
    doc = yaml.safe_load(stack_path("prod").read_text())
    mutate(doc)
    path = tmp_path / f"Pulumi.{case}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = _run(capsys, path)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert_at_key(lines[0], path, key)
    assert fragment in lines[0] and "; allowed: " in lines[0], lines[0]


def test_accelerator_label_cannot_be_set_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The platform sets k8s.amazonaws.com/accelerator only where nodes offer nvidia.com/gpu; a hand-set one on a
    MIG pool would make cluster-autoscaler treat its nodes as unready for ever (GpuCustomResourcesProcessor)."""
    doc = yaml.safe_load(stack_path("prod").read_text())
    set_pool("infer-h100-mig", labels={"k8s.amazonaws.com/accelerator": "nvidia-h100"})(doc)
    path = tmp_path / "Pulumi.label.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = _run(capsys, path)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert without_lines(line).startswith(
        f"{path}: gpu-platform:nodePools[2].labels.k8s.amazonaws.com/accelerator: label key uses a domain the platform manages"
    )
