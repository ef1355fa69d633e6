"""Kubernetes apimachinery: quantities and label selectors, as the API server and every controller read them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

# k8s.io/apimachinery pkg/api/resource/quantity.go suffixes (binary, decimal SI, and e-notation handled apart).
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal(10**3)}
_DECIMAL |= {"M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)$")
# Resources the API server counts in whole units besides extended resources (core/helper IsIntegerResourceName).
_STANDARD_INTEGER = {"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims"}


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity (`4`, `500m`, `256Gi`, `1e3`) as an exact number; ValueError if malformed.

    k8s.io/apimachinery pkg/api/resource/quantity.go `ParseQuantity`.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    m = _QUANTITY.match(str(value).strip())
    if not m:
        raise ValueError(f"{value!r} is not a quantity")
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a quantity") from None
    suffix = m.group(2)
    if suffix[:1] in ("e", "E"):
        return number * (Decimal(10) ** int(suffix[1:]))
    return number * (_BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix])


def is_integer_resource(name: str) -> bool:
    """k8s pkg/apis/core/helper IsIntegerResourceName: standard integer resources and extended resources."""
    extended = "/" in name and not name.startswith(("kubernetes.io/", "requests.")) and ".kubernetes.io/" not in name
    return name in _STANDARD_INTEGER or extended


def quantity_errors(path: str, resources: Any) -> tuple[dict[str, Decimal], list[str]]:
    """k8s pkg/apis/core/validation ValidateResourceQuantityValue per entry: parseable, not negative, whole for integer resources."""
    out: dict[str, Decimal] = {}
    errors = []
    for name, raw in (resources or {}).items():
        try:
            q = parse_quantity(raw)
        except ValueError as exc:
            errors.append(f"{path}.{name}: {exc}")
            continue
        if q < 0:
            errors.append(f"{path}.{name}: must be greater than or equal to 0")
        elif is_integer_resource(str(name)) and q != q.to_integral_value():
            errors.append(f"{path}.{name}: must be an integer")
        out[str(name)] = q
    return out, errors


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """k8s apimachinery metav1.LabelSelectorAsSelector(...).Matches: matchLabels and matchExpressions, ANDed.

    A nil selector matches everything here (Kueue's namespaceMatchesSelector and the admission
    plugins' matchers treat nil that way).
    """
    if selector is None:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"label selector operator {op!r} is not one of In, NotIn, Exists, DoesNotExist")
        if (
            (op == "In" and not (present and labels[key] in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True
