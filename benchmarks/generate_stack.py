"""Generate a large, valid EKS stack file (N pools, M tenants) for benchmarks and scale tests."""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import yaml

# (instance types, workload class, capacity tier, sharing) cycled over the generated pools.
SHAPES = [
    (["g6.xlarge", "g6.2xlarge"], "inference", "spot", {"mode": "none"}),
    (["g6.xlarge"], "inference", "on-demand", {"mode": "time-slicing", "replicas": 4}),
    (["g5.xlarge", "g5.2xlarge"], "development", "spot", {"mode": "mps", "replicas": 8}),
    (["p4de.24xlarge"], "inference", "on-demand", {"mode": "mig", "migConfig": "all-balanced"}),
    (["p5.48xlarge"], "training", "on-demand", {"mode": "none"}),
    (["g6e.xlarge", "g6e.2xlarge"], "batch", "spot", {"mode": "none"}),
    (["g6e.xlarge"], "batch", "on-demand", {"mode": "none"}),
]
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def generate(pools: int, tenants: int) -> dict:
    """A stack document with `pools` node pools and `tenants` tenants spread over them."""
    node_pools = []
    for i, (types, cls, tier, sharing) in zip(range(pools), itertools.cycle(SHAPES), strict=False):
        pool = {
            "name": f"pool-{i:03d}",
            "workloadClass": cls,
            "capacity": tier,
            "instanceTypes": types,
            "scaling": {"min": 1 if tier == "on-demand" else 0, "desired": 1, "max": 8},
            "sharing": sharing,
        }
        if cls == "training":
            pool.update(efa=True, availabilityZones=[ZONES[i % 3]])
        node_pools.append(pool)
    tenant_list = []
    for t in range(tenants):
        picks = [node_pools[(t + k) % pools]["name"] for k in range(3)]
        tenant_list.append(
            {
                "name": f"team-{t:03d}",
                "groups": [f"team-{t:03d}"],
                "cohort": f"cohort-{t % 10}",
                "quotas": [{"pool": p, "gpus": 1} for p in dict.fromkeys(picks)],
            }
        )
    return {
        "config": {
            "aws:region": "us-east-1",
            "gpu-platform:environment": "bench",
            # the deploy path the spec requires: public API limited to the deployers, private for nodes
            "gpu-platform:cluster": {"provider": "eks", "name": "gpu-bench", "endpointPublicAccess": True, "publicAccessCidrs": ["198.51.100.0/27"]},
            "gpu-platform:network": {"mode": "new", "cidr": "10.50.0.0/16", "availabilityZones": ZONES},
            "gpu-platform:nodePools": node_pools,
            "gpu-platform:tenants": tenant_list,
            "gpu-platform:queueing": {"volcano": {"enabled": True}},
        }
    }


def main() -> None:
    """Write the generated stack to --out."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pools", type=int, default=100)
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.write_text(yaml.safe_dump(generate(args.pools, args.tenants), sort_keys=False))


if __name__ == "__main__":
    main()
