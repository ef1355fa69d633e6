"""`helm template` of the plan's Helm releases with the real upstream charts (shared/charts).

What Helm itself does at `pulumi up` (pulumi-kubernetes' helm.v3.Release runs Helm's install
action, helm.sh/helm/v3 pkg/action/install.go): load the chart with its dependencies, merge the
release's values over the chart's values.yaml, render the templates for the cluster's
Kubernetes version and API versions. Here the same Helm (the binary scripts/fetch-helm.sh
installs) renders each release offline, so the tests see the objects the charts really create.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.engine import Plan
from tests.conftest import ROOT

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


class _Loader(yaml.CSafeLoader):
    """YAML 1.1 loader that reads the `=` value tag some CRDs carry as the string it is (Go's yaml does)."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]


def helm_binary() -> Path | None:
    """The pinned Helm (scripts/fetch-helm.sh installs it into .tools/bin), or $HELM."""
    env = os.environ.get("HELM")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT / ".tools" / "bin" / "helm")
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def shared_charts() -> Path | None:
    """The folder of upstream charts at the pinned versions, if this machine has it."""
    env = os.environ.get("GPU_PLATFORM_SHARED_CHARTS")
    candidates = [Path(env)] if env else []
    candidates += [ROOT.parent / "shared" / "charts", ROOT.parent.parent / "shared" / "charts"]
    return next((c for c in candidates if c.is_dir()), None)


def require_helm() -> tuple[Path, Path]:
    """(helm, charts folder), or skip saying exactly what is missing."""
    helm, charts = helm_binary(), shared_charts()
    if helm is None:
        pytest.skip("helm not found: run scripts/fetch-helm.sh (installs the pinned Helm into .tools/bin) or set HELM")
    if charts is None:
        pytest.skip("shared/charts not found (set GPU_PLATFORM_SHARED_CHARTS to the folder of upstream charts at the pinned versions)")
    return helm, charts


@dataclass(frozen=True)
class Release:
    """One helm.v3.Release of a plan, as Helm receives it."""

    resource: str
    name: str
    chart: str
    version: str
    namespace: str
    values: dict[str, Any]


def releases(plan: Plan) -> list[Release]:
    """Every Helm release the plan installs (whatever component registered it)."""
    out = []
    for r in plan.of_type(RELEASE_TYPE):
        i = r.inputs
        # `chart` is a name with repositoryOpts, or a full `oci://host/path/<name>` reference.
        chart = str(i["chart"]).rstrip("/").rsplit("/", 1)[-1]
        out.append(Release(r.name, i["name"], chart, str(i["version"]), i.get("namespace", "default"), i.get("values") or {}))
    return out


# Upstream subcharts that shared/charts lacks (provenance in that folder's README).
FIXTURE_CHARTS = Path(__file__).resolve().parents[1] / "fixtures" / "charts"


def _dependencies(chart_dir: Path) -> list[dict[str, Any]]:
    meta = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    return list(meta.get("dependencies") or [])


def _find_dependency(charts: Path, dep: dict[str, Any]) -> Path | None:
    """A dependency missing from the chart's charts/ folder, at <charts>/<name>/<version> (wildcards as Helm's semver)."""
    pattern = re.compile("^" + re.escape(str(dep["version"])).replace(r"\*", r"[0-9]+") + "$")
    folder = charts / dep["name"]
    if not folder.is_dir():
        return None
    found = sorted((p for p in folder.iterdir() if pattern.match(p.name)), key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)])
    return found[-1] if found else None


@cache
def chart_dir(chart: str, version: str) -> tuple[Path | None, tuple[str, ...]]:
    """(a chart folder Helm can render, dependencies that could not be found anywhere).

    Helm refuses a chart whose Chart.yaml dependencies are missing from charts/ (pkg/action
    CheckDependencies). A dependency absent there but present in shared/charts/<name>/<version>
    (or in tests/fixtures/charts, the subcharts shared/ lacks) is copied into a temporary copy of
    the chart, as `helm dependency build` would place it.
    """
    _, charts = require_helm()
    source = charts / chart / version
    if not (source / "Chart.yaml").is_file():
        source = FIXTURE_CHARTS / chart / version  # a chart shared/charts does not hold (see its README)
    if not (source / "Chart.yaml").is_file():
        return None, ()
    missing, extra = [], []
    for dep in _dependencies(source):
        if (source / "charts" / dep["name"]).is_dir():
            continue
        found = _find_dependency(charts, dep) or _find_dependency(FIXTURE_CHARTS, dep)
        if found is None:
            missing.append(f"{dep['name']} {dep['version']}")
        else:
            extra.append((dep["name"], found))
    if missing or not extra:
        return source, tuple(missing)
    target = Path(tempfile.mkdtemp(prefix=f"chart-{chart}-")) / chart
    shutil.copytree(source, target)
    for name, found in extra:
        shutil.copytree(found, target / "charts" / name)
    return target, ()


@dataclass(frozen=True)
class Rendered:
    """What `helm template` produced for one release."""

    release: Release
    chart_dir: Path
    objects: tuple[dict[str, Any], ...]


class ChartMissing(Exception):
    """The upstream chart (or one of its dependencies) of a release is not on this machine."""


