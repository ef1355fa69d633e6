"""The change report a reviewer reads: one real base-to-head change of prod in text, Markdown and JSON.

The pull request moves the reserved H100 pool to p4de.24xlarge (A100), cuts foundation-research's
reserved quota from 8 to 4 GPUs and adds a Spot L4 pool with a quota for it. Every figure asserted is
computed here from the catalog's own YAML, not by the code under test: old and new values, the GPU
model change, the monthly cost delta per pool, the tenant quotas, and the findings with their lines.
"""

from __future__ import annotations

import contextlib
import io
import json
from importlib import resources

import pytest
import yaml

from gpu_platform.change.report import MARKER
from gpu_platform.cli import main
from tests.change.gitrepo import make_repo

PROD = "stacks/Pulumi.prod.yaml"
SPOT_POOL = """    - name: batch-l4-spot
      workloadClass: batch
      capacity: spot
      instanceTypes: [g6.12xlarge, g6.24xlarge]
      scaling: {min: 0, desired: 1, max: 4}
"""


def _data(name: str) -> dict:
    return yaml.safe_load(resources.files("gpu_platform").joinpath(f"data/{name}").read_text())


CATALOG, COMMITMENTS = _data("catalog.yaml"), _data("commitments.yaml")
PRICE = {t: v["price"] for t, v in CATALOG["instance_types"].items()}
SPOT_SHARE = 1 - COMMITMENTS["spot"]["discount"]
RESERVED_BEFORE = 4 * PRICE["p5.48xlarge"] * 730  # reserved: 4 nodes billed used or not
RESERVED_AFTER = 4 * PRICE["p4de.24xlarge"] * 730
SPOT_AFTER = 1 * PRICE["g6.12xlarge"] * SPOT_SHARE * 730  # desired 1 node of the first (smallest) type


def money(value: float) -> str:
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """`check --base base` in every format over the pull request's working tree (the base plan is planned once and cached)."""
    repo = make_repo(tmp_path_factory.mktemp("pr") / "repo")
    stack = repo / PROD
    text = stack.read_text()
    text = text.replace("instanceTypes: [p5.48xlarge]", "instanceTypes: [p4de.24xlarge]", 1)
    text = text.replace("    - name: batch-l40s-ondemand\n", SPOT_POOL + "    - name: batch-l40s-ondemand\n", 1)
    old = "        - {pool: train-h100-reserved, gpus: 8, borrowingLimit: 8}\n        - {pool: batch-l40s-spot, gpus: 8}\n"
    assert old in text
    text = text.replace(old, old.replace("gpus: 8, borrowingLimit", "gpus: 4, borrowingLimit") + "        - {pool: batch-l4-spot, gpus: 8}\n")
    stack.write_text(text)
    out: dict[str, tuple[int, str]] = {}
    for fmt in ("text", "markdown", "json", "github"):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["check", "--config", str(stack), "--base", "base", "--format", fmt])
        out[fmt] = (code, buf.getvalue())
    out["lines"] = (0, text)
    return out


def line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_json_has_the_values_the_model_change_the_cost_and_the_quotas(reports: dict[str, tuple[int, str]]) -> None:
    code, out = reports["json"]
    assert code == 1
    doc = json.loads(out)
    change = doc["change"]
    keys = {k["key"]: k for k in change["stackKeys"]}
    assert keys["gpu-platform:nodePools[train-h100-reserved].instanceTypes"] == {
        "key": "gpu-platform:nodePools[train-h100-reserved].instanceTypes",
        "before": ["p5.48xlarge"],
        "after": ["p4de.24xlarge"],
    }
    assert keys["gpu-platform:tenants[foundation-research].quotas[train-h100-reserved].gpus"]["before"] == 8
    assert keys["gpu-platform:tenants[foundation-research].quotas[train-h100-reserved].gpus"]["after"] == 4
    assert "before" not in keys["gpu-platform:nodePools[batch-l4-spot]"]
    ng = next(c for c in change["changes"] if c["name"] == "pool-train-h100-reserved-ng")
    assert ng["action"] == "replace"
    assert {"key": "labels.gpu-platform.io/gpu-model", "before": "H100-80GB", "after": "A100-80GB"} in ng["values"]
    gpus = {(g["workloadClass"], g["tier"], g["gpuModel"]): (g["before"], g["after"]) for g in change["gpus"]}
    assert gpus[("training", "reserved", "H100-80GB")] == (32, 0) and gpus[("training", "reserved", "A100-80GB")] == (0, 32)
    assert gpus[("batch", "spot", "L4")] == (0, 16)
    assert change["quotas"] == [
        {"tenant": "foundation-research", "pool": "train-h100-reserved", "before": 8, "after": 4},
        {"tenant": "foundation-research", "pool": "batch-l4-spot", "before": 0, "after": 8},
    ]
    cost = change["cost"]
    pools = {p["pool"]: p for p in cost["pools"]}
    reserved = pools["train-h100-reserved"]
    assert reserved["before"]["gpuModel"] == "H100-80GB" and reserved["after"]["gpuModel"] == "A100-80GB"
    assert reserved["before"]["monthlyCost"] == pytest.approx(RESERVED_BEFORE, abs=0.01)
    assert reserved["after"]["monthlyCost"] == pytest.approx(RESERVED_AFTER, abs=0.01)
    assert reserved["after"]["billing"] == "committed, billed used or not"
    assert pools["batch-l4-spot"]["before"] is None
    assert pools["batch-l4-spot"]["after"]["monthlyCost"] == pytest.approx(SPOT_AFTER, abs=0.01)
    delta = RESERVED_AFTER - RESERVED_BEFORE + SPOT_AFTER
    assert cost["monthlyDelta"] == pytest.approx(delta, abs=0.02)
    assert cost["monthlyAfter"] - cost["monthlyBefore"] == pytest.approx(delta, abs=0.02)
    found = {v["policy"] for v in doc["violations"] if v["level"] == "mandatory"}
    assert found == {"fixed-capacity-replaced", "reservation-still-matches"}


