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
