"""The AWS Load Balancer Controller: installed, credentialed, and confined to what serving needs.

The chart is the real one at the lockfile's version (shared/charts, rendered by tests.k8s.test_charts); the policy
is evaluated with gpu_platform.behaviour.iam_policy for the unconditioned calls the controller makes when it
reconciles an Ingress (pkg/deploy/elbv2 and pkg/deploy/ec2 of kubernetes-sigs/aws-load-balancer-controller).
"""

from __future__ import annotations

import json
from typing import Any

from gpu_platform.aws.load_balancer import NAMESPACE, SERVICE_ACCOUNT, controller_policy
from gpu_platform.behaviour.iam_policy import ALLOW, IMPLICIT_DENY, decide, trusts_service
from tests.conftest import plan_for
from tests.k8s.test_charts import rendered

TG = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/k8s-serving-model-0123456789/0123456789abcdef"
SG = "arn:aws:ec2:us-east-1:123456789012:security-group/sg-0123456789abcdef0"


def _release(kind: str) -> list[dict[str, Any]]:
    (out,) = [r for name, r in rendered("prod").items() if r.release.name == "aws-load-balancer-controller"]
    return [o for o in out.objects if o.get("kind") == kind]


def test_the_controller_runs_under_its_own_pod_identity() -> None:
    plan = plan_for("prod")
    (assoc,) = [r for r in plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation") if r.inputs["serviceAccount"] == SERVICE_ACCOUNT]
    assert assoc.inputs["namespace"] == NAMESPACE
    role = next(r for r in plan.of_type("aws:iam/role:Role") if r.name == "lb-controller-role")
    assert trusts_service(role.inputs["assumeRolePolicy"], "pods.eks.amazonaws.com", ["sts:AssumeRole", "sts:TagSession"]) == []
    (deployment,) = _release("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == SERVICE_ACCOUNT
    args = spec["containers"][0]["args"]
    # Pod Identity gives credentials but no instance metadata (hop limit 1): region and VPC are passed in.
    assert "--aws-region=us-east-1" in args and any(a.startswith("--aws-vpc-id=") for a in args), args


def test_the_policy_allows_what_an_ingress_needs_and_nothing_of_the_nodes() -> None:
    policy = json.loads(controller_policy())
    for action, resource in [
        ("ec2:DescribeSubnets", "*"),
        ("elasticloadbalancing:DescribeLoadBalancers", "*"),
        ("elasticloadbalancing:CreateListener", "*"),
        ("elasticloadbalancing:RegisterTargets", TG),
        ("ec2:AuthorizeSecurityGroupIngress", SG),
    ]:
        assert decide([policy], action, resource) == ALLOW, action
    for action, resource in [("ec2:TerminateInstances", "*"), ("iam:PassRole", "*"), ("eks:UpdateNodegroupConfig", "*"), ("s3:GetObject", "*")]:
        assert decide([policy], action, resource) == IMPLICIT_DENY, action


def test_no_webhook_of_the_controller_can_fail_every_service_or_pod_in_the_cluster() -> None:
    """With the chart's defaults `mservice` (failurePolicy Fail, no namespace selector) would refuse every Service
    create while the controller is down; with the platform's values it is not registered, and the pod webhooks
    only act in namespaces that opt in by label."""
    hooks = [w for cfg in _release("MutatingWebhookConfiguration") + _release("ValidatingWebhookConfiguration") for w in cfg["webhooks"]]
    assert hooks, "the chart renders its webhooks"
    for w in hooks:
        resources = {res for rule in w.get("rules", []) for res in rule.get("resources", [])}
        if w.get("failurePolicy", "Fail") == "Fail" and resources & {"services", "pods"}:
            assert w.get("namespaceSelector", {}).get("matchExpressions") or w.get("namespaceSelector", {}).get("matchLabels"), w["name"]
    assert "mservice.elbv2.k8s.aws" not in {w["name"] for w in hooks}
    (klass,) = _release("IngressClass")
    assert klass["metadata"]["name"] == "alb" and klass["spec"]["controller"] == "ingress.k8s.aws/alb"


def test_ingresses_get_ip_targets_and_serving_pods_a_readiness_gate() -> None:
    """The chart's default target type is `instance` (NodePorts on every node, GPU nodes too, and node source addresses
    the tenant policy does not admit): the platform makes it `ip`. The serving namespace carries the label the
    controller's `mpod` webhook selects, so its pods get the load balancer's readiness gate on rolling updates."""
    (deployment,) = _release("Deployment")
    assert "--default-target-type=ip" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    (mpod,) = [w for cfg in _release("MutatingWebhookConfiguration") for w in cfg["webhooks"] if w["name"] == "mpod.elbv2.k8s.aws"]
    serving = next(r for r in plan_for("prod").resources if r.type == "kubernetes:core/v1:Namespace" and r.inputs["metadata"]["name"] == "serving")
    labels = serving.inputs["metadata"]["labels"]
    wanted = [e for e in mpod["namespaceSelector"]["matchExpressions"] if e["operator"] == "In"]
    assert wanted and all(labels.get(e["key"]) in e["values"] for e in wanted), (wanted, labels)
