"""The shipped JSON Schema of stack files: in step with the models, found by editors, and as strict as the loader.

Editors reach the schema through yaml-language-server (redhat-developer/yaml-language-server): its
`src/languageservice/utils/modelineUtil.ts` (`isModeline`, `getSchemaFromModeline`) finds the
`# yaml-language-server: $schema=<path>` comment, and `yamlSchemaService.ts`
(`getSchemaForResource` -> `resolveModelineSchema`) resolves a relative path against the directory of
the YAML file. The server documents JSON Schema draft-07; `jsonschema.Draft7Validator` stands in for
its validator here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gpu_platform.cli import main
from gpu_platform.spec import schema as stack_schema
from gpu_platform.spec.loader import PROJECT, PROJECT_KEYS
from gpu_platform.spec.models import NodePool
from tests.conftest import ROOT, STACKS, stack_path

SHIPPED = ROOT / stack_schema.SCHEMA_PATH
# modelineUtil.ts at yaml-language-server 1.x: the line test and the $schema capture.
IS_MODELINE = re.compile(r"^#\s+(?:yaml-language-server|\$schema)\s*:")
SCHEMA_IN_MODELINE = re.compile(r"\$schema(?:=|:\s*)(\S+)")


def shipped() -> dict[str, Any]:
    return json.loads(SHIPPED.read_text())


def validator() -> jsonschema.Draft7Validator:
    schema = shipped()
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def modeline_schema(stack_file: Path) -> Path | None:
    """The schema file yaml-language-server would load for a stack file, resolved as the server does."""
    for line in stack_file.read_text().splitlines():
        if line.startswith("#") and IS_MODELINE.match(line):
            found = SCHEMA_IN_MODELINE.search(line)
            return (stack_file.parent / found.group(1)).resolve() if found else None
    return None


def test_shipped_schema_is_what_the_models_generate() -> None:
    """Regenerate and compare: a model change without `python -m gpu_platform.spec.schema --write` fails here."""
    assert SHIPPED.read_text() == stack_schema.render(), "schema/stack.schema.json is stale: run `python -m gpu_platform.spec.schema --write`"


def test_every_spec_key_and_nested_field_is_in_the_schema() -> None:
    config = shipped()["properties"]["config"]
    assert set(config["properties"]) == {f"{PROJECT}:{k}" for k in PROJECT_KEYS} | {"aws:region"}
    node_pool = shipped()["definitions"]["NodePool"]
    assert set(node_pool["properties"]) == {f.alias or n for n, f in NodePool.model_fields.items()}
    assert node_pool["properties"]["capacity"]["enum"] == ["reserved", "capacity-block", "on-demand", "spot"]
    assert node_pool["properties"]["workloadClass"]["description"], "descriptions feed the editor's hover text"


@pytest.mark.parametrize("name", STACKS)
def test_every_stack_file_points_editors_at_the_shipped_schema(name: str) -> None:
    assert modeline_schema(stack_path(name)) == SHIPPED.resolve()


@pytest.mark.parametrize("name", STACKS)
def test_every_stack_file_is_valid_against_the_schema(name: str) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(yaml.safe_load(stack_path(name).read_text()))]
    assert errors == []


def _pool(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in doc["config"][f"{PROJECT}:nodePools"] if p["name"] == name)


# (id, base stack, mutation of the stack document, key path the loader names): mistakes of shape
# (typos, types, choices) that a schema can express; cross-field rules stay the loader's.
STRUCTURAL: list[tuple[str, str, Any, str]] = [
    ("typo-top-key", "prod", lambda d: d["config"].update({f"{PROJECT}:nodePool": []}), f"{PROJECT}:nodePool"),
    (
        "typo-pool-key",
        "prod",
        lambda d: _pool(d, "infer-l4-spot").update(instanceType=["g6.xlarge"]),
        f"{PROJECT}:nodePools[4].instanceType",
    ),
    (
        "typo-cluster-key",
        "prod",
        lambda d: d["config"][f"{PROJECT}:cluster"].update(endpointPrivateAcess=True),
        f"{PROJECT}:cluster.endpointPrivateAcess",
    ),
    (
        "wrong-type-scaling",
        "prod",
        lambda d: _pool(d, "infer-l4-spot").update(scaling={"min": "zero", "desired": 4, "max": 24}),
        f"{PROJECT}:nodePools[4].scaling.min",
    ),
    ("wrong-type-efa", "prod", lambda d: _pool(d, "infer-l4-spot").update(efa="maybe"), f"{PROJECT}:nodePools[4].efa"),
    (
        "sharing-mode-typo",
        "dev",
        lambda d: _pool(d, "dev-l4-spot").update(sharing={"mode": "timeslicing", "replicas": 4}),
        f"{PROJECT}:nodePools[0].sharing.mode",
    ),
    ("capacity-typo", "dev", lambda d: _pool(d, "dev-l4-spot").update(capacity="spots"), f"{PROJECT}:nodePools[0].capacity"),
    ("environment-not-dns", "dev", lambda d: d["config"].update({f"{PROJECT}:environment": "Dev_1"}), f"{PROJECT}:environment"),
]


@pytest.mark.parametrize("case", STRUCTURAL, ids=lambda c: c[0])
def test_editor_flags_what_the_loader_refuses(case: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Typos, wrong types and bad choices show in the editor at the same key the CLI names (exit 2)."""
    _, base, mutate, key_path = case
    doc = yaml.safe_load(stack_path(base).read_text())
    mutate(doc)
    file = tmp_path / f"Pulumi.{base}.yaml"
    file.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["plan", "--config", str(file)]) == 2
    assert key_path in capsys.readouterr().err
    errors = list(validator().iter_errors(doc))
    assert errors, "the schema accepted what the loader refuses"
    assert key_path in {schema_key_path(leaf) for e in errors for leaf in leaves(e)}


def leaves(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """An `anyOf` failure (an optional mapping) carries the real errors of each branch in its context."""
    return [leaf for sub in error.context for leaf in leaves(sub)] if error.context else [error]


def schema_key_path(error: jsonschema.ValidationError) -> str:
    """A schema error's location written the way the loader names keys: `ns:key[0].child`."""
    parts = list(error.absolute_path)[1:]  # below `config`
    if error.validator == "additionalProperties":
        patterns = [re.compile(p) for p in error.schema.get("patternProperties", {})]
        parts += [k for k in error.instance if k not in error.schema.get("properties", {}) and not any(p.search(k) for p in patterns)]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def test_versions_override_is_partial_but_checks_names() -> None:
    """`gpu-platform:versions` is deep-merged over the lockfile: any subset is fine, a misspelt key is not."""
    doc = yaml.safe_load(stack_path("prod").read_text())
    doc["config"][f"{PROJECT}:versions"] = {"nvidia_driver": {"branch": "570"}}
    assert list(validator().iter_errors(doc)) == []
    doc["config"][f"{PROJECT}:versions"] = {"nvidia_drivers": {"branch": "570"}}
    assert [e.message for e in validator().iter_errors(doc)] == ["Additional properties are not allowed ('nvidia_drivers' was unexpected)"]


def test_other_providers_keys_pass_and_unnamespaced_keys_do_not() -> None:
    doc = yaml.safe_load(stack_path("dev").read_text())
    doc["config"]["kubernetes:context"] = "lab"
    assert list(validator().iter_errors(doc)) == []
    doc["config"]["nodePools"] = []
    assert len(list(validator().iter_errors(doc))) == 1
