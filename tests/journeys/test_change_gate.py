"""Journey: a pull request that changes a stack meets `gpu-platform check --base` at the line it changed.

Each promise walks the same stages over a temporary git repository made from the landed stacks and
program: commit the base, change the stack the way a pull request would, run `check --base`, and read
the finding (its rule, the stack file, and the line of the key that caused it).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpu_platform import cli
from gpu_platform.k8s.alerts import TENANT_ALLOCATED
from gpu_platform_policies import CHANGE_RULES
from tests.change.gitrepo import git, make_repo

PROD = "stacks/Pulumi.prod.yaml"
AMI = "1.35.7-20260812"
AMI_OVERRIDE = f"""  gpu-platform:versions:
    eks: {{ami_release_version: "{AMI}"}}
    support: {{eks_ami: {{"{AMI}": {{ends: "2027-03-27", source: "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"}}}}}}
"""
NVIDIA = "https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html"
DRIVER_570 = f"""  gpu-platform:versions:
    nvidia_driver: {{branch: "570", version: "570.195.03", packages: {{ubuntu: "570.195.03-0ubuntu1", rhel: "570.195.03-1"}}}}
    fabric_manager: {{version: "570.195.03"}}
    cuda: {{version: "12.8.1", packages: {{ubuntu: "12.8.1-1", rhel: "12.8.1-1"}}}}
    images: {{driver: {{tag: "570.195.03"}}}}
    support:
      fabric_manager: {{"570": {{ends: "2026-02-28", source: "{NVIDIA}"}}}}
      cuda: {{"12.8": {{ends: "2026-02-28", source: "{NVIDIA}"}}}}
"""


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Fail with the stage's name, so a broken journey says where it broke."""
    try:
        yield
    except AssertionError as err:
        raise AssertionError(f"stage '{name}': {err}") from None
    except subprocess.CalledProcessError as err:
        raise AssertionError(f"stage '{name}': {err.cmd} failed: {err.stderr}") from None


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the landed program and stacks, its first commit tagged `base`."""
    return make_repo(tmp_path_factory.mktemp("pull-request"))


def pull_request(repo: Path, edit: Callable[[str], str], trailer: str | None = None) -> str:
    """Reset to the base, change prod's stack file as the pull request does (committed with `trailer` if given)."""
    git(repo, "reset", "-q", "--hard", "base")
    path = repo / PROD
    text = edit(path.read_text())
    assert text != path.read_text(), "the edit changed nothing"
    path.write_text(text)
    if trailer:
        git(repo, "commit", "-qam", f"change prod\n\nGPU-Maintenance: {trailer}")
    return text


