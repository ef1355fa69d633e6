"""Every Volcano Queue the program renders passes Volcano v1.15.1's queue admission webhook.

Reproduces volcano-sh/volcano v1.15.1 pkg/webhooks/admission/queues/validate/validate_queue.go
(`AdmitQueues` -> `validateQueue` -> `validateResourceQuantityOfQueue`, `validateStateOfQueue`,
`validateHierarchicalQueue`) in gpu_platform.behaviour.volcano.queue_errors; the unit cases below
are the resource cases of that file's validate_queue_test.go.
"""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from gpu_platform.behaviour.apimachinery import parse_quantity
from gpu_platform.behaviour.volcano import queue_errors as volcano_queue_errors
from tests.k8s.helpers import objects


def _queue(**spec: object) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1, **spec}}


@pytest.mark.parametrize(
    ("queue", "refused"),
    [
        (_queue(), ""),  # resource-not-set
        (_queue(deserved={"cpu": "1", "memory": "1Gi"}), ""),  # only-deserved-set
        (_queue(guarantee={"resource": {"cpu": "1", "memory": "1Gi"}}), "deserved[cpu] must be >= guarantee[cpu]"),  # only-guarantee-set
        (_queue(capability={"cpu": "1"}, deserved={"cpu": "2"}), "deserved[cpu] must be <= capability[cpu]"),  # capability-less-deserved
        (_queue(deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "2"}}), "deserved[cpu] must be >= guarantee[cpu]"),  # deserved-less-guarantee
        (_queue(capability={"nvidia.com/gpu": "-1"}), "must be greater than or equal to 0"),
        (_queue(capability={"nvidia.com/gpu": "1500m"}), "must be an integer"),
        ({**_queue(), "status": {"state": "wrong"}}, "queue state must be in"),  # abnormal-case
    ],
)
def test_webhook_reproduction(queue: dict, refused: str) -> None:
    errors = volcano_queue_errors(queue)
    if refused:
        assert any(refused in e for e in errors), errors
    else:
        assert errors == []


def test_quantities_compare_as_the_api_server_does() -> None:
    assert parse_quantity("256Gi") == Decimal(256 * 2**30)
    assert parse_quantity("1500m") == Decimal("1.5")
    assert parse_quantity("2k") == parse_quantity("2e3") == Decimal(2000)
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity("ten")


def test_every_rendered_queue_is_admitted(stack: str) -> None:
    queues = objects(stack, "Queue")
    for q in queues:
        assert volcano_queue_errors(q) == [], (stack, q["metadata"]["name"], volcano_queue_errors(q))
        spec = q["spec"]
        # guarantee <= deserved <= capability, and no GPU resource left unlimited by omission.
        # (Volcano's own `default` queue, taken over with GPU capability 0, guarantees nothing.)
        for name, g in spec.get("guarantee", {}).get("resource", {}).items():
            assert parse_quantity(g) <= parse_quantity(spec["deserved"][name]) <= parse_quantity(spec["capability"][name])


def test_tenant_queues_leave_gpus_to_kueue(stack: str) -> None:
    """Kueue owns GPU quota: a tenant Queue lists no GPU resource anywhere (a second ledger could only disagree)."""
    for q in objects(stack, "Queue"):
        if q["metadata"]["name"] == "default":
            continue
        spec = q["spec"]
        listed = set(spec.get("capability", {})) | set(spec.get("deserved", {})) | set(spec.get("guarantee", {}).get("resource", {}))
        assert not {n for n in listed if n.startswith("nvidia.com/")}, (stack, q["metadata"]["name"], listed)
        # cpu and memory stay capped at the ResourceQuota's, which the API server enforces anyway.
        assert set(spec["capability"]) == {"cpu", "memory"}


def test_the_old_rendering_is_refused() -> None:
    """Queues once carried a guarantee and no deserved: the webhook refused all of them at `pulumi up`."""
    for q in [q for q in objects("onprem", "Queue") if q["metadata"]["name"] != "default"]:
        old = copy.deepcopy(q)
        old["spec"]["guarantee"] = {"resource": {"nvidia.com/gpu": "8"}}
        assert any("must be >= guarantee" in e for e in volcano_queue_errors(old))
