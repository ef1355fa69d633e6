"""Every page of the README and docs/ stays true: links lead somewhere, shown outputs are real, stated figures match."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpu_platform.change.lines import key_line
from gpu_platform.cli import main
from tests.conftest import ROOT
from tests.foundation.docs import OUTPUT as OUTPUT_BLOCK
from tests.foundation.docs import anchors, links, outputs, pages, run_shown

PAGES = pages()


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    text = page.read_text()
    broken = []
    for target in links(text):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            broken.append(f"{target}: {dest.relative_to(ROOT)} has no heading #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_link_checker_sees_a_broken_anchor(tmp_path: Path) -> None:
    """The checker itself: GitHub's slug for a heading with code and punctuation, and a miss."""
    text = "# Judging the change: `check --base` and `diff --base`\n## Repeat\n## Repeat\n"
    assert anchors(text) == {"judging-the-change-check---base-and-diff---base", "repeat", "repeat-1"}
    assert links("see [x](gate.md#nope) and `[y](z.md)` and ![c](c.svg) and [w](https://example.com)") == ["gate.md#nope", "c.svg"]


SHOWN = [(page, command, body) for page in PAGES for command, body in outputs(page.read_text())]


@pytest.mark.parametrize(("page", "command", "shown"), SHOWN, ids=[f"{p.name}: {c[:60]}" for p, c, _ in SHOWN])
def test_shown_output_is_what_the_command_prints(page: Path, command: str, shown: str) -> None:
    assert run_shown(command) == shown, f"{page.relative_to(ROOT)}: the output shown for `{command}` drifted; regenerate: scripts/refresh-docs.sh"


def test_advisories_table_matches_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/gate.md's advisories per stack are exactly what `check --all` reports, messages quoted literally."""
    table = (ROOT / "docs" / "gate.md").read_text().split("<!-- advisories:start -->", 1)[1].split("<!-- advisories:end -->", 1)[0]
    stated: dict[str, dict[str, str]] = {}
    for row in table.strip().splitlines()[2:]:
        stacks_cell, advisory = (cell.strip() for cell in row.strip("|").split("|", 1))
        rule = re.match(r"`([a-z0-9-]+)`: (.*)", advisory)
        for stack in re.findall(r"`([\w-]+)`", stacks_cell):
            stated[stack] = {rule.group(1): rule.group(2)} if rule else {}
    main(["check", "--all", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    actual = {s["stack"]: {v["policy"]: v["message"] for v in s["violations"] if v["level"] == "advisory"} for s in report["stacks"]}
    mandatory = {s["stack"]: [v["policy"] for v in s["violations"] if v["level"] == "mandatory"] for s in report["stacks"]}
    assert not any(mandatory.values()), f"docs/gate.md says no stack has a mandatory violation: {mandatory}"
    assert set(stated) == set(actual), f"stacks in the table {sorted(stated)}, stacks checked {sorted(actual)}"
    for stack, rules in actual.items():
        assert set(stated[stack]) == set(rules), f"{stack}: table says {sorted(stated[stack])}, check --all says {sorted(rules)}"
    # Where the table quotes the message (dev's Spot share), the figures in it are today's.
    for rule, message in actual["dev"].items():
        assert stated["dev"][rule].startswith(message), f"dev {rule}: table says {stated['dev'][rule]!r}, check says {message!r}"


def test_a_recorded_benchmark_replaces_only_its_own_entry(tmp_path: Path) -> None:
    """`--record` keeps the latest figure of each benchmark, and the docs table shows that figure."""
    from benchmarks.results import RESULTS, load, markdown, record

    results = tmp_path / "results.yaml"
    results.write_text(RESULTS.read_text())
    before = load(results)
    record("render-prod", "`render --stack prod`", "1.0 s, 99 MiB peak", conditions="test", path=results)
    after = load(results)
    assert after["render-prod"]["figure"] == "1.0 s, 99 MiB peak" and after["render-prod"]["conditions"] == "test"
    assert {k: v for k, v in after.items() if k != "render-prod"} == {k: v for k, v in before.items() if k != "render-prod"}
    assert "| `render --stack prod` | 1.0 s, 99 MiB peak |" in markdown(after)


def test_sensitivity_table_is_what_the_planner_prints_for_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/capacity-planning.md's sensitivity table on the Alibaba trace: every row as `capacity plan` computes it today."""
    from tests.planning.helpers import require_trace

    trace = require_trace("openb_pod_list_default.csv")
    text = (ROOT / "docs" / "capacity-planning.md").read_text()
    table = text.split("| window | instrument | Spot off |", 1)[1].split("\n\n", 1)[0].strip().splitlines()[2:]
    stated = [[cell.strip() for cell in row.strip("|").split("|")] for row in table]
    assert main(["capacity", "plan", "--demand", str(trace), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["sensitivity"]
    computed = [
        [
            r["window"],
            r["instrument"],
            f"{r['spotDiscount']:.0%}",
            ", ".join(f"{cls} {gpus}" for cls, gpus in r["reserved"].items()),
            f"${r['expectedMonthlyCost']:,.0f}",
            f"${r['onDemandOnlyExpectedMonthlyCost']:,.0f}",
        ]
        for r in rows
    ]
    assert stated == computed, "docs/capacity-planning.md's sensitivity table drifted from `capacity plan` on the trace"


# `stacks/Pulumi.dev.yaml:19 gpu-platform:nodePools[0].capacity` (a finding), `...yaml:19: gpu-platform:...` (an error line),
# or with the key path in parentheses (a change finding)
LINE_REF = re.compile(r"(?P<file>stacks/Pulumi\.[a-z0-9-]+\.yaml):(?P<line>\d+):? \(?(?P<key>gpu-platform:[A-Za-z0-9_.\[\]-]+)")


# `::error file=stacks/Pulumi.prod.yaml,line=28,title=rule::gpu-platform:nodePools[0].instanceTypes: ...`
ANNOTATION_REF = re.compile(
    r"file=(?P<file>stacks/Pulumi\.[a-z0-9-]+\.yaml),line=(?P<line>\d+),title=[^:]+::(?P<key>gpu-platform:[A-Za-z0-9_.\[\]-]+)"
)


def hand_written(text: str) -> str:
    """A page without its generated `<!-- output: -->` blocks (those are rerun by the test above)."""
    return OUTPUT_BLOCK.sub("", text)


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_stack_line_a_page_quotes_is_that_keys_line(page: Path) -> None:
    """A hand-copied finding (`at stacks/Pulumi.dev.yaml:19 gpu-platform:nodePools[0].capacity`) goes stale when the stack moves."""
    text = hand_written(page.read_text())
    for m in [*LINE_REF.finditer(text), *ANNOTATION_REF.finditer(text)]:
        stack = (ROOT / m["file"]).read_text()
        assert key_line(stack, m["key"]) == int(m["line"]), f"{page.name}: {m[0]} — {m['key']} is on line {key_line(stack, m['key'])}"


def test_the_line_check_sees_a_stale_line() -> None:
    stale = "at stacks/Pulumi.dev.yaml:3 gpu-platform:nodePools[0].capacity"
    m = LINE_REF.search(stale)
    assert m is not None and key_line((ROOT / m["file"]).read_text(), m["key"]) != 3
