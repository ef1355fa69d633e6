"""The offline engine loads the program's provider modules before it freezes the heap, for every stack.

CPython's collector walks every tracked object in its full passes unless `gc.freeze` moved it out of
reach; the engine freezes what the process imported before it runs the program (engine.run_program).
The SDKs execute a provider module on its first attribute access (pulumi/_utils.py `_LazyModule`), so a
module the program reaches only while it registers resources arrives after the freeze, and its tens of
thousands of functions, classes and annotations are walked by each full pass of the registration:
before this was held, `plan --stack multi` spent 0.3 s of 3.4 s CPU in the collector against the
mock-engine floor's 0.08 s (docs/benchmarks.md). Every repository stack is planned in a fresh process, as users
run it, since a module an earlier plan loaded would hide a gap.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PROBE = """
import contextlib, gc, io, json, sys, types

def provider_modules():
    return {n for n, m in sys.modules.items() if n.split(".")[0] in ("pulumi_aws", "pulumi_kubernetes") and type(m) is types.ModuleType}

at_freeze = []
freeze = gc.freeze
def watched_freeze():
    at_freeze.append(provider_modules())
    freeze()
gc.freeze = watched_freeze

from gpu_platform.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["plan", "--format", "json", "--stack", sys.argv[1]])
print(json.dumps({"code": code, "freezes": len(at_freeze), "late": sorted(provider_modules() - at_freeze[-1]), "loaded": sorted(at_freeze[-1])}))
"""


def _plan_in_fresh_process(stack: str) -> dict:
    run = subprocess.run([sys.executable, "-c", PROBE, stack], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "multi", "onprem"])
def test_no_provider_module_is_loaded_after_the_engine_freezes_the_heap(stack: str) -> None:
    seen = _plan_in_fresh_process(stack)
    assert seen["code"] in (0, None) and seen["freezes"] == 1
    packages = sorted({".".join(m.split(".")[:2]) for m in seen["late"]})
    assert seen["late"] == [], f"gpu_platform.program.provider_modules leaves out what the plan loaded later: {packages}"


def test_an_on_prem_plan_loads_no_aws_service_module() -> None:
    # pulumi_aws's services are loaded only for a stack that builds an EKS cluster (its own or a worker's).
    seen = _plan_in_fresh_process("onprem")
    assert not [m for m in seen["loaded"] if m.startswith("pulumi_aws.") and m.split(".")[1] in ("eks", "iam", "kms", "autoscaling")]
