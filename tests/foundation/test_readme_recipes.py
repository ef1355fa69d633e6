"""The README's recipes work when followed literally from a fresh clone (issue 18, "Done means").

Each recipe runs in its own `git clone` of this repository, after the edits of the recipes it builds on: the
YAML it shows is pasted under the key it names (as a user pastes it), then its shell block runs in one bash,
stopping before the first line marked `# needs:` (credentials, real hosts). The clone's own `infra/` and
`policies/` come first on PYTHONPATH, so the clone's code runs, with this repository's `.venv` on PATH
as `make setup` would leave it. Each test then checks what its recipe says the user gets.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.foundation.docs import BIN, NEEDS, Recipe, paste, recipes

RECIPES = recipes((ROOT / "README.md").read_text())


def _env(clone: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"GPU_PLATFORM_ROOT", "VIRTUAL_ENV", "PYTHONPATH"}}
    return {
        **env,
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(clone / "infra"), str(clone / "policies")]),
        "GIT_AUTHOR_NAME": "Recipe Reader",
        "GIT_AUTHOR_EMAIL": "reader@example.com",
        "GIT_COMMITTER_NAME": "Recipe Reader",
        "GIT_COMMITTER_EMAIL": "reader@example.com",
    }


def _clone(tmp_path: Path) -> Path:
    clone = tmp_path / "gpu-platform"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    # A pull request's target: the branch the clone starts from stands for origin/main.
    subprocess.run(["git", "update-ref", "refs/remotes/origin/main", "HEAD"], cwd=clone, check=True)
    return clone


def _edit(recipe: Recipe, clone: Path) -> None:
    """Make the stack edits of a recipe and of the recipes it builds on, in order."""
    if recipe.after:
        _edit(RECIPES[recipe.after], clone)
    for file, key, snippet in recipe.edits:
        stack = clone / file
        stack.write_text(paste(stack.read_text(), key, snippet))


def _follow(recipe: Recipe, clone: Path) -> subprocess.CompletedProcess[str]:
    """Follow a recipe in the clone, after the edits it builds on (their own tests run their commands); its stdout."""
    _edit(recipe, clone)
    script = "set -eo pipefail\ntrap 'echo \"recipe step failed: $BASH_COMMAND\" >&2' ERR\n" + recipe.runnable() + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=clone, env=_env(clone), capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"recipe {recipe.name}: exit {done.returncode}\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    return done


def test_pasting_a_snippet_lands_in_the_named_list(tmp_path: Path) -> None:
    """The paste helper puts the YAML at the end of the list under the key, nowhere else."""
    stack = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    pasted = yaml.safe_load(paste(stack, "gpu-platform:nodePools", "- name: extra\n  workloadClass: batch\n"))
    before = yaml.safe_load(stack)
    assert pasted["config"]["gpu-platform:nodePools"][-1] == {"name": "extra", "workloadClass": "batch"}
    assert pasted["config"]["gpu-platform:nodePools"][:-1] == before["config"]["gpu-platform:nodePools"]
    assert pasted["config"]["gpu-platform:tenants"] == before["config"]["gpu-platform:tenants"]


def test_add_a_gpu_pool(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    out = _follow(RECIPES["add-pool"], clone).stdout
    types = {line.split()[-1] for line in out.splitlines() if "dev-l40s-ondemand" in line and len(line.split()) == 2}
    for wanted in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:eks/nodeGroup:NodeGroup", "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"):
        assert wanted in types, f"the plan shows no {wanted} for the new pool: {sorted(types)}"
    assert "pool-dev-l40s-ondemand-ng" in out, "the node group is not the one the README names"
    capacity = next(line for line in out.splitlines() if line.startswith("dev-l40s-ondemand "))
    assert capacity.split()[1:4] == ["development", "on-demand", "L40S"], capacity
    # `check` exited 0 (the recipe runs under `set -e`): no mandatory violation with the new pool.


def test_add_a_tenant(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    out = _follow(RECIPES["add-tenant"], clone).stdout
    planned = [line.split() for line in out.splitlines() if "vision" in line]
    types = {words[-1] for words in planned}
    for wanted in (
        "kubernetes:core/v1:Namespace",
        "kubernetes:core/v1:ResourceQuota",
        "kubernetes:core/v1:LimitRange",
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        "aws:eks/accessEntry:AccessEntry",
    ):
        assert wanted in types, f"the plan shows no {wanted} for the tenant: {sorted(types)}"
    rendered = {path.name for path in (clone / "out" / "dev" / "manifests" / "vision").glob("*.yaml")}
    assert "resourcequota-gpu-quota.yaml" in rendered and "resourcequota-gpu-quota.yaml" in out, sorted(rendered)


def test_run_the_gate_on_a_pull_request(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    out = _follow(RECIPES["pull-request"], clone).stdout
    comment = (clone / "comment.md").read_text()
    # The branch adds the 4-GPU L40S pool (at 0 nodes when idle: no monthly cost) and a tenant with 4 GPUs on it.
    assert "passes" in comment and "| development | on-demand | L40S | 0 | 4 | +4 |" in comment, comment
    assert "| `dev-l40s-ondemand` | (none) → on-demand | (none) → L40S | 0 → 4 (+4) | $0.00 | $0.00 | $0.00 |" in comment
    assert "**Monthly cost does not change**" in comment and "| vision | `dev-l40s-ondemand` | 0 | 4 | +4 |" in comment
    created = [line for line in out.splitlines() if "vision" in line and "create" in line]
    assert created, "diff --base does not show the tenant's resources as created"


def test_plan_capacity_from_demand(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    out = _follow(RECIPES["capacity-plan"], clone).stdout
    assert "H100-80GB" in (clone / "plan.md").read_text()
    assert "H100-80GB" in out  # the plan table; `check --stack next` exited 0: the written stack passes the gate
    # The recipe leaves stacks/ as it found it, so `check --all` still judges only the landed stacks.
    status = subprocess.run(["git", "status", "--porcelain", "--", "stacks"], cwd=clone, capture_output=True, text=True, check=True)
    assert status.stdout == "", status.stdout


def test_explain_a_workload(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    out = _follow(RECIPES["explain"], clone).stdout
    verdicts = [line for line in out.splitlines() if line.startswith("Job ")]
    assert len(verdicts) == 2, verdicts
    assert ": runs (" in verdicts[0] and ": never" in verdicts[1], verdicts


def test_run_ansible_on_your_own_hosts(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    recipe = RECIPES["ansible"]
    out = _follow(recipe, clone).stdout
    assert (clone / "ansible" / "inventories" / "mysite" / "hosts.yml").exists()
    assert "lab-a100-01" in out, "--list-hosts does not list the copied inventory's hosts"
    assert "(dry run," in out and "wave 1 (pool_" in out, "the dry run printed no waves (it needs no SSH and no cluster)"
    assert any(NEEDS in line and "site.yml" in line for line in recipe.shell), "the converge itself is not shown"


def test_deploy_a_stack(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    recipe = RECIPES["deploy"]
    out = _follow(recipe, clone).stdout  # `check --stack prod` exited 0
    assert "pulumi up --stack prod" in out, "plan does not end with the deploy path"
    shown = [line.split("#")[0].strip() for line in recipe.shell if NEEDS in line]
    assert "pulumi up --stack prod" in shown and "pulumi preview --stack prod" in shown, shown
    assert not (clone / "Pulumi.prod.yaml").exists()


@pytest.mark.parametrize("name", list(RECIPES))
def test_every_recipe_has_a_test(name: str) -> None:
    tested = {
        "add-pool": test_add_a_gpu_pool,
        "add-tenant": test_add_a_tenant,
        "pull-request": test_run_the_gate_on_a_pull_request,
        "capacity-plan": test_plan_capacity_from_demand,
        "explain": test_explain_a_workload,
        "ansible": test_run_ansible_on_your_own_hosts,
        "deploy": test_deploy_a_stack,
    }
    assert name in tested, f"README recipe {name} is never run by a test"
