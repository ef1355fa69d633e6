"""`gpu-platform explain` reads what `render` writes, answers in its JSON contract, and refuses bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_platform.cli import main
from tests.conftest import ROOT, stack_path, without_lines
from tests.journeys.journey import view
from tests.k8s.helpers import objects

EXAMPLES = ROOT / "examples" / "workloads"


def _key(o: dict) -> tuple[str, str, str | None]:
    return (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))


def test_explain_sees_exactly_the_rendered_objects(stack: str) -> None:
    """Every object explain reads equals, field for field, the one `render` writes from the offline plan."""
    rendered = {_key(o): o for o in objects(stack)}
    for o in view(stack).objects:
        assert _key(o) in rendered, f"{_key(o)} is not rendered for {stack}"
        assert json.loads(json.dumps(o, sort_keys=True)) == json.loads(json.dumps(rendered[_key(o)], sort_keys=True)), _key(o)


def test_explain_sees_the_pools_the_node_groups_declare(stack: str) -> None:
    """Labels and taints explain schedules against are those of the rendered node groups or node patches."""
    from tests.conftest import plan_for

    plan = plan_for(stack)
    groups = {r.inputs.get("labels", {}).get("gpu-platform.io/pool"): r.inputs for r in plan.resources if r.type == "aws:eks/nodeGroup:NodeGroup"}
    patches = {r.inputs["metadata"]["labels"].get("gpu-platform.io/pool"): r.inputs for r in plan.resources if r.type.endswith("NodePatch")}
    for p in view(stack).pools:
        if p.pool.name in groups:
            assert dict(p.labels) == groups[p.pool.name]["labels"], p.pool.name
            assert [(t["key"], t["value"]) for t in p.taints] == [(t["key"], t["value"]) for t in groups[p.pool.name]["taints"]]
        else:
            assert dict(p.labels) == patches[p.pool.name]["metadata"]["labels"], p.pool.name
            declared = json.loads(patches[p.pool.name]["metadata"]["annotations"]["gpu-platform.io/taints"])
            assert [dict(t) for t in p.taints] == declared, p.pool.name


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--stack", "prod", "--workload", str(EXAMPLES / "batch-spot.yaml"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["workload"] == {"kind": "Job", "name": "embeddings-backfill", "namespace": "data-platform"}
    assert out["verdict"] == "runs" and out["clusterQueue"] == "data-platform" and out["flavor"] == "batch-l40s-spot"
    assert [s["stage"] for s in out["steps"]][:5] == ["namespace", "api", "admission-policy", "kueue-managed", "local-queue"]
    assert all(set(s) == {"stage", "result", "detail", "source"} and s["result"] in ("ok", "blocked", "warning") for s in out["steps"])


EXAMPLE_VERDICTS = [
    ("train-efa-2node", "prod", "runs"),
    ("train-jobset", "prod", "runs"),
    ("inference-mig", "prod", "runs"),
    ("batch-spot", "prod", "runs"),
    ("volcano-gang", "prod", "runs"),
    ("dev-notebook-time-sliced", "dev", "runs"),
    ("above-tier", "prod", "never"),
    ("whole-gpu-on-mig-pool", "prod", "never"),
    ("no-quota-model", "prod", "never"),
]


@pytest.mark.parametrize(("name", "stack", "verdict"), EXAMPLE_VERDICTS)
def test_every_example_says_what_its_comment_promises(name: str, stack: str, verdict: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "--stack", stack, "--workload", str(EXAMPLES / f"{name}.yaml"), "--format", "json"])
    assert json.loads(capsys.readouterr().out)["verdict"] == verdict
    assert code == {"runs": 0, "waits": 1, "never": 3}[verdict], "the exit code is the verdict (docs/cli.md)"


def test_every_shipped_example_is_checked() -> None:
    """Each file under examples/workloads has its promised verdict checked above."""
    assert {p.stem for p in EXAMPLES.glob("*.yaml")} == {name for name, _, _ in EXAMPLE_VERDICTS}


def test_text_output_names_every_stage_and_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--config", str(stack_path("prod")), "--workload", str(EXAMPLES / "above-tier.yaml")]) == 3
    out = capsys.readouterr().out
    assert out.startswith("Job foundation-research/sneaky-priority: never")
    assert "admission-policy  blocked" in out and "source: apiserver" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file; allowed: a YAML file"),
        ("kind: Job\nmetadata: {name: [", "not valid YAML"),
        ("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", "kind: unknown workload kind 'Secret'; allowed:"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "metadata.name: missing"),
        ("---\nkind: Pod\n---\nkind: Pod\n", "2 documents; allowed: exactly one manifest"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, content: str | None, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.yaml"
    if content is not None:
        path.write_text(content)
    assert main(["explain", "--stack", "prod", "--workload", str(path)]) == 2
    err = without_lines(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{path}: ") and message in err[0], err


def test_a_manifest_with_generate_name_is_explained_under_the_name_the_api_server_gives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl create -f` takes `generateName` (Kueue's own sample jobs use it): the prefix, cut to 58 characters, then 5 random ones."""
    job = (EXAMPLES / "above-tier.yaml").read_text().replace("  name: sneaky-priority\n", f"  generateName: {'p' * 70}-\n")
    path = tmp_path / "job.yaml"
    path.write_text(job)
    assert main(["explain", "--config", str(stack_path("prod")), "--workload", str(path)]) == 3
    assert capsys.readouterr().out.startswith(f"Job foundation-research/{'p' * 58}xxxxx: never")


def test_bare_gpu_platform_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer typing the command alone gets the list of commands, not an argparse error (docs/cli.md)."""
    assert main([]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("usage: gpu-platform") and "explain" in out.out and not out.err
