"""gpu-platform: multi-tenant GPU Kubernetes platforms on EKS and bare metal, as code."""
