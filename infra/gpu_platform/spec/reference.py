"""The config key reference (docs/configuration.md), generated from the spec models so it cannot drift."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from gpu_platform.spec import field_docs
from gpu_platform.spec.models import PlatformSpec

INTERNAL = {"stack", "lock", "region"}


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args if a is not type(None))
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (tuple, list):
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map of {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    name = getattr(annotation, "__name__", str(annotation))
    return {"str": "text", "int": "integer", "bool": "boolean", "float": "number"}.get(name, name)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default is PydanticUndefined and field.default_factory else field.default
    if isinstance(value, BaseModel) or value in (None, (), {}):
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(map(str, value)) + "]`"
    return f"`{value}`"


def rows(model: type[BaseModel] = PlatformSpec, prefix: str = "gpu-platform:") -> list[tuple[str, str, str, str]]:
    """(key path, type, default, description) for every key, depth first."""
    out = []
    for name, field in model.model_fields.items():
        if model is PlatformSpec and name in INTERNAL:
            continue
        key = field.alias or name
        path = f"{prefix}{key}" if prefix.endswith(":") else f"{prefix}.{key}"
        origin = typing.get_origin(field.annotation)
        args = typing.get_args(field.annotation)
        is_list = origin is tuple and args and _model_of(args[0]) is not None
        out.append((path + ("[]" if is_list else ""), _type_name(field.annotation), _default(field), field_docs.description(model, name) or ""))
        child = _model_of(field.annotation)
        if child is not None:
            out += rows(child, path + ("[]" if is_list else ""))
    return out


def markdown() -> str:
    """The reference as a Markdown table."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    lines.append("| `aws:region` | text | required (EKS) | AWS region of an EKS stack. |")
    lines += [f"| `{k}` | {t} | {d} | {m} |" for k, t, d, m in rows()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
