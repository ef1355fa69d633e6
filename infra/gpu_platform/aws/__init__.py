"""AWS capacity: network, EKS cluster, IAM and tiered GPU node pools."""
