"""`pulumi up` runs infra/__main__.py: the same program the offline engine runs, with the same errors."""

from __future__ import annotations

import json
import runpy

import pulumi
import pytest
from pulumi.runtime import mocks, settings

from gpu_platform.engine import PROJECT, computed_outputs, invoke_result
from gpu_platform.program import main
from gpu_platform.spec.loader import read_stack_config
from tests.conftest import ROOT, stack_path

MAIN = ROOT / "infra" / "__main__.py"


class _Counter(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.types: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        self.types.append(args.typ)
        return f"{args.name}-id", computed_outputs(args.typ, args.name, args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        self.types.append(args.token)
        return invoke_result(args.token, args.args), []  # the engine's answer (S3's prefix list)


def _as_pulumi_cli_passes_it(stack: str) -> dict[str, str]:
    """Config as the Pulumi CLI hands it to a program: every value a string, objects as JSON text."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in read_stack_config(stack_path(stack)).items()}


def test_main_module_is_thin() -> None:
    lines = [line for line in MAIN.read_text().splitlines() if line.strip() and not line.startswith(('"""', "#"))]
    assert len(lines) <= 5


def test_infra_main_runs_under_the_mock_engine() -> None:
    counter = _Counter()
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(counter, project=PROJECT, stack="prod", preview=False, monitor=mocks.MockMonitor(counter))
    pulumi.runtime.set_all_config(_as_pulumi_cli_passes_it("prod"))

    @pulumi.runtime.test
    def run() -> None:
        runpy.run_path(str(MAIN), run_name="__main__")

    run()
    assert counter.types.count("aws:eks/nodeGroup:NodeGroup") == 12  # 9 GPU pools, 2 Spot fallback groups, system
    assert "aws:eks/cluster:Cluster" in counter.types
    assert counter.types.count("aws:ec2/getPrefixList:getPrefixList") == 1, "S3's prefix list is read once, for every tenant"


def test_bad_config_under_pulumi_is_one_clean_error() -> None:
    config = _as_pulumi_cli_passes_it("prod")
    config["gpu-platform:environment"] = "Prod!"
    settings.ROOT.set(None)
    counter = _Counter()
    pulumi.runtime.set_mocks(counter, project=PROJECT, stack="prod", preview=False, monitor=mocks.MockMonitor(counter))
    with pytest.raises(pulumi.RunError) as err:
        main(config)
    message = str(err.value)
    assert message.startswith("stacks/Pulumi.prod.yaml: gpu-platform:environment: 'Prod!' has the wrong format")
    assert counter.types == [], "nothing is registered when the config is bad"
