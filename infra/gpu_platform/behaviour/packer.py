"""Which Packer plugin provides each component a template uses (Packer 1.16, its newest release).

Packer >= 1.10 ships only the components in command/execute.go (`Builders`, `Provisioners`,
`PostProcessors`, `Datasources`); everything else comes from an installed plugin. An external
plugin registers its components under its local name (packer/plugin.go `DiscoverMultiPlugin`:
`pluginPrefix := pluginName + "-"`, the SDK's DEFAULT_NAME component as the bare plugin name), so
the amazon plugin's builder "ebs" is `amazon-ebs` and the ansible plugin's default provisioner is
`ansible`. A component no built-in and no required plugin provides fails `packer build` with
"Unknown source type" / "Unknown provisioner type" unless some plugin happens to be installed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# command/execute.go of Packer 1.16.
BUILTIN: Mapping[str, frozenset[str]] = {
    "source": frozenset({"file", "null"}),
    "provisioner": frozenset({"breakpoint", "file", "hcp-sbom", "powershell", "shell", "shell-local", "sleep", "windows-restart", "windows-shell"}),
    "post-processor": frozenset({"artifice", "checksum", "compress", "manifest", "provenance", "shell-local"}),
    "data": frozenset({"hcp-packer-artifact", "hcp-packer-image", "hcp-packer-iteration", "hcp-packer-version", "http", "null"}),
}


def providing_plugin(kind: str, component: str, plugins: Iterable[str]) -> str | None:
    """The required plugin (local name) that provides `component` of `kind`; "" for a built-in; None when nothing does."""
    if component in BUILTIN[kind]:
        return ""
    for name in sorted(plugins, key=len, reverse=True):
        if component == name or component.startswith(name + "-"):
            return name
    return None


def undeclared(used: Iterable[tuple[str, str]], plugins: Iterable[str]) -> list[str]:
    """`<kind> "<type>"` for each used component that neither Packer nor a required plugin provides."""
    names = list(plugins)
    return [f'{kind} "{component}"' for kind, component in used if providing_plugin(kind, component, names) is None]


# hashicorp/go-version (the release Packer 1.16's go.mod requires) constraint.go `constraintRegexp` over version.go
# `VersionRegexpRaw`: an optional operator, then a version with optional pre-release and metadata.
_OPERATOR = r"(=|!=|>|<|>=|<=|~>)?"
_VERSION = (
    r"v?([0-9]+(?:\.[0-9]+)*?)"
    r"(-([0-9]+[0-9A-Za-z\-~]*(?:\.[0-9A-Za-z\-~]+)*)|(-?([A-Za-z\-~]+[0-9A-Za-z\-~]*(?:\.[0-9A-Za-z\-~]+)*)))?"
    r"(\+[0-9A-Za-z\-~]+(?:\.[0-9A-Za-z\-~]+)*)?"
)
_CONSTRAINT = re.compile(rf"^\s*{_OPERATOR}\s*{_VERSION}\s*$")
_PLUGIN_PART = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")


def _plugin_part(text: str) -> str | None:
    """hcl2template/addrs/plugin.go `ParsePluginPart` for ASCII names: why `text` is no valid plugin part, or None.

    A part is a DNS label: letters, digits and dashes, no leading or trailing dash, no "--", no dot; Packer
    requires it already normalized (lower case, `IsPluginPartNormalized`).
    """
    if not text:
        return "must have at least one character"
    if "." in text:
        return "dots are not allowed"
    if "--" in text:
        return "cannot use multiple consecutive dashes"
    if not _PLUGIN_PART.match(text.lower()):
        return "must contain only letters, digits, and dashes, and may not use leading or trailing dashes"
    if text != text.lower():
        return f"must be normalized: {text.lower()!r}"
    return None


def _source_problem(source: str) -> str | None:
    """hcl2template/addrs/plugin.go `ParsePluginSourceString`: why Packer refuses a plugin source, or None."""
    if source.startswith("/") or source.endswith("/"):
        return "a source must not start or end with '/'"
    if source.count("/") < 2:
        return "a source must contain a host and a path with 2 components (github.com/<namespace>/<name>)"
    if "://" in source or "?" in source or "#" in source:
        return "a source must not contain a scheme, a query or a fragment"
    name = source.rsplit("/", 1)[1]
    why = _plugin_part(name)
    if why:
        return f"invalid plugin type {name!r}: {why}"
    if name.startswith("packer-"):
        return f"the type {name!r} carries the 'packer-' prefix, which is not valid in a source"
    if source.count("/") + 1 > 16:
        return "a source has at most 16 components"
    return None


def required_plugin_problems(name: str, requirement: object) -> list[str]:
    """What Packer reports for one `required_plugins` entry; [] when Packer accepts it.

    hcl2template/types.required_plugins.go `decodeRequiredPluginsBlock`, in the order it checks (Packer 1.16).
    """
    out = []
    why = _plugin_part(name)
    if why:
        out.append(f"{name}: invalid plugin local name: {why}")
    if not isinstance(requirement, Mapping):
        return [*out, f'{name}: "{name} = <string>" is not possible; write an object with source and version']
    version = requirement.get("version")
    if version is None:
        return [*out, f"{name}: no version constraint was set"]
    if not isinstance(version, str):
        return [*out, f"{name}: the version must be a string"]
    parsed = [_CONSTRAINT.match(part) for part in version.split(",")]
    if not all(parsed):
        return [*out, f"{name}: version {version!r} is not a version constraint (an operator and a version, comma-separated)"]
    if any(m.group(3) or m.group(5) for m in parsed if m):
        out.append(f"{name}: version {version!r} names a pre-release, which Packer does not support")
    source = requirement.get("source")
    if source is None:
        return [*out, f"{name}: no source was set"]
    if not isinstance(source, str):
        return [*out, f"{name}: the source must be a string"]
    why = _source_problem(source)
    if why:
        return [*out, f"{name}: source {source!r}: {why}"]
    extra = sorted(set(requirement) - {"version", "source"})
    if extra:
        out.append(f"{name}: required_plugins objects can only contain version and source, not {', '.join(extra)}")
    return out