def gate(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    """`gpu-platform check --config <prod> --base base --format json`, as CI runs it."""
    capsys.readouterr()
    code = cli.main(["check", "--config", str(repo / PROD), "--base", "base", "--format", "json", *extra])
    out = capsys.readouterr()
    assert code in (0, 1), f"exit {code}: {out.err}"
    return code, json.loads(out.out)


def line_of(text: str, fragment: str) -> int:
    """1-based line of the only line containing `fragment` (found in the text, not by the code under test)."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if fragment in line]
    assert len(hits) == 1, f"{fragment!r} is on lines {hits}"
    return hits[0]


def first_line_with(fragment: str) -> Callable[[str], int]:
    """1-based line of the first line containing `fragment` (the reserved pool comes first in prod's file)."""
    return lambda text: next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def finding(doc: dict, policy: str, repo: Path, about: str = "") -> dict:
    """The violation of `policy` (whose message has `about`), which must sit on prod's stack file."""
    found = [v for v in doc["violations"] if v["policy"] == policy and about in v["message"]]
    assert found, f"no {policy} finding; found {[v['policy'] for v in doc['violations']]}"
    assert found[0]["file"] == str(repo / PROD), found[0]
    return found[0]


def walk(
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[str], str],
    policy: str,
    at: str | Callable[[str], int],
    *extra: str,
    about: str = "",
) -> dict:
    """Change, gate, finding, line: the stages every promise below walks (`at`: the changed line's text, or how to find it)."""
    with stage("change the stack"):
        text = pull_request(repo, edit)
    with stage("run check --base"):
        code, doc = gate(repo, capsys, *extra)
    with stage("read the finding"):
        v = finding(doc, policy, repo, about)
        assert v["level"] == "mandatory" and code == 1
    with stage("find the line"):
        want = line_of(text, at) if isinstance(at, str) else at(text)
        assert v["line"] == want, f"{policy} on line {v['line']} ({v['keyPath']}), the change is on line {want}"
    return v


def test_replacing_a_reserved_pools_instance_type_is_caught_at_its_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = walk(
        repo,
        capsys,
        lambda t: t.replace("instanceTypes: [p5.48xlarge]", "instanceTypes: [p4de.24xlarge]", 1),
        "fixed-capacity-replaced",
        first_line_with("p4de.24xlarge"),
    )
    assert "train-h100-reserved" in v["message"] and v["keyPath"] == "gpu-platform:nodePools[0].instanceTypes"


def test_a_stated_maintenance_does_not_let_a_reserved_pool_leave_its_reservations_terms(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The trailer waives the replacement (fixed-capacity-replaced), never the reservation match: the new group could not launch."""
    with stage("change the stack"):
        text = pull_request(
            repo,
            lambda t: t.replace("instanceTypes: [p5.48xlarge]", "instanceTypes: [p4de.24xlarge]", 1),
            trailer="train-h100-reserved 2026-12-05T02:00Z/6h OPS-4711",
        )
    with stage("run check --base"):
        code, doc = gate(repo, capsys)
    with stage("read the finding"):
        assert not [v for v in doc["violations"] if v["policy"] == "fixed-capacity-replaced"]
        v = finding(doc, "reservation-still-matches", repo, "p4de.24xlarge")
        assert v["level"] == "mandatory" and code == 1
        assert "cr-0a1b2c3d4e5f60718" in v["message"] and "instance type p5.48xlarge -> p4de.24xlarge" in v["message"]
    with stage("find the line"):
        assert v["line"] == first_line_with("p4de.24xlarge")(text)


def test_bumping_the_ami_of_a_reserved_pool_is_caught_at_its_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = walk(
        repo,
        capsys,
        lambda t: t.replace("  gpu-platform:tags:", AMI_OVERRIDE + "  gpu-platform:tags:"),
        "fixed-capacity-recycled",
        "ami_release_version",
    )
    assert v["keyPath"] == "gpu-platform:versions.eks.ami_release_version"


def test_a_stated_maintenance_lets_the_ami_bump_through(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with stage("change the stack"):
        pull_request(
            repo,
            lambda t: t.replace("  gpu-platform:tags:", AMI_OVERRIDE + "  gpu-platform:tags:"),
            trailer="train-h100-reserved,infer-a100-mig,train-h100-block 2026-12-05T02:00Z/6h OPS-4711",
        )
    with stage("run check --base"):
        _, doc = gate(repo, capsys)
    with stage("read the finding"):
        assert not [v for v in doc["violations"] if v["policy"] == "fixed-capacity-recycled"], doc["violations"]
        assert doc["change"]["maintenance"] == ["train-h100-reserved,infer-a100-mig,train-h100-block 2026-12-05T02:00Z/6h OPS-4711"]
        assert any(c.get("rollsNodes") for c in doc["change"]["changes"]), "the node groups still roll: the diff shows it"


def test_cutting_a_quota_below_current_use_is_caught_at_its_line(repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    usage = tmp_path / "usage.json"
    series = {
        "metric": {"__name__": TENANT_ALLOCATED, "tenant": "llm-training", "resource": "nvidia_com_gpu"},
        "values": [[1764100000, "36"], [1764100060, "40"]],
    }
    usage.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [series]}}))
    cut = "{pool: train-h100-reserved, gpus: 8, lendingLimit: 8}"
    v = walk(
        repo,
        capsys,
        lambda t: t.replace("{pool: train-h100-reserved, gpus: 24, lendingLimit: 8}", cut),
        "quota-below-usage",
        cut,
        "--usage",
        str(usage),
    )
    assert "48 -> 32 GPUs, below the 40 GPUs" in v["message"]


def test_moving_the_driver_branch_is_caught_at_its_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = walk(
        repo,
        capsys,
        lambda t: t.replace("  gpu-platform:tags:", DRIVER_570 + "  gpu-platform:tags:"),
        "driver-or-cuda-moved",
        'branch: "570"',
        about="driver branch",
    )
    assert "580 -> 570" in v["message"] and v["keyPath"] == "gpu-platform:versions.nvidia_driver.branch"


def test_moving_a_training_pool_to_spot_is_caught_at_its_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = "- name: train-h100-ondemand\n      workloadClass: training\n      capacity: "
    v = walk(
        repo, capsys, lambda t: t.replace(pool + "on-demand", pool + "spot"), "moved-to-spot", lambda t: line_of(t, "- name: train-h100-ondemand") + 2
    )
    assert v["keyPath"] == "gpu-platform:nodePools[1].capacity"


def test_adding_a_tenant_produces_no_change_finding(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A complete tenant, as the README's recipe adds one: its group is carried by its SSO role (access entry).
    role = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_RecsysML_0a1b2c3d4e5f6a7b"
    tenant = (
        "    - name: recsys\n      groups: [recsys-ml]\n"
        f"      accessRoleArns: [{role}]\n"
        "      cohort: batch\n      quotas:\n        - {pool: batch-l40s-ondemand, gpus: 4}\n"
    )
    with stage("change the stack"):
        pull_request(repo, lambda t: t.replace("  gpu-platform:queueing:", tenant + "  gpu-platform:queueing:"))
    with stage("run check --base"):
        code, doc = gate(repo, capsys)
    with stage("read the finding"):
        # prod's one advisory (its documentation-range placeholder CIDR) is a state finding, not the change's.
        assert code == 0 and [v for v in doc["violations"] if v["policy"] in CHANGE_RULES or v["level"] == "mandatory"] == [], doc["violations"]
        created = {c["name"] for c in doc["change"]["changes"] if c["action"] == "create"}
        assert "tenant-recsys" in created or any("recsys" in n for n in created), created
        assert not [c for c in doc["change"]["changes"] if c["action"] in ("replace", "delete")]