def test_markdown_is_one_sticky_comment_with_the_cost_table(reports: dict[str, tuple[int, str]]) -> None:
    code, md = reports["markdown"]
    assert code == 1
    assert not md.startswith(MARKER), "the marker is written once per comment by scripts/change-gate.sh, not per stack"
    delta = RESERVED_AFTER - RESERVED_BEFORE + SPOT_AFTER
    assert "The gate **fails** (2 mandatory finding(s))" in md
    assert "**Monthly cost decreases**: " in md and f"(**-${-delta:,.2f}**" in md
    row = f"| `train-h100-reserved` | reserved | H100-80GB → A100-80GB | 32 → 32 | {money(RESERVED_BEFORE)} | {money(RESERVED_AFTER)} |"
    assert row in md
    assert f"| `batch-l4-spot` | (none) → spot | (none) → L4 | 0 → 16 (+16) | $0.00 | {money(SPOT_AFTER)} | +{money(SPOT_AFTER)} |" in md
    assert "| **total** (10 pools, 8 unchanged) |" in md
    assert '| `gpu-platform:nodePools[train-h100-reserved].instanceTypes` | `["p5.48xlarge"]` | `["p4de.24xlarge"]` |' in md
    assert "| foundation-research | `train-h100-reserved` | 8 | 4 | -4 |" in md
    assert "| training | reserved | A100-80GB | 0 | 32 | +32 |" in md
    assert "| mandatory | `reservation-still-matches` |" in md


def test_text_names_old_and_new_values_and_ends_on_the_verdict_the_exit_code_carries(reports: dict[str, tuple[int, str]]) -> None:
    code, text = reports["text"]
    line = line_of(reports["lines"][1], "p4de.24xlarge")
    assert code == 1
    first, last = text.splitlines()[0], text.strip().splitlines()[-1]
    assert first == last and "the gate FAILS: 2 mandatory (0 from state rules, 2 from change rules)" in first and first.endswith("exit 1")
    assert 'gpu-platform:nodePools[train-h100-reserved].instanceTypes: ["p5.48xlarge"] -> ["p4de.24xlarge"]' in text
    assert "labels.gpu-platform.io/gpu-model: H100-80GB -> A100-80GB" in text
    assert "  foundation-research  train-h100-reserved      8 -> 4 (-4)" in text
    delta = RESERVED_AFTER - RESERVED_BEFORE + SPOT_AFTER
    cost = next(t for t in text.splitlines() if t.startswith("Monthly cost: "))
    assert f"(-${-delta:,.2f}, " in cost
    assert "H100-80GB -> A100-80GB     32 -> 32" in text
    assert f"stacks/Pulumi.prod.yaml:{line} (gpu-platform:nodePools[0].instanceTypes)" in text


def test_github_annotations_sit_on_the_changed_line(reports: dict[str, tuple[int, str]]) -> None:
    code, out = reports["github"]
    line = line_of(reports["lines"][1], "p4de.24xlarge")
    assert code == 1
    hits = [a for a in out.splitlines() if a.startswith("::error") and "title=reservation-still-matches" in a]
    assert len(hits) == 1 and f",line={line}," in hits[0]


def test_the_cost_delta_says_whose_prices_it_uses(tmp_path_factory: pytest.TempPathFactory) -> None:
    """dev runs in us-west-2; the catalog's list prices are us-east-1's: the delta says so, as `capacity` does."""
    repo = make_repo(tmp_path_factory.mktemp("west") / "repo")
    stack = repo / "stacks" / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("scaling: {min: 0, desired: 1, max: 6}", "scaling: {min: 0, desired: 1, max: 8}", 1))
    region, as_of = CATALOG["pricing"]["region"], CATALOG["pricing"]["as_of"]
    want = f"prices are {region}'s list prices of {as_of}; this stack runs in us-west-2"
    for fmt in ("json", "text", "markdown"):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["check", "--config", str(stack), "--base", "base", "--format", fmt])
        if fmt == "json":
            assert json.loads(buf.getvalue())["change"]["cost"]["caveat"] == want
        else:
            assert want[1:] in buf.getvalue(), buf.getvalue()[:2000]


def test_tenants_written_as_json_text_are_no_change(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Pulumi hands structured config to the program as JSON text, and `pulumi config set --path` writes it so: the
    same tenants as a JSON string on the head side are the same tenants, not a change of every key and quota."""
    repo = make_repo(tmp_path_factory.mktemp("json") / "repo")
    stack = repo / "stacks" / "Pulumi.dev.yaml"
    doc = yaml.safe_load(stack.read_text())
    tenants = doc["config"]["gpu-platform:tenants"]
    head, _, tail = stack.read_text().partition("  gpu-platform:tenants:\n")
    rest = tail.split("\n  gpu-platform:", 1)
    text = head + "  gpu-platform:tenants: " + json.dumps(json.dumps(tenants)) + "\n" + ("  gpu-platform:" + rest[1] if len(rest) > 1 else "")
    stack.write_text(text)
    assert yaml.safe_load(stack.read_text())["config"]["gpu-platform:tenants"] == json.dumps(tenants)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["check", "--config", str(stack), "--base", "base", "--format", "json"])
    change = json.loads(buf.getvalue())["change"]
    assert not [k for k in change["stackKeys"] if k["key"].startswith("gpu-platform:tenants")], change["stackKeys"]
    assert change["quotas"] == [] or all(q["before"] == q["after"] for q in change["quotas"]), change["quotas"]