def template(release: Release, kube_version: str, api_versions: tuple[str, ...]) -> Rendered:
    """`helm template` of one release with its exact values; ChartMissing when the chart is not held here."""
    helm, charts = require_helm()
    folder, missing = chart_dir(release.chart, release.version)
    if folder is None:
        raise ChartMissing(f"{charts}/{release.chart}/{release.version} not found: no upstream chart to render release {release.name}")
    if missing:
        raise ChartMissing(f"{folder}: dependencies {', '.join(missing)} are in Chart.yaml but not in charts/ nor in {charts}/<name>/<version>")
    return _template(helm, folder, release.name, release.namespace, yaml.safe_dump(release.values), kube_version, api_versions, release)


def _template(
    helm: Path, folder: Path, name: str, namespace: str, values: str, kube_version: str, api_versions: tuple[str, ...], release: Release
) -> Rendered:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(values)
        f.flush()
        cmd = [str(helm), "template", name, str(folder), "--namespace", namespace, "--values", f.name, "--include-crds"]
        cmd += ["--kube-version", f"{kube_version}.0"]
        for api in api_versions:
            cmd += ["--api-versions", api]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, f"helm template {name} ({folder}) failed: {done.stderr.strip()}"
    docs = tuple(flatten(d for d in yaml.load_all(done.stdout, Loader=_Loader) if isinstance(d, dict)))
    return Rendered(release, folder, docs)


def flatten(docs: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A `v1 List` as Helm sends it: its items, each one object (helm pkg/kube/client.go newBuilder calls the resource
    builder's Flatten, k8s.io/cli-runtime pkg/resource/visitor.go FlattenListVisitor). The aws-load-balancer-controller
    chart wraps its IngressClassParams and IngressClass in one."""
    for d in docs:
        if d.get("kind") == "List" and d.get("apiVersion") == "v1":
            yield from flatten(i for i in d.get("items") or [] if isinstance(i, dict))
        else:
            yield d


def dependencies(plan: Plan, name: str) -> set[str]:
    """The resources `name` dependsOn in the plan, followed transitively (what Pulumi creates before it)."""
    deps: set[str] = set()
    todo = [name]
    while todo:
        for d in plan.named(todo.pop()).depends_on:
            if d not in deps:
                deps.add(d)
                todo.append(d)
    return deps


def crd_groups(objects: Iterator[dict[str, Any]] | tuple[dict[str, Any], ...]) -> set[str]:
    """API versions (`group/version`) served by the CustomResourceDefinitions among these objects."""
    out = set()
    for o in objects:
        if o.get("kind") == "CustomResourceDefinition":
            for v in o["spec"]["versions"]:
                out.add(f"{o['spec']['group']}/{v['name']}")
    return out


def chart_values(folder: Path) -> dict[str, Any]:
    """The chart's own values.yaml."""
    return yaml.safe_load((folder / "values.yaml").read_text()) or {}


def template_text(folder: Path) -> str:
    """Every template of the chart (not its subcharts), concatenated."""
    return "\n".join(p.read_text(errors="replace") for p in sorted((folder / "templates").rglob("*")) if p.is_file())


def unread_value_keys(folder: Path, values: dict[str, Any]) -> list[str]:
    """Dotted paths the release sets that the chart neither declares in values.yaml nor reads in a template.

    Helm passes every value through (pkg/chartutil coalesce.go merges them over values.yaml); a
    misspelt key is silently ignored, so a key counts as read only where values.yaml declares it
    (an empty map or null there is free-form: the template copies the whole subtree, e.g. a
    nodeSelector) or a template names `.Values.<path>`. Keys under a dependency's name are checked
    against that subchart the same way.
    """
    defaults = chart_values(folder)
    text = template_text(folder)
    subcharts = {p.name: p for p in (folder / "charts").iterdir()} if (folder / "charts").is_dir() else {}
    aliases = {d.get("alias", d["name"]): d["name"] for d in _dependencies(folder)}
    # Helm reads each dependency's `condition` paths in the parent's values (pkg/chartutil/dependencies.go
    # processDependencyConditions), e.g. Kubeflow Trainer's `jobset.install`.
    conditions = {c.strip() for d in _dependencies(folder) for c in str(d.get("condition") or "").split(",") if c.strip()}
    out: list[str] = []

    def walk(node: Any, default: Any, path: list[str]) -> None:
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            here = [*path, str(key)]
            if not path and key in aliases and aliases[key] in subcharts:
                below = {k: v for k, v in (value if isinstance(value, dict) else {}).items() if f"{key}.{k}" not in conditions}
                out.extend(f"{key}.{p}" for p in unread_value_keys(subcharts[aliases[key]], below))
                continue
            declared = isinstance(default, dict) and key in default
            sub = default.get(key) if isinstance(default, dict) else None
            if declared and (sub is None or sub == {}):
                continue  # free-form in the chart: copied whole into a manifest
            if declared and isinstance(value, dict) and isinstance(sub, dict):
                walk(value, sub, here)
                continue
            if declared or _read_in_templates(text, here):
                continue
            out.append(".".join(here))

    walk(values, defaults, [])
    return out


def _read_in_templates(text: str, path: list[str]) -> bool:
    dotted = ".".join(path)
    indexed = "".join(f' "{p}"' for p in path)
    # `.Values.a.replica` must not count as read because a template reads `.Values.a.replicas`.
    if re.search(rf"\.Values\.{re.escape(dotted)}(?![\w-])", text) or f"index .Values{indexed}" in text:
        return True
    # A template that ranges over, or dumps, an enclosing map reads every key below it.
    for n in range(1, len(path)):
        prefix = re.escape(".".join(path[:n]))
        if re.search(rf"(?:range|toYaml|toJson|toPrettyJson)\b[^}}\n]*?\.Values\.{prefix}(?![\w.])", text):
            return True
    return False
