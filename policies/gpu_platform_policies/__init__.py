"""gpu-platform's policy rule set: small pure rules over a plain resource view, two runners.

`gpu-platform check` runs them over the offline plan; `policies/pack` wraps them for CrossGuard.
"""

from gpu_platform_policies.evaluate import effective_level, evaluate, run_rule
from gpu_platform_policies.model import (
    CHANGE_RULES,
    LEVELS,
    RULES,
    THRESHOLD_DEFAULTS,
    Context,
    Finding,
    Level,
    PlanView,
    Resource,
    Rule,
    Violation,
)
from gpu_platform_policies.rules import (
    ansible,
    capacity,
    change,
    controllers,
    demand,
    federation,
    gpu,
    network,
    observability,
    paths,
    rollout,
    security,
    versions,
)

CATEGORIES = (security, network, gpu, versions, capacity, demand, rollout, observability, controllers, federation, paths, ansible)
CHANGE_CATEGORIES = (change,)  # registered into CHANGE_RULES: run by `check --base` only

__all__ = [
    "CATEGORIES",
    "CHANGE_RULES",
    "LEVELS",
    "RULES",
    "THRESHOLD_DEFAULTS",
    "Context",
    "Finding",
    "Level",
    "PlanView",
    "Resource",
    "Rule",
    "Violation",
    "effective_level",
    "evaluate",
    "run_rule",
]
