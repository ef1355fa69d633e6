"""Every Helm release can be located the way the Pulumi Kubernetes provider locates charts.

Reproduces pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go (the snapshot nearest the
pinned SDK): `chartPathOptionsFromRelease` -> `resolveChartName(repo, chart)`: an `oci://` chart keeps no
repository URL; otherwise any repo that `url.ParseRequestURI` accepts becomes `cpo.RepoURL`, and
`locateChart` then calls `repo.FindChartInAuthAndTLSAndPassRepoURL`, which downloads `<repo>/index.yaml`
(helm pkg/repo/chartrepo.go). An OCI registry serves no index.yaml, so such a release fails at `up`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from gpu_platform.errors import ConfigError
from gpu_platform.versions import load_lockfile, parse_lockfile, raw_lockfile
from tests.conftest import plan_for

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def resolve_chart_name(repository: str, name: str) -> tuple[str, str]:
    """helm_release.go resolveChartName: (repo URL, chart name)."""
    if name.startswith("oci://"):  # registry.IsOCI
        return "", name
    parsed = urlsplit(repository)
    if parsed.scheme and (parsed.netloc or parsed.path.startswith("/")):  # url.ParseRequestURI accepts absolute URLs
        return repository, name
    if "/" not in name and repository:
        name = f"{repository}/{name}"
    return "", name


def how_located(inputs: dict) -> str:
    """'oci' (pulled from a registry), 'index' (via <repo>/index.yaml), or why it cannot be located."""
    repo = (inputs.get("repositoryOpts") or {}).get("repo", "")
    repo_url, name = resolve_chart_name(repo, inputs["chart"])
    if repo_url == "":
        return "oci" if name.startswith("oci://") else f"local path {name!r} (not found)"
    if repo_url.startswith("oci://"):
        return f"index.yaml under OCI registry {repo_url} (fails at up)"
    return "index" if repo_url.startswith("https://") else f"unsupported scheme {repo_url}"


def test_every_release_is_locatable(stack: str) -> None:
    releases = [r for r in plan_for(stack).resources if r.type == HELM_RELEASE]
    assert releases
    for r in releases:
        assert how_located(r.inputs) in ("oci", "index"), (r.name, how_located(r.inputs))


def test_kueue_is_pulled_from_its_oci_registry() -> None:
    kueue = next(r for r in plan_for("prod").resources if r.name == "kueue-release")
    assert kueue.inputs["chart"] == load_lockfile().chart("kueue").chart
    assert kueue.inputs["chart"].startswith("oci://registry.k8s.io/") and "repositoryOpts" not in kueue.inputs
    assert how_located(kueue.inputs) == "oci"
    # The old form: the registry as repositoryOpts.repo and a bare chart name.
    old = {"chart": "kueue", "repositoryOpts": {"repo": "oci://registry.k8s.io/kueue/charts"}}
    assert "fails at up" in how_located(old)


@pytest.mark.parametrize(
    ("entry", "path", "message"),
    [
        (
            {"repository": "oci://registry.k8s.io/kueue/charts", "chart": "kueue"},
            "charts.kueue.repository",
            "chart: oci://registry.k8s.io/kueue/charts/kueue",
        ),
        ({"repository": "https://example.com", "chart": "oci://example.com/charts/kueue"}, "charts.kueue.repository", "takes no repository"),
        ({"chart": "kueue"}, "charts.kueue", "needs a repository"),
        ({"repository": "http://example.com", "chart": "kueue"}, "charts.kueue.repository", "https://"),
    ],
)
def test_lockfile_loader_enforces_the_chart_form(entry: dict, path: str, message: str) -> None:
    data = raw_lockfile()
    data["charts"]["kueue"] = {**entry, "version": data["charts"]["kueue"]["version"]}
    with pytest.raises(ConfigError) as err:
        parse_lockfile(data)
    line = str(err.value)
    assert "\n" not in line and f": {path}: " in line and message in line, line
