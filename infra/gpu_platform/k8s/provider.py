"""The Kubernetes provider: the new EKS cluster's kubeconfig, or an existing cluster's."""

from __future__ import annotations

import os

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.spec.models import ClusterSpec


def existing_cluster_provider(name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None) -> k8s.Provider:
    """Provider for an on-prem cluster, from its kubeconfig file and context."""
    path = os.path.expanduser(spec.kubeconfig) if spec.kubeconfig else None
    return k8s.Provider(
        name,
        kubeconfig=path,
        context=spec.context,
        enable_server_side_apply=True,
        opts=opts,
    )


def eks_provider(name: str, kubeconfig: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None) -> k8s.Provider:
    """Provider for the EKS cluster this stack creates."""
    return k8s.Provider(name, kubeconfig=kubeconfig, enable_server_side_apply=True, opts=opts)
