"""Turn pydantic validation errors into one-line, path-precise problems."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from gpu_platform.errors import Problem, did_you_mean, one_of

# pydantic error type prefix -> what the key accepts
EXPECTED = {
    "int_": "an integer",
    "float_": "a number",
    "bool_": "true or false",
    "string_": "text",
    "list_": "a list",
    "tuple_": "a list",
    "dict_": "a mapping",
    "model_": "a mapping",
}


def format_loc(loc: tuple[Any, ...], prefix: str) -> str:
    """('nodePools', 2, 'min') -> 'prefix nodePools[2].min'."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out and not out.endswith(":") else "") + str(part)
    return out


def _model_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that owns the last key of `loc` (for listing allowed keys)."""
    current = model
    in_dict = False  # the next part is a key of a `dict[str, Model]` field, not a field name
    for part in loc[:-1]:
        if current is None or isinstance(part, int) or in_dict:
            in_dict = False
            continue
        field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        in_dict = getattr(field.annotation, "__origin__", None) is dict
        current = _inner_model(field.annotation)
    return current


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def keys_of(model: type[BaseModel]) -> list[str]:
    """The YAML keys a model accepts."""
    return [f.alias or n for n, f in model.model_fields.items()]


def problems_from_validation(exc: Exception, file: str, prefix: str, model: type[BaseModel] | None = None) -> list[Problem]:
    """One Problem per pydantic error, with the key path, the bad value and what is allowed."""
    if not isinstance(exc, ValidationError):
        return [Problem(file, prefix, str(exc))]
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        path = format_loc(loc, prefix)
        kind = err["type"]
        value = err.get("input")
        ctx = err.get("ctx") or {}
        if kind == "extra_forbidden":
            owner = _model_at(model, loc)
            keys = keys_of(owner) if owner else []
            key = str(loc[-1])
            problems.append(Problem(file, path, f"unknown key '{key}'{did_you_mean(key, keys)}", one_of(keys) if keys else ""))
        elif kind == "missing":
            problems.append(Problem(file, path, "required key is missing", "set it in the stack file"))
        elif kind == "literal_error":
            problems.append(Problem(file, path, f"'{value}' is not a valid choice", f"allowed: {ctx.get('expected', '')}"))
        elif kind == "string_pattern_mismatch":
            problems.append(Problem(file, path, f"'{value}' has the wrong format", f"allowed: text matching {ctx.get('pattern')}"))
        elif kind == "value_error":
            # A validator may say what is allowed itself ("...; allowed: ..."); the CIDR hint is the default.
            text, _, allowed = str(ctx.get("error", err["msg"])).partition("; allowed: ")
            shown = "a mapping" if isinstance(value, dict) else repr(value)
            hint = f"allowed: {allowed}" if allowed else "allowed: an IPv4 network with host bits zero, e.g. 10.40.0.0/16"
            problems.append(Problem(file, path, f"{shown}: {text}", hint))
        elif kind in {"string_too_long", "string_too_short", "too_long", "too_short"}:
            limit = ctx.get("max_length", ctx.get("min_length"))
            unit = "characters" if kind.startswith("string") else "items"
            bound = "at most" if kind.endswith("long") else "at least"
            problems.append(Problem(file, path, f"{value!r} is too {kind.rsplit('_', 1)[-1]}", f"allowed: {bound} {limit} {unit}"))
        elif kind in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
            bound = {"greater_than_equal": ">=", "less_than_equal": "<=", "greater_than": ">", "less_than": "<"}[kind]
            limit = next(iter(ctx.values()), "")
            problems.append(Problem(file, path, f"{value!r} is out of range", f"allowed: {bound} {limit}"))
        else:
            shown = "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else repr(value)
            expected = next((v for k, v in EXPECTED.items() if kind.startswith(k)), "")
            problems.append(Problem(file, path, f"{shown}: {err['msg'].lower()}", f"allowed: {expected}" if expected else ""))
    return problems
