"""The AWS Load Balancer Controller: how serving traffic reaches tenant pods on EKS.

Pinned chart and image (lockfile `aws-load-balancer-controller`), an IAM role bound by EKS Pod Identity with
the controller's own policy, and values that keep the cluster's other traffic independent of it:

- Ingresses of class `alb` and Services with `loadBalancerClass: service.k8s.aws/nlb` get an ALB or NLB
  with IP targets in the subnets tagged for their scheme (gpu_platform.aws.network tags public subnets
  `kubernetes.io/role/elb`, private ones `kubernetes.io/role/internal-elb`; the controller's
  pkg/networking/subnet_resolver.go ResolveViaDiscovery picks one per zone by those tags);
- `enableServiceMutatorWebhook: false`: the chart's default registers a Service webhook with
  failurePolicy Fail on every namespace (templates/webhook.yaml `mservice`), so every Service create in
  the cluster would fail while the controller is down, and it would turn every `type: LoadBalancer`
  Service into an NLB (webhooks/core/service_mutator.go). Tenants ask for an NLB by class instead;
- `keepTLSSecret: true`: the webhook certificate the chart generates (templates/_helpers.tpl genCA) is
  kept across upgrades instead of regenerated on every `pulumi up`;
- `region` and `vpcId` are given: with Pod Identity the controller cannot read them from instance
  metadata (hop limit 1 on every node, gpu_platform.aws.nodepools), and it needs both (pkg/aws/cloud.go).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.aws.pod_identity import pod_identity_role
from gpu_platform.k8s.objects import helm_release
from gpu_platform.spec.models import PlatformSpec

RELEASE = "aws-load-balancer-controller"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-load-balancer-controller"
INGRESS_CLASS = "alb"
NLB_CLASS = "service.k8s.aws/nlb"


@cache
def controller_policy() -> str:
    """The controller's IAM policy: docs/install/iam_policy.json of kubernetes-sigs/aws-load-balancer-controller at the lockfile's tag.

    Kept as upstream publishes it (data/aws-load-balancer-controller-iam-policy.json): load balancers,
    target groups and security groups it creates are tagged `elbv2.k8s.aws/cluster` and only those are
    modified or deleted; tests/eks/test_load_balancer.py evaluates the calls an Ingress makes against it.
    """
    text = resources.files("gpu_platform").joinpath("data/aws-load-balancer-controller-iam-policy.json").read_text()
    return json.dumps(json.loads(text), separators=(",", ":"))


def controller_values(spec: PlatformSpec, vpc_id: pulumi.Input[str]) -> dict[str, Any]:
    """Helm values of the aws-load-balancer-controller chart for this stack."""
    image = spec.lock.image(RELEASE)
    return {
        "clusterName": spec.cluster.name,
        "region": spec.region,
        "vpcId": vpc_id,
        "image": {"repository": image.repository, "tag": image.tag},
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "replicaCount": 2,
        "podDisruptionBudget": {"maxUnavailable": 1},
        "enableServiceMutatorWebhook": False,
        "keepTLSSecret": True,
        "ingressClass": INGRESS_CLASS,
        # IP targets unless an Ingress says otherwise: the chart's default `instance` sends traffic through NodePorts on
        # every node (GPU nodes included), and the pods would see node addresses, which `ingress.loadBalancers` does not admit.
        "defaultTargetType": "ip",
        "createIngressClassResource": True,
        "nodeSelector": {"gpu-platform.io/node-role": "system"},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
    }


@dataclass(frozen=True)
class LoadBalancerControllerArgs:
    """Inputs of the LoadBalancerController component."""

    spec: PlatformSpec
    cluster_name: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    provider: k8s.Provider
    tags: dict[str, str]
    after: tuple[pulumi.Resource, ...] = ()
    """The Pod Identity agent add-on: without it the controller has no credentials."""


class LoadBalancerController(pulumi.ComponentResource):
    """IAM role bound by EKS Pod Identity, and the pinned aws-load-balancer-controller Helm release."""

    def __init__(self, name: str, args: LoadBalancerControllerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:LoadBalancerController", name, None, opts)
        spec = args.spec
        identity = pod_identity_role(name, args.cluster_name, NAMESPACE, SERVICE_ACCOUNT, controller_policy(), args.tags, self, args.after)
        helm_release(
            f"{name}-release",
            RELEASE,
            spec.lock.chart(RELEASE),
            NAMESPACE,
            controller_values(spec, args.vpc_id),
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[identity]),
        )
        self.register_outputs({})
