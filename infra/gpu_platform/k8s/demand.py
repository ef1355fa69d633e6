"""The stack's declared demand as a ConfigMap, so both policy runners (offline gate, CrossGuard) see it.

The capacity policies compare each workload class's pools with its P95 demand; CrossGuard only sees
resources, so the demand travels as one: ConfigMap `gpu-platform-capacity-demand` in kube-system,
`data["demand.json"]` = `[{"workloadClass", "p95", "sla", "interruptible"}]`.
"""

from __future__ import annotations

import json

from gpu_platform.k8s.objects import Manifest, metadata
from gpu_platform.pools import DOMAIN
from gpu_platform.spec.models import PlatformSpec

DEMAND_CONFIGMAP = "gpu-platform-capacity-demand"
DEMAND_NAMESPACE = "kube-system"
DEMAND_KEY = "demand.json"


def demand_configmap(spec: PlatformSpec) -> Manifest | None:
    """The ConfigMap of the stack's demand, or None when the stack declares none."""
    if not spec.demand:
        return None
    entries = [{"workloadClass": d.workload_class, "p95": d.p95, "sla": d.sla, "interruptible": d.interruptible} for d in spec.demand]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(DEMAND_CONFIGMAP, DEMAND_NAMESPACE, {f"{DOMAIN}/capacity-demand": "true"}),
        "data": {DEMAND_KEY: json.dumps(entries, sort_keys=True)},
    }
