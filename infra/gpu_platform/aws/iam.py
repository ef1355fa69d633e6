"""IAM roles for the EKS control plane, GPU nodes and the cluster autoscaler (least privilege)."""

from __future__ import annotations

import json

# Exactly what a worker node needs: join the cluster, run the VPC CNI, pull images, and be managed
# through SSM instead of SSH. No admin, no S3 or EC2 full access on nodes.
NODE_MANAGED_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
)
CLUSTER_MANAGED_POLICIES = ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",)


def assume_role_policy(service: str, session_tags: bool = False) -> str:
    """Trust policy letting one AWS service principal assume the role."""
    actions = ["sts:AssumeRole", "sts:TagSession"] if session_tags else ["sts:AssumeRole"]
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
        }
    )


def autoscaler_policy(cluster_name: str) -> str:
    """Cluster-autoscaler permissions, write actions limited to this cluster's node groups."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": [
                        "autoscaling:DescribeAutoScalingGroups",
                        "autoscaling:DescribeAutoScalingInstances",
                        "autoscaling:DescribeLaunchConfigurations",
                        "autoscaling:DescribeScalingActivities",
                        "autoscaling:DescribeTags",
                        "ec2:DescribeImages",
                        "ec2:DescribeInstanceTypes",
                        "ec2:DescribeLaunchTemplateVersions",
                        "ec2:GetInstanceTypesFromInstanceRequirements",
                        "eks:DescribeNodegroup",
                    ],
                    "Resource": "*",
                },
                {
                    "Effect": "Allow",
                    "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                    "Resource": "*",
                    "Condition": {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"}},
                },
            ],
        }
    )
