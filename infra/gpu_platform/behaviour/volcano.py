"""Volcano (the lockfile's release): the queue a pod's PodGroup lands in, and what the queue admission webhook refuses.

Sources: volcano-sh/volcano at the tag of the lockfile's chart version, cited per function.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from gpu_platform.behaviour.apimachinery import parse_quantity, quantity_errors

QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
DEFAULT_QUEUE = "default"
SCHEDULER_NAME = "volcano"
PODGROUP_MUTATE = "/podgroups/mutate"
# The chart's values.yaml custom.enabled_admissions at the pinned chart version (podgroups mutate is off there).
CHART_DEFAULT_ADMISSIONS = "/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,/hypernodes/validate,/cronjobs/validate"


def podgroup_queue(pod_annotations: Mapping[str, str], namespace_annotations: Mapping[str, str], enabled_admissions: str) -> tuple[str, str]:
    """(queue, why) of the PodGroup Volcano creates for a pod scheduled by `volcano`.

    pkg/controllers/podgroup/pg_controller_handler.go `buildPodGroupFromPod`: the queue is the pod's
    `scheduling.volcano.sh/queue-name` annotation, else empty, which the PodGroup CRD defaults to
    `default`; then pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go `createPodGroupPatch`
    (only when the admission is enabled, chart value custom.enabled_admissions) replaces `default` by
    the namespace's `scheduling.volcano.sh/queue-name` annotation.
    """
    if pod_annotations.get(QUEUE_ANNOTATION):
        return pod_annotations[QUEUE_ANNOTATION], f"the pod's {QUEUE_ANNOTATION} annotation"
    if PODGROUP_MUTATE in enabled_admissions.split(",") and namespace_annotations.get(QUEUE_ANNOTATION):
        return namespace_annotations[QUEUE_ANNOTATION], f"the namespace's {QUEUE_ANNOTATION} annotation (podgroups mutate webhook)"
    if namespace_annotations.get(QUEUE_ANNOTATION):
        return DEFAULT_QUEUE, "the namespace names a queue but the podgroups mutate webhook is off, so the CRD default applies"
    return DEFAULT_QUEUE, "no queue annotation on the pod or its namespace: the PodGroup CRD default"


UNLIMITED = Decimal("Infinity")


def real_capability(queue: Mapping[str, Any] | None, total: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """The most the queue may hold of each resource of the cluster's `total` (no guarantees elsewhere).

    pkg/scheduler/plugins/proportion/proportion.go `OnSessionOpen`: with a capability listed, cpu or
    memory <= 0 become unlimited (math.MaxFloat64); realCapability is the total (less other queues'
    guarantees, none here) cut per dimension by the capability, and a scalar resource the capability
    does not list stays unlimited (api/resource_info.go `MinDimensionResource` with `Infinity`). No
    capability at all: the whole total.
    """
    capability = ((queue or {}).get("spec") or {}).get("capability") or {}
    out = {}
    for name, amount in total.items():
        cap = parse_quantity(capability[name]) if name in capability else UNLIMITED
        if name in ("cpu", "memory") and cap <= 0:
            cap = UNLIMITED
        out[name] = min(amount, cap)
    return out


def capability_blocks(queue: Mapping[str, Any], requests: Mapping[str, Decimal]) -> list[str]:
    """Resources the queue's capability caps below the pod group's request.

    proportion.go `OnSessionOpen` / `allocatable` (`real_capability`): a resource listed in `capability`
    caps the queue (0 caps a GPU at nothing; cpu or memory of 0 mean unlimited); one missing from it is
    unlimited.
    """
    capability = (queue.get("spec") or {}).get("capability") or {}
    real = real_capability(queue, {name: UNLIMITED for name in requests})
    out = []
    for name, want in sorted(requests.items()):
        if want > 0 and real[name] < want:
            out.append(f"{name}: asks {want}, queue capability {capability[name]}")
    return out


def queue_errors(queue: Mapping[str, Any]) -> list[str]:
    """What Volcano's queue admission webhook refuses in a Queue (create), as `spec.<path>: <reason>` lines.

    pkg/webhooks/admission/queues/validate/validate_queue.go `validateQueue`:
    `validateResourceQuantityOfQueue` (every quantity valid; each resource in `guarantee.resource` must
    be in `deserved` with deserved >= guarantee; deserved <= capability where capability names the
    resource), `validateStateOfQueue` (Open or Closed), and `validateHierarchicalQueue` (a queue is not
    its own parent). Checks that need other queues from the lister (hierarchy annotations, parents'
    sums) apply only to hierarchical queues, which the platform does not render.
    """
    spec = queue.get("spec") or {}
    capability, errors = quantity_errors("spec.capability", spec.get("capability"))
    deserved, more = quantity_errors("spec.deserved", spec.get("deserved"))
    errors += more
    guarantee, more = quantity_errors("spec.guarantee.resource", (spec.get("guarantee") or {}).get("resource"))
    errors += more
    for name, g in guarantee.items():
        if name not in deserved:
            errors.append(f"spec.deserved.{name}: deserved[{name}] must be >= guarantee[{name}]={spec['guarantee']['resource'][name]}")
        elif deserved[name] < g:
            errors.append(f"spec.deserved.{name}: deserved[{name}] must be >= guarantee[{name}]")
    for name, d in deserved.items():
        if name in capability and d > capability[name]:
            errors.append(f"spec.deserved.{name}: deserved[{name}] must be <= capability[{name}]")
    state = (queue.get("status") or {}).get("state")
    if state and state not in ("Open", "Closed"):
        errors.append(f"spec.state: queue state must be in [Open Closed], not {state!r}")
    if spec.get("parent") and spec.get("parent") == (queue.get("metadata") or {}).get("name"):
        errors.append("spec.parent: a queue cannot use itself as parent")
    return errors
