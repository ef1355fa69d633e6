"""What each spec key means: the attribute docstrings of the spec models, read only where they are shown.

A model documents a key with a string right under the annotated attribute. pydantic can copy those
into every field's description at import (`use_attribute_docstrings`), but then parses each model's
source in every process: about 85 ms of every command's start-up and of every `pulumi up`, for text
only the generated key reference (docs/configuration.md) and the stack file's JSON Schema show. They
are read here instead, the way pydantic reads them (pydantic/_internal/_docs_extraction.py
`DocstringVisitor`: a string statement right after an annotated assignment documents that
attribute, cleaned with `inspect.cleandoc`).
"""

from __future__ import annotations

import ast
import inspect
import sys
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel


@cache
def _class_docs(module: str) -> dict[str, dict[str, str]]:
    """{class name: {attribute: docstring}} for the classes defined at the top of `module`."""
    tree = ast.parse(inspect.getsource(sys.modules[module]))
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            docs = out.setdefault(node.name, {})
            for attr, doc in zip(node.body, node.body[1:], strict=False):
                if (
                    isinstance(attr, ast.AnnAssign)
                    and isinstance(attr.target, ast.Name)
                    and isinstance(doc, ast.Expr)
                    and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)
                ):
                    docs[attr.target.id] = inspect.cleandoc(doc.value.value)
    return out


def description(model: type[BaseModel], name: str) -> str | None:
    """The meaning of field `name`: its `Field(description=...)`, else the docstring where the class that declares it declares it."""
    explicit = model.model_fields[name].description
    if explicit is not None:
        return explicit
    for cls in model.__mro__:
        if name in inspect.get_annotations(cls):
            return _class_docs(cls.__module__).get(cls.__qualname__, {}).get(name)
    return None


def models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """`root` and every model its fields reach, each once."""
    found: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in found:
                found.append(annotation)
                for field in annotation.model_fields.values():
                    visit(field.annotation)
            return
        for arg in typing.get_args(annotation):
            visit(arg)

    visit(root)
    return found


def describe(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Add each field's description to the JSON Schema pydantic generated for `model` (by alias), in place.

    pydantic sorts every schema's keys except the members of `properties` (GenerateJsonSchema.sort); a
    description added here is placed as it would have placed it.
    """
    properties: dict[str, Any] = schema.get("properties", {})
    for name, field in model.model_fields.items():
        key = field.alias or name
        text = description(model, name)
        if key in properties and text is not None and "description" not in properties[key]:
            properties[key] = dict(sorted({**properties[key], "description": text}.items()))
