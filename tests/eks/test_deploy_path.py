"""A stack `pulumi up` can deploy: the machine running it reaches the EKS API the same run creates."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.aws.access import deploy_steps
from gpu_platform.catalog import load_catalog
from gpu_platform.change.lines import key_line
from gpu_platform.engine import run_program
from gpu_platform.spec.loader import read_stack_config
from gpu_platform.versions import load_lockfile
from gpu_platform_policies import THRESHOLD_DEFAULTS, Context, Resource, evaluate
from tests.conftest import ROOT, spec_for, stack_path, without_lines
from tests.foundation.bad_stack import plan_errors as _run

EXISTING_NETWORK = {
    "mode": "existing",
    "vpcId": "vpc-0a1b2c3d4e5f60718",
    "cidr": "10.40.0.0/16",
    "subnets": {"us-east-1a": "subnet-0a1b2c3d4e5f60711", "us-east-1b": "subnet-0a1b2c3d4e5f60712", "us-east-1c": "subnet-0a1b2c3d4e5f60713"},
}


def _write(tmp_path: Path, doc: dict[str, Any], name: str) -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _prod_doc(**cluster: Any) -> dict[str, Any]:
    doc = yaml.safe_load(stack_path("prod").read_text())
    doc["config"]["gpu-platform:cluster"].update(cluster)
    return doc


@pytest.mark.parametrize(
    ("case", "cluster", "network", "fragment"),
    [
        ("private-only-new-vpc", {"endpointPublicAccess": False}, None, "private-only in a VPC this stack creates"),
        ("both-endpoints-off", {"endpointPublicAccess": False, "endpointPrivateAccess": False}, None, "both endpointPrivateAccess"),
        ("private-existing-vpc-no-deployers", {"endpointPublicAccess": False}, EXISTING_NETWORK, "no deployerCidrs"),
    ],
)
def test_spec_rejects_a_stack_that_cannot_reach_its_own_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, cluster: dict[str, Any], network: dict[str, Any] | None, fragment: str
) -> None:
    """EKS user guide, "Cluster API server endpoint" (private access): a private endpoint answers only from
    the cluster's VPC and networks connected to it that the cluster security group admits. A VPC created
    by this very run has no VPN/peering yet, so `pulumi up` (laptop or hosted CI) cannot create a single
    Kubernetes resource. The old prod and staging stacks were exactly this; now they fail before any
    resource is registered, with one line."""
    doc = _prod_doc(**cluster)
    if network is not None:
        doc["config"]["gpu-platform:network"] = network
    path = _write(tmp_path, doc, case)
    code, err = _run(capsys, path)
    assert code == 2 and "Traceback" not in err, err
    (line,) = err.strip().splitlines()
    assert without_lines(line).startswith(f"{path}: gpu-platform:cluster.endpointPublicAccess: "), line
    assert fragment in line and "; allowed: endpointPublicAccess: true with publicAccessCidrs" in line, line


def test_readme_shows_the_real_rejection_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The deploy guide's example is what the program prints for a private-only prod."""
    path = _write(tmp_path, _prod_doc(endpointPublicAccess=False), "prod")
    _, err = _run(capsys, path)
    # The test's copy is re-dumped YAML; the guide names the line of the key in the real prod file.
    real = key_line(stack_path("prod").read_text(), "gpu-platform:cluster.endpointPublicAccess")
    shown = re.sub(rf"^{re.escape(str(path))}:\d+: ", f"stacks/Pulumi.prod.yaml:{real}: ", err.strip())
    assert shown in (ROOT / "docs" / "deploying.md").read_text()


