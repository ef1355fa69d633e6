"""What the platform does with one workload, stage by stage (`gpu-platform explain`)."""
