"""Read a Pulumi stack file (or Pulumi's runtime config) into a validated PlatformSpec."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.catalog import load_catalog
from gpu_platform.errors import ConfigError, Problem, did_you_mean, one_of
from gpu_platform.input_limits import STACK_FILE, check_yaml, not_a_file, read_capped
from gpu_platform.spec.checks import check_spec
from gpu_platform.spec.duplicates import duplicate_keys_in
from gpu_platform.spec.errors import keys_of
from gpu_platform.spec.federation_checks import check_federation
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.spec.pulumi_yaml import PulumiLoader, unsupported_scalars
from gpu_platform.spec.repair import follows_from, validate_all
from gpu_platform.spec.secrets import plain_text_credentials, replace_secure, secure_problem
from gpu_platform.versions import deep_merge, parse_lockfile, raw_lockfile

PROJECT = "gpu-platform"
STACK_FILE_KEYS = {"config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"}
# Config keys under the project namespace (the PlatformSpec field aliases).
PROJECT_KEYS = (
    "environment",
    "cluster",
    "network",
    "nodePools",
    "tenants",
    "queueing",
    "monitoring",
    "storage",
    "gpuOperator",
    "versions",
    "policy",
    "tags",
    "demand",
    "workers",
)
SCALAR_KEYS = {"environment"}


def stack_file_for(name: str, root: Path | None = None) -> Path:
    """`stacks/Pulumi.<name>.yaml` under the repository root."""
    base = root or Path.cwd()
    return base / "stacks" / f"Pulumi.{name}.yaml"


def _dates_as_text(value: Any) -> Any:
    """YAML 1.1 dates (`2026-11-16`) as the ISO text Pulumi hands the program (its YAML reader keeps them strings)."""
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _dates_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates_as_text(v) for v in value]
    return value


def read_stack_config(path: Path) -> dict[str, Any]:
    """The `config:` mapping of a stack file; ConfigError for a missing, empty or malformed file."""
    config, problems = _read_stack_config(path)
    if problems:
        raise ConfigError(problems)
    return config


def _read_stack_config(path: Path) -> tuple[dict[str, Any], list[Problem]]:
    """The `config:` mapping and the problems around it that do not stop it being read (unknown top-level keys)."""
    file = str(path)
    if path.is_dir():
        found = sorted(p.name for p in path.glob("Pulumi.*.yaml"))
        hint = f"allowed: a stack file, e.g. {path / found[0]}" if found else "allowed: a stack file (stacks/Pulumi.NAME.yaml), not a directory"
        raise ConfigError([Problem(file, "", "is a directory, not a stack file", hint)])
    why = not_a_file(path)
    if why is not None:
        raise ConfigError([Problem(file, "", why, "pass --stack NAME (stacks/Pulumi.NAME.yaml) or --config FILE")])
    allowed = "allowed: a Pulumi stack file (UTF-8 YAML with a `config:` mapping)"
    text = read_capped(path, STACK_FILE, allowed)
    check_yaml(text, file, STACK_FILE, allowed)
    # One parse: the node tree finds repeated keys (which the data would silently drop), then becomes the data
    # (PyYAML's `yaml.load` is this: `BaseConstructor.get_single_data`).
    loader = PulumiLoader(text)  # scalars as the Pulumi CLI's yaml.v3 reads them (gpu_platform.spec.pulumi_yaml)
    try:
        root = loader.get_single_node()
        # Walked before construction, which merges `<<` keys into the tree (SafeConstructor.flatten_mapping).
        duplicates = duplicate_keys_in(root, file) + unsupported_scalars(root, file)
        doc = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        hint = "allowed: YAML whose keys line up with their siblings (indent with spaces, never tabs), under a top-level `config:`"
        raise ConfigError([Problem(file, where, f"invalid YAML: {reason}", hint)]) from None
    finally:
        loader.dispose()
    if duplicates:
        raise ConfigError(duplicates)
    doc = _dates_as_text(doc)
    if doc is None:
        raise ConfigError([Problem(file, "", "file is empty", "allowed: a Pulumi stack file with a `config:` mapping")])
    if not isinstance(doc, Mapping):
        raise ConfigError(
            [Problem(file, "", f"top level is a {type(doc).__name__}, not a mapping", "allowed: a Pulumi stack file with a `config:` mapping")]
        )
    problems = [
        Problem(file, str(k), f"unknown top-level key '{k}'{did_you_mean(str(k), STACK_FILE_KEYS)}", one_of(STACK_FILE_KEYS))
        for k in doc
        if k not in STACK_FILE_KEYS
    ]
    if "environment" in doc:
        # pulumi pkg/cmd/pulumi/config/io.go openStackEnv: Pulumi Cloud evaluates the ESC environment at `pulumi up`
        # and merges its pulumiConfig under the stack's values; nothing offline can know what it sets.
        problems.append(
            Problem(
                file,
                "environment",
                "a Pulumi ESC environment supplies config only Pulumi Cloud can see at `pulumi up`, so the gate cannot judge it",
                "allowed: every value in the stack file itself (or in Pulumi.yaml defaults)",
            )
        )
    config = doc.get("config")
    if not isinstance(config, Mapping):
        problems.append(Problem(file, "config", "missing or not a mapping", f"allowed: a mapping of '{PROJECT}:<key>' entries"))
        raise ConfigError(problems)
    return {**project_defaults(path), **config}, problems


def project_file(stack_path: Path) -> Path | None:
    """The Pulumi.yaml whose project a stack file belongs to: in the stack's folder or the nearest one above it."""
    for folder in stack_path.resolve().parents:
        if (folder / "Pulumi.yaml").is_file():
            return folder / "Pulumi.yaml"
    return None


