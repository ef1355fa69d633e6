"""One run reports every problem of a stack file, and every command that loads a stack runs the spec's cross-checks.

A user who makes five independent mistakes sees five lines from one `plan`, each
`<file>: <key.path>: <what is wrong>; <what is allowed>`, exit 2, and no echo of a key the loader
had to set aside. A quota larger than its pool is one of those cross-checks: `plan`, `render`,
`explain` and `capacity` refuse it as `check` does, in the GPUs the user wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform.cli import main
from tests.conftest import stack_path, without_lines

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, base: str, *edits: tuple[str, str]) -> Path:
    text = stack_path(base).read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / f"Pulumi.{base}-edited.yaml"
    path.write_text(text)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, without_lines(err).strip().splitlines()


FIVE_MISTAKES = (
    ("      cohort: serving\n", "      cohrt: serving\n"),  # typo'd key
    ("      scaling: {min: 1, desired: 1, max: 4}\n", "      scaling: {min: 5, desired: 1, max: 4}\n"),  # min > max
    ("g6.4xlarge, g6.8xlarge]", "g6.4xlarge, g6.8xlargee]"),  # unknown instance type
    ("migConfig: all-balanced}", "migConfig: all-balancd}"),  # MIG layout the GPU does not have
    ("        - {pool: train-a100, gpus: 16}\n", "        - {pool: train-a100, gpus: 40}\n"),  # quota over the pool
)


def test_one_plan_lists_five_independent_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "staging", *FIVE_MISTAKES)
    code, lines = _run(capsys, "plan", "--config", str(path))
    assert code == 2
    keys = [line.split(": ", 2)[1] for line in lines]
    assert sorted(keys) == sorted(
        [
            "gpu-platform:tenants[1].cohrt",
            "gpu-platform:nodePools[3].scaling",
            "gpu-platform:nodePools[2].instanceTypes[3]",
            "gpu-platform:nodePools[1].sharing.migConfig",
            "gpu-platform:tenants[0].quotas[0].gpus",
        ]
    ), lines
    for line in lines:
        assert without_lines(line).startswith(f"{path}: gpu-platform:") and "; " in line, line
    said = "\n".join(lines)
    assert "unknown key 'cohrt' (did you mean 'cohort'?)" in said
    assert "min 5, desired 1, max 4" in said
    assert "'g6.8xlargee' is unknown (did you mean 'g6.8xlarge'?)" in said
    assert "'all-balancd' does not exist for A100-40GB" in said
    assert "add up to 40 GPUs (llm-training 40) but the pool has 16 GPUs at max size (2 nodes x 8 GPUs)" in said


def test_a_bad_value_is_not_echoed_by_the_cross_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A sharing mode pydantic refuses is set aside (left at `none`); `replicas` with mode none is its echo, not a second mistake."""
    path = _write(
        tmp_path,
        "dev",
        (
            "      sharing: {mode: time-slicing, replicas: 4}\n    - name: dev-l4-ondemand",
            "      sharing: {mode: timeslicing, replicas: 4}\n    - name: dev-l4-ondemand",
        ),
    )
    code, lines = _run(capsys, "plan", "--config", str(path))
    assert code == 2
    assert len(lines) == 1 and ": gpu-platform:nodePools[1].sharing.mode: 'timeslicing' is not a valid choice" in lines[0], lines


def test_unknown_top_level_keys_come_with_the_config_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "dev", ("config:\n", "confg: {}\nconfig:\n"), ("  gpu-platform:tenants:\n", "  gpu-platform:tenant:\n"))
    code, lines = _run(capsys, "plan", "--config", str(path))
    assert code == 2
    assert [line.split(": ", 2)[1] for line in lines] == ["confg", "gpu-platform:tenant"], lines


QUOTA_40_ON_6 = (
    (
        "      scaling: {min: 0, desired: 0, max: 2}\n      sharing: {mode: time-slicing, replicas: 4}\n  gpu-platform:tenants:",
        "      scaling: {min: 0, desired: 0, max: 6}\n      sharing: {mode: time-slicing, replicas: 4}\n  gpu-platform:tenants:",
    ),
    (
        "        - {pool: dev-l4-ondemand, gpus: 1}\n    - name: platform-team",
        "        - {pool: dev-l4-ondemand, gpus: 40}\n    - name: platform-team",
    ),
)


@pytest.mark.parametrize(
    "command",
    [
        ("plan",),
        ("render", "--out", "{tmp}/out"),
        ("explain", "--workload", str(REPO / "examples/workloads/batch-spot.yaml")),
        ("capacity",),
        ("check",),
    ],
    ids=lambda c: c[0],
)
def test_every_command_refuses_a_quota_over_its_pool(command: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """README: the loader checks quotas within pools, so `plan` (and everything that loads a stack) says so, not only `check`."""
    path = _write(tmp_path, "dev", *QUOTA_40_ON_6)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in command]
    code, lines = _run(capsys, argv[0], "--config", str(path), *argv[1:])
    assert code == 2
    assert lines == [
        f"{path}: gpu-platform:tenants[0].quotas[2].gpus: quotas on pool 'dev-l4-ondemand' add up to 41 GPUs (ml-sandbox 40, platform-team 1)"
        " but the pool has 6 GPUs at max size (6 nodes x 1 GPU); allowed: at most 6 GPUs in all on 'dev-l4-ondemand':"
        " lower the quotas or raise gpu-platform:nodePools[2].scaling.max"
    ]
    assert not (tmp_path / "out").exists(), "render wrote manifests for a stack it refused"


def test_overcommit_threshold_and_disabled_rule_are_honoured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stack's max-quota-overcommit (and disabling kueue-quota-fits-pool) decide here as they do in the gate."""
    base = _write(tmp_path, "dev", *QUOTA_40_ON_6).read_text()
    over = tmp_path / "Pulumi.over.yaml"
    over.write_text(base + "  gpu-platform:policy:\n    thresholds: {max-quota-overcommit: 7}\n")
    code, lines = _run(capsys, "plan", "--config", str(over))
    assert code == 0, lines
    over.write_text(base + "  gpu-platform:policy:\n    thresholds: {max-quota-overcommit: 6}\n")
    code, lines = _run(capsys, "plan", "--config", str(over))
    assert code == 2 and "(6 nodes x 1 GPU x max-quota-overcommit 6)" in lines[0] and "at most 36 GPUs" in lines[0], lines
    over.write_text(base + "  gpu-platform:policy:\n    enforcement: {kueue-quota-fits-pool: disabled}\n")
    code, lines = _run(capsys, "plan", "--config", str(over))
    assert code == 0, lines


def test_a_pool_set_aside_does_not_hide_other_pools_or_quota_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by review: a misspelt key in one pool hid every 'unknown pool' error; a quota typo hid an overflow on its pool."""
    text = stack_path("prod").read_text()
    text = text.replace("      workloadClass: training\n", "      workloadClas: training\n", 1)
    text = text.replace("        - {pool: infer-l4-ondemand, gpus: 12}\n", "        - {pool: infer-l4-ondemandd, gpus: 12}\n", 1)
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(text)
    code, lines = _run(capsys, "plan", "--config", str(path))
    assert code == 2
    assert any("workloadClas" in line for line in lines) and any("unknown pool 'infer-l4-ondemandd'" in line for line in lines), lines
