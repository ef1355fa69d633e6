"""behaviour.storage's FSx for Lustre parameter judgement, one case per refusal of aws-fsx-csi-driver (the lockfile's tag)
(pkg/driver/controller.go `CreateVolume`) or of FSx `CreateFileSystem` (botocore fsx model), checked against the
model where the model carries the fact."""

from __future__ import annotations

import botocore.session
import pytest

from gpu_platform.behaviour.storage import (
    FSX_COMPRESSION,
    FSX_DEPLOYMENT_TYPES,
    FSX_PROVISIONER,
    FSX_SSD_THROUGHPUT,
    claim_binds,
    fsx_lustre_parameter_problems,
)

GOOD = {"subnetId": "subnet-0a1b2c3d", "securityGroupIds": "sg-0a1b2c3d", "deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": "250"}


def _keys(params: dict[str, str]) -> list[str]:
    return [k for k, _ in fsx_lustre_parameter_problems(params)]


def test_the_enums_and_throughputs_are_the_fsx_models() -> None:
    model = botocore.session.get_session().get_service_model("fsx")
    lustre = model.shape_for("CreateFileSystemLustreConfiguration").members
    assert tuple(lustre["DeploymentType"].enum) == FSX_DEPLOYMENT_TYPES
    assert tuple(lustre["DataCompressionType"].enum) == FSX_COMPRESSION
    doc = lustre["PerUnitStorageThroughput"].documentation
    assert "PERSISTENT_1</code> SSD storage: 50, 100, 200" in doc and "PERSISTENT_2</code> SSD storage: 125, 250, 500, 1000" in doc
    assert FSX_SSD_THROUGHPUT == {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}


def test_a_good_class_has_no_problem() -> None:
    assert fsx_lustre_parameter_problems(GOOD) == []
    assert fsx_lustre_parameter_problems({**GOOD, "csi.storage.k8s.io/fstype": "lustre"}) == [], "external-provisioner's own keys"
    assert fsx_lustre_parameter_problems({"subnetId": "subnet-1", "securityGroupIds": "sg-1,sg-2", "deploymentType": "SCRATCH_2"}) == []


@pytest.mark.parametrize(
    ("change", "key", "fragment"),
    [
        ({"perUnitStorageThroughput": "250MB"}, "perUnitStorageThroughput", "not a number"),  # strconv.ParseInt
        ({"perUnitStorageThroughput": "200"}, "perUnitStorageThroughput", "not valid for PERSISTENT_2"),
        ({"deploymentType": "SCRATCH_2"}, "perUnitStorageThroughput", "only PERSISTENT_1 and PERSISTENT_2"),
        ({"deploymentType": "persistent_2"}, "deploymentType", "not an FSx for Lustre deployment type"),
        ({"copyTagsToBackups": "yes"}, "copyTagsToBackups", "not a bool"),  # strconv.ParseBool
        ({"efaEnabled": "on"}, "efaEnabled", "not a bool"),
        ({"automaticBackupRetentionDays": "1d"}, "automaticBackupRetentionDays", "not a number"),
        ({"subnetId": "subnet-1,subnet-2"}, "subnetId", "exactly one subnet"),
        ({"securityGroupIds": "sg-1,"}, "securityGroupIds", "empty entry"),
        ({"dataCompressionType": "ZSTD"}, "dataCompressionType", "NONE, LZ4"),
        ({"deploymenttype": "SCRATCH_2"}, "deploymenttype", "not a parameter aws-fsx-csi-driver reads"),
    ],
)
def test_each_refusal(change: dict[str, str], key: str, fragment: str) -> None:
    problems = dict(fsx_lustre_parameter_problems({**GOOD, **change}))
    assert key in problems and fragment in problems[key], problems


def test_persistent_needs_a_throughput_and_the_default_type_is_scratch_1() -> None:
    assert _keys({"subnetId": "subnet-1", "securityGroupIds": "sg-1", "deploymentType": "PERSISTENT_1"}) == ["perUnitStorageThroughput"]
    # No deploymentType: the API default SCRATCH_1 (botocore: "Default = SCRATCH_1"), which takes no throughput.
    assert _keys({"subnetId": "subnet-1", "securityGroupIds": "sg-1", "perUnitStorageThroughput": "125"}) == ["perUnitStorageThroughput"]


def test_a_claim_on_a_bad_class_stays_pending_at_the_parameters_stage() -> None:
    classes = [{"metadata": {"name": "fsx"}, "provisioner": FSX_PROVISIONER, "parameters": {**GOOD, "perUnitStorageThroughput": "300"}}]
    binding = claim_binds({"storageClassName": "fsx"}, classes, {FSX_PROVISIONER: None})
    assert not binding.binds and binding.reason.startswith("parameters: perUnitStorageThroughput")
    classes[0]["parameters"] = GOOD
    assert claim_binds({"storageClassName": "fsx"}, classes, {FSX_PROVISIONER: None}).binds