def project_defaults(stack_path: Path) -> dict[str, Any]:
    """Project-level config of Pulumi.yaml that applies where the stack file sets the key to nothing (project_config)."""
    found = project_file(stack_path)
    if found is None:
        return {}
    text = read_capped(found, STACK_FILE, "allowed: a Pulumi project file")
    return project_config(text, str(found))


def project_config(text: str, file: str) -> dict[str, Any]:
    """The config a Pulumi.yaml's text gives every stack of the project, by namespaced key.

    pulumi pkg/workspace/config.go `mergeConfig`: a key absent from the stack takes the project's `value` or
    `default` (a shorthand scalar or list is a default, project.go `RewriteShorthandConfigValues`); keys
    without a namespace belong to the project. A stack-file value always wins.
    """
    check_yaml(text, file, STACK_FILE, "allowed: a Pulumi project file")
    try:
        doc = yaml.load(text, Loader=PulumiLoader)
    except yaml.YAMLError:
        raise ConfigError([Problem(file, "", "invalid YAML", "allowed: a Pulumi project file")]) from None
    declared = doc.get("config") if isinstance(doc, Mapping) else None
    out: dict[str, Any] = {}
    for key, entry in declared.items() if isinstance(declared, Mapping) else ():
        name = str(key) if ":" in str(key) else f"{PROJECT}:{key}"
        if isinstance(entry, Mapping):
            if "value" in entry and entry["value"] is not None:
                out[name] = entry["value"]
            elif "default" in entry and entry["default"] is not None:
                out[name] = entry["default"]
        elif entry is not None:
            out[name] = entry
    return out


def load_stack(path: Path, stack: str | None = None) -> tuple[dict[str, Any], PlatformSpec]:
    """The stack file's raw config (what the program receives) and its validated spec, from one read."""
    name = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
    config, early = _read_stack_config(path)
    try:
        spec = spec_from_config(config, stack=name, file=str(path))
    except ConfigError as err:
        raise ConfigError([*early, *err.problems]) from None
    if early:
        raise ConfigError(early)
    return config, spec


def load_stack_file(path: Path, stack: str | None = None) -> PlatformSpec:
    """Parse and validate one stack file; the stack name defaults to the file's `Pulumi.<name>.yaml`."""
    return load_stack(path, stack)[1]


