"""Key descriptions are read as pydantic's `use_attribute_docstrings` would read them, without its cost at import."""

from __future__ import annotations

import inspect

from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from gpu_platform.spec import field_docs
from gpu_platform.spec.models import Model, PlatformSpec


def test_every_model_documents_its_keys_as_pydantic_reads_them() -> None:
    # pydantic/_internal/_docs_extraction.py `extract_docstrings_from_cls`: what `use_attribute_docstrings`
    # would copy into each field's description (pydantic 2.14, the pinned version).
    for model in field_docs.models(PlatformSpec):
        upstream = extract_docstrings_from_cls(model, use_inspect=True)
        ours = {name: field_docs.description(model, name) for name in inspect.get_annotations(model) if name in model.model_fields}
        # pydantic keeps an explicit `Field(description=...)` over the docstring.
        assert ours == {name: model.model_fields[name].description or upstream.get(name) for name in ours}, model.__name__


def test_every_user_facing_key_is_described() -> None:
    undocumented = [
        f"{model.__name__}.{name}"
        for model in field_docs.models(PlatformSpec)
        if issubclass(model, Model)  # the lockfile's models (spec.lock) are the lockfile's, documented in docs/catalog-and-lockfile.md
        for name in model.model_fields
        if not field_docs.description(model, name) and not (model is PlatformSpec and name in {"stack", "lock", "region"})
    ]
    assert not undocumented, f"keys without a description (a string under the attribute): {undocumented}"
