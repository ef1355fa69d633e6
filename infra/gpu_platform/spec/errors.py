"""Turn pydantic validation errors into one-line, path-precise problems."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from gpu_platform.errors import Problem, did_you_mean, one_of
from gpu_platform.spec.secrets import SECRET_KEY_NAME

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


# A key's pattern said in words (the pattern itself after it, for whoever wants the exact rule).
PATTERN_WORDS = {
    r"^[a-z]([-a-z0-9]*[a-z0-9])?$": "lower-case letters, digits and '-', starting with a letter and not ending with '-' (a DNS label)",
    r"^[a-z][-a-z0-9]*$": "lower-case letters, digits and '-', starting with a letter",
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$": "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (a DNS subdomain)",
    r"^[-._a-zA-Z0-9]+$": "letters, digits, '-', '_' and '.'",
    r"^(\d+|\d{1,3}%)$": "a whole number of nodes (2) or a percentage (25%)",
    r"^[a-z]{2}(-[a-z]+)+-[0-9]$": "an AWS region name such as us-east-1",
    r"^cr-[0-9a-f]{8,17}$": "a Capacity Reservation id: cr- and 8 to 17 lower-case hex digits",
    r"^vpc-[0-9a-f]{8,17}$": "a VPC id: vpc- and 8 to 17 lower-case hex digits",
    r"^subnet-[0-9a-f]{8,17}$": "a subnet id: subnet- and 8 to 17 lower-case hex digits",
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$": "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 255 characters",
    r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/.+$": "a resource group ARN, arn:aws:resource-groups:<region>:<account>:group/<name>",
}


def pattern_in_words(pattern: str) -> str:
    """What a pattern accepts, in words where this project knows it, else the pattern itself."""
    words = PATTERN_WORDS.get(pattern)
    return f"{words} (pattern {pattern})" if words else f"text matching {pattern}"


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


class _NotShown:
    """Stands for a value the error line must not print."""

    def __repr__(self) -> str:
        return "(not shown: the key names a credential)"

    __str__ = __repr__


_NOT_SHOWN = _NotShown()


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
        if any(isinstance(part, str) and SECRET_KEY_NAME.search(part) for part in loc):
            value = _NOT_SHOWN  # a credential-named key's value is never echoed, whatever it looks like
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
            problems.append(Problem(file, path, f"'{value}' has the wrong format", f"allowed: {pattern_in_words(str(ctx.get('pattern')))}"))
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
    return merge_typos(problems)


def merge_typos(problems: list[Problem]) -> list[Problem]:
    """A misspelt required key is one problem, not two: the unknown key whose suggestion is the missing key says both."""
    missing = {p.path for p in problems if p.message == "required key is missing"}
    merged: set[str] = set()
    out = []
    for p in problems:
        parent, _, key = p.path.rpartition(".")
        suggestion = p.message.partition("(did you mean '")[2].partition("'?)")[0] if p.message.startswith("unknown key") else ""
        wanted = f"{parent}.{suggestion}" if parent else suggestion
        if suggestion and wanted in missing:
            merged.add(wanted)
            out.append(Problem(p.file, p.path, f"unknown key '{key}' (did you mean '{suggestion}'? it is required and missing)", p.allowed))
        else:
            out.append(p)
    return [p for p in out if not (p.message == "required key is missing" and p.path in merged)]