def test_private_api_in_existing_vpc_is_opened_to_deployers_only(tmp_path: Path) -> None:
    """Deploy path 2: a private endpoint in a routed VPC. The control plane's security groups govern the
    private endpoint (EKS user guide, "Cluster API server endpoint"; "View Amazon EKS security group
    requirements"), so the stack adds one ingress rule per deployer CIDR, TCP 443, on a control-plane group
    of its own (vpcConfig.securityGroupIds), which no node carries; the gate accepts the plan and still
    fails it once the rule is gone."""
    config = read_stack_config(stack_path("prod"))
    config["gpu-platform:cluster"] = {**config["gpu-platform:cluster"], "endpointPublicAccess": False, "deployerCidrs": ["10.200.0.0/16"]}
    config["gpu-platform:cluster"].pop("publicAccessCidrs")
    config["gpu-platform:network"] = EXISTING_NETWORK
    doc = {"config": config}
    path = _write(tmp_path, doc, "prod-private")
    from gpu_platform.spec.loader import load_stack

    _, spec = load_stack(path, "prod-private")  # accepted: no unreachable-API problem
    plan = run_program(config, "prod-private")
    (rule,) = [r for r in plan.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule") if r.name.startswith("cluster-deployer-")]
    assert rule.inputs["cidrIpv4"] == "10.200.0.0/16"
    assert (rule.inputs["ipProtocol"], rule.inputs["fromPort"], rule.inputs["toPort"]) == ("tcp", 443, 443)
    # On the control plane's own group (EKS vpcConfig.securityGroupIds), not the cluster group every node carries.
    (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["securityGroupIds"] == [rule.inputs["securityGroupId"]] == ["cluster-control-plane-sg-id"]
    node_groups = {
        g
        for lt in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
        for ni in lt.inputs.get("networkInterfaces") or []
        for g in ni["securityGroups"]
    }
    node_groups |= {g for lt in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate") for g in lt.inputs.get("vpcSecurityGroupIds") or []}
    assert rule.inputs["securityGroupId"] not in node_groups
    assert not plan.of_type("aws:ec2/vpc:Vpc")
    ctx = Context(lock=load_lockfile(), catalog=load_catalog(), environment="prod", thresholds=dict(THRESHOLD_DEFAULTS))
    resources = [Resource(r.type, r.name, r.parent, r.inputs) for r in plan.resources]
    assert [v for v in evaluate(resources, ctx) if v.policy == "eks-api-reachable"] == []
    without = [r for r in resources if r.name != rule.name]
    assert [v.resource for v in evaluate(without, ctx) if v.policy == "eks-api-reachable"] == ["cluster-eks"]
    steps = deploy_steps(spec)
    assert any("10.200.0.0/16" in s and "443" in s for s in steps)


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_repository_stacks_deploy_through_a_public_endpoint_limited_to_deployers(stack: str) -> None:
    """Deploy path 1 (EKS user guide, "Cluster API server endpoint", public and private access): the public
    endpoint admits only the listed CIDRs, nodes use the private one; the printed steps say so."""
    spec = spec_for(stack)
    c = spec.cluster
    assert c.endpoint_public_access and c.endpoint_private_access
    assert c.public_access_cidrs and all(not cidr.endswith("/0") for cidr in c.public_access_cidrs)
    steps = deploy_steps(spec)
    assert any("publicAccessCidrs" in s and c.public_access_cidrs[0] in s for s in steps)
    assert any(f"pulumi up --stack {stack}" in s for s in steps)
    assert deploy_steps(spec_for("onprem")) == []


def test_plan_and_make_demo_print_the_deploy_path(capsys: pytest.CaptureFixture[str]) -> None:
    """`make demo STACK=prod` runs `gpu-platform plan --stack prod`, whose text ends with the numbered steps."""
    from gpu_platform.cli import main

    assert main(["plan", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    tail = out[out.index("Deploy path") :].splitlines()
    assert [line.split(".", 1)[0].strip() for line in tail[1:]] == [str(i) for i in range(1, len(tail))]
    assert "198.51.100.0/27" in out and "pulumi up --stack prod" in out
    assert "gpu-platform plan --stack $(STACK)" in (ROOT / "Makefile").read_text().split("demo:", 1)[1].split("\n\n", 1)[0]