def spec_from_config(config: Mapping[str, Any], stack: str, file: str) -> PlatformSpec:
    """Validate namespaced config (`gpu-platform:nodePools`, `aws:region`, ...) into a PlatformSpec.

    Every problem of the file comes out of one call: a stage that finds problems sets the bad part
    aside and the later stages still run (spec.repair), so a user never fixes a file in rounds.
    """
    problems: list[Problem] = []
    raw: dict[str, Any] = {"stack": stack}
    secure: list[str] = []
    for raw_key, value in config.items():
        key = str(raw_key)
        ns, sep, short = key.partition(":")
        if not sep:
            problems.append(
                Problem(file, f"config.{key}", "config key has no namespace", f"allowed: '{PROJECT}:{key}' or another provider's 'ns:key'")
            )
        elif ns == PROJECT:
            if short not in PROJECT_KEYS:
                problems.append(Problem(file, key, f"unknown key '{short}'{did_you_mean(short, PROJECT_KEYS)}", one_of(PROJECT_KEYS)))
            else:
                decoded = _decode(value, short)
                problems += plain_text_credentials(decoded, key, file)
                raw[short] = replace_secure(decoded, key, secure)
        else:
            # Other providers' keys (aws:secretKey, aws:accessKey, ...) are not ours to type-check, but a
            # credential there in plain text ends up in the repository all the same.
            problems += plain_text_credentials({key: value}, "", file)
            if key == "aws:region":
                raw["region"] = replace_secure(value, key, secure)

    lock_data = raw_lockfile()
    override = raw.pop("versions", None) or {}
    if not isinstance(override, Mapping):
        problems.append(Problem(file, f"{PROJECT}:versions", "not a mapping", "allowed: a partial copy of the lockfile's structure"))
        override = {}
    try:
        raw["lock"] = parse_lockfile(deep_merge(lock_data, override), file=file)
    except ConfigError as err:
        problems += [Problem(file, f"{PROJECT}:versions.{p.path}" if override else p.path, p.message, p.allowed) for p in err.problems]
        raw["lock"] = parse_lockfile(lock_data, file=file)  # judge the rest against the repository's lockfile

    repaired = validate_all(raw, file)
    spec = repaired.spec
    problems += _with_config_keys(repaired.problems)
    if spec is not None:
        put_aside = [replace(a, path=_config_key(a.path)) for a in repaired.set_aside]
        for found in [*check_spec(spec, load_catalog(), file), *check_federation(spec, load_catalog(), file)]:
            p = replace(found, path=repaired.file_path(found.path, f"{PROJECT}:"))
            if not follows_from(p, put_aside) and not repaired.echoes(p):
                problems.append(p)
    if problems or spec is None:
        raise ConfigError(secure_problem(p, secure) for p in problems)
    return spec


def decoded_config(config: Any) -> Any:
    """A stack's `config:` with this project's structured values as the loader reads them (JSON text decoded)."""
    if not isinstance(config, dict):
        return config
    out = {}
    for key, value in config.items():
        ns, sep, short = str(key).partition(":")
        out[key] = _decode(value, short) if sep and ns == PROJECT else value
    return out


def _decode(value: Any, key: str) -> Any:
    """Pulumi hands structured config to the program as JSON text; stack files hold it as YAML."""
    if key in SCALAR_KEYS or not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _config_key(path: str) -> str:
    """A spec path as the stack file spells it: 'nodePools[0].x' -> 'gpu-platform:nodePools[0].x', 'region' -> 'aws:region'."""
    if path.startswith("region"):
        return "aws:" + path
    if re.split(r"[.\[]", path, maxsplit=1)[0] in PROJECT_KEYS:
        return f"{PROJECT}:{path}"
    return path


def _with_config_keys(problems: list[Problem]) -> list[Problem]:
    """Prefix spec paths with the stack file's namespace: 'nodePools[0].x' -> 'gpu-platform:nodePools[0].x'."""
    return [Problem(p.file, _config_key(p.path), p.message, p.allowed) for p in problems]


__all__ = ["PROJECT", "PROJECT_KEYS", "keys_of", "load_stack", "load_stack_file", "read_stack_config", "spec_from_config", "stack_file_for"]
