"""The Kubernetes GPU platform layer, the same for EKS and on-prem clusters."""
