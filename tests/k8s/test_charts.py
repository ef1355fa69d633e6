"""Every Helm release of every stack, rendered by the pinned Helm with the real upstream chart and the program's values.

Reproduces what `pulumi up` does with a kubernetes:helm.sh/v3:Release (pulumi-kubernetes
provider/pkg/provider/helm_release.go runs Helm's pkg/action/install.go): the chart at the pinned
version, the release's values over its values.yaml, rendered for the stack's Kubernetes version.
What comes out is checked as the API server would: built-in kinds against the Kubernetes schemas
of that version, custom resources against the upstream CRDs, pods against their namespace's Pod
Security level; and the install order against the CRDs each release's objects use.
"""

from __future__ import annotations

import base64
import copy
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpu_platform.behaviour import pod_security
from gpu_platform.catalog import load_catalog
from gpu_platform.k8s.monitoring import prometheus_stack_values
from gpu_platform.k8s.objects import NODE_EXPORTER_NAMESPACE
from gpu_platform.k8s.platform import release_graph
from gpu_platform.k8s.releases import CRD_GROUPS, crd_needs, install_order, release_dependencies
from gpu_platform.versions import load_lockfile
from gpu_platform_policies.rules.observability import route_receiver
from tests.conftest import plan_for, shared_crds, spec_for
from tests.k8s.charts import ChartMissing, Release, Rendered, chart_dir, crd_groups, dependencies, releases, require_helm, template, unread_value_keys
from tests.k8s.helpers import crd_schemas, strict_schema

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


def _api_group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def is_builtin(api_version: str) -> bool:
    """A group the API server serves itself (core, apps, batch, policy, *.k8s.io), not one a CRD adds."""
    group = _api_group(api_version)
    return "." not in group or (group.endswith(".k8s.io") and not group.endswith("x-k8s.io"))


_MISSING: dict[str, list[str]] = {}


@cache
def rendered(stack: str) -> dict[str, Rendered]:
    """Release resource name -> its `helm template` output, with the API versions the stack's CRDs serve.

    Charts gate some objects on `.Capabilities.APIVersions.Has` (kube-prometheus-stack's and
    Kueue's monitors): the cluster serves what the stack's releases' CRDs serve, plus
    monitoring.coreos.com/v1 where the stack uses an existing Prometheus.
    """
    spec = spec_for(stack)
    version = spec.lock.kubernetes.version
    rels = []
    first = {}
    for r in releases(plan_for(stack)):
        try:
            first[r.resource] = template(r, version, ())
            rels.append(r)
        except ChartMissing as e:
            _MISSING.setdefault(stack, []).append(str(e))
    served = set().union(*(crd_groups(out.objects) for out in first.values()))
    if spec.monitoring.prometheus == "existing":
        served.add("monitoring.coreos.com/v1")
    # Only a chart that asks for API versions renders differently the second time.
    return {r.resource: template(r, version, tuple(sorted(served))) if _asks_capabilities(first[r.resource]) else first[r.resource] for r in rels}


def _asks_capabilities(out: Rendered) -> bool:
    return any("Capabilities.APIVersions" in p.read_text(errors="replace") for p in out.chart_dir.rglob("*.tpl")) or any(
        "Capabilities.APIVersions" in p.read_text(errors="replace") for p in out.chart_dir.rglob("*.yaml") if "templates" in p.parts
    )


def test_every_release_has_its_upstream_chart(stack: str) -> None:
    """Releases whose chart this machine lacks are left out of the other tests; say which."""
    rendered(stack)
    if _MISSING.get(stack):
        pytest.skip("; ".join(_MISSING[stack]))


def prune_nulls(node: Any, schema: dict[str, Any]) -> Any:
    """What the API server stores of a custom resource: nulls of fields that are not nullable are dropped.

    apiextensions-apiserver pkg/apiserver/schema/defaulting/prunenulls.go
    (PruneNonNullableNullsWithoutDefaults), applied before validation; the GPU Operator chart renders
    `mig:` with no strategy as null when the program leaves mig.strategy empty.
    """
    if isinstance(node, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else {}
        out = {}
        for k, v in node.items():
            sub = props.get(k, extra)
            if v is None and not sub.get("nullable") and "default" not in sub:
                continue
            out[k] = prune_nulls(v, sub)
        return out
    if isinstance(node, list):
        return [prune_nulls(v, schema.get("items") or {}) for v in node]
    return node


def test_every_release_renders_and_validates(stack: str) -> None:
    version = spec_for(stack).lock.kubernetes.version
    out = rendered(stack)
    assert out, f"no release of {stack} could be rendered: {_MISSING.get(stack)}"
    crds = {}
    for o in out.values():
        for obj in o.objects:
            if obj["kind"] == "CustomResourceDefinition":
                for v in obj["spec"]["versions"]:
                    crds[(f"{obj['spec']['group']}/{v['name']}", obj["spec"]["names"]["kind"])] = strict_schema(v["schema"]["openAPIV3Schema"])
    shared = shared_crds()
    schemas = {**(crd_schemas(shared) if shared else {}), **crds}
    errors = []
    for o in out.values():
        assert o.objects, f"{o.release.name}: helm template rendered nothing"
        for obj in o.objects:
            where = f"{o.release.name}: {obj['kind']} {obj['metadata'].get('name')}"
            if is_builtin(obj["apiVersion"]):
                try:
                    kubernetes_validate.validate(obj, version, strict=True)
                except kubernetes_validate.ValidationError as e:
                    errors.append(f"{where}: {e.message}")
                continue
            key = (obj["apiVersion"], obj["kind"])
            if key not in schemas:
                errors.append(f"{where}: no CRD serves {key}")
                continue
            body = prune_nulls({k: v for k, v in obj.items() if k != "metadata"}, schemas[key]) | {"metadata": {}}
            errors += [f"{where}: {e.message}" for e in jsonschema.Draft7Validator(schemas[key]).iter_errors(body)]
    assert not errors, "\n".join(errors[:20])


def test_every_value_key_the_program_sets_is_read_by_the_chart(stack: str) -> None:
    for o in rendered(stack).values():
        assert unread_value_keys(o.chart_dir, o.release.values) == [], f"{o.release.name}: keys the chart never reads"


def test_a_misspelt_value_key_is_reported() -> None:
    require_helm()
    folder, _ = chart_dir("kueue", load_lockfile().chart("kueue").version)
    if folder is None:
        pytest.skip("the pinned Kueue chart is not in shared/charts")
    good = {"controllerManager": {"replicas": 2, "nodeSelector": {"a": "b"}}, "enablePrometheus": True}
    assert unread_value_keys(folder, good) == []
    bad = {"controllerManager": {"replica": 2}, "enablePrometheus": True, "enablePromethus": True}
    assert unread_value_keys(folder, bad) == ["controllerManager.replica", "enablePromethus"]


def test_releases_install_after_the_crds_they_use(stack: str) -> None:
    """Each custom resource a release renders is served by its own CRDs, an existing Prometheus, or a release it dependsOn."""
    spec = spec_for(stack)
    plan = plan_for(stack)
    existing = {"monitoring.coreos.com"} if spec.monitoring.prometheus == "existing" else set()
    cluster_of = plan.clusters()  # a MultiKueue stack: each cluster's releases depend on that cluster's
    for name, o in rendered(stack).items():
        out = {n: x for n, x in rendered(stack).items() if cluster_of.get(n) == cluster_of.get(name)}
        by_chart = {x.release.chart: n for n, x in out.items()}
        provider_of = {g.split("/")[0]: x.release.chart for x in out.values() for g in crd_groups(x.objects)}
        own = {g.split("/")[0] for g in crd_groups(o.objects)}
        used = {_api_group(obj["apiVersion"]) for obj in o.objects if not is_builtin(obj["apiVersion"])} - own - existing
        deps = dependencies(plan, name)  # the Pulumi dependsOn the plan records, followed transitively
        for group in used:
            if group not in provider_of and _MISSING.get(stack):
                pytest.skip(f"{name} uses {group}, whose release could not be rendered here: {_MISSING[stack]}")
            assert group in provider_of, f"{name} renders {group} objects and no release of {stack} installs their CRDs"
            assert by_chart[provider_of[group]] in deps, f"{name} renders {group} objects but does not dependsOn {by_chart[provider_of[group]]}"
        # The graph in code agrees with what the chart really renders.
        assert {provider_of[g] for g in used} <= set(release_graph(spec, load_catalog()).get(o.release.chart, [])), name


def test_kueue_waits_for_prometheus_operator_crds() -> None:
    """The old order (every release after its namespace only) let Kueue's ServiceMonitor race the CRD."""
    graph = release_dependencies({"kueue": {"enablePrometheus": True}, "kube-prometheus-stack": {}, "gpu-operator": {}}, set())
    assert graph == {"kueue": ["kube-prometheus-stack"], "kube-prometheus-stack": [], "gpu-operator": []}
    assert install_order(graph).index("kube-prometheus-stack") < install_order(graph).index("kueue")
    assert release_dependencies({"kueue": {"enablePrometheus": True}}, {"monitoring.coreos.com"}) == {"kueue": []}
    with pytest.raises(ValueError, match="no release of this stack installs"):
        release_dependencies({"kueue": {"enablePrometheus": True}}, set())
    assert crd_needs("gpu-operator", {"dcgmExporter": {"serviceMonitor": {"enabled": True}}}) == {"monitoring.coreos.com"}
    assert "monitoring.coreos.com" in CRD_GROUPS["kube-prometheus-stack"]
    with pytest.raises(ValueError, match="cycle"):
        install_order({"a": ["b"], "b": ["a"]})


def _namespace_levels(stack: str) -> dict[str, str]:
    out = {}
    for r in plan_for(stack).of_type("kubernetes:core/v1:Namespace"):
        meta = r.inputs["metadata"]
        out[meta["name"]] = (meta.get("labels") or {}).get(pod_security.LABEL, "privileged")
    return out


def test_every_chart_pod_is_admitted_by_its_namespace_pod_security(stack: str) -> None:
    """Pods, workload templates and hook Jobs of every chart against the enforce level of the namespace they land in.

    kube-system is unlabelled (privileged); a namespace the plan does not create would be too.
    Prometheus/Alertmanager pods come from the prometheus-operator (not the chart); not checked here.
    """
    levels = _namespace_levels(stack)
    refused = []
    for o in rendered(stack).values():
        for obj in o.objects:
            ns = obj["metadata"].get("namespace", o.release.namespace)
            level = levels.get(ns, "privileged")
            why = pod_security.violations(obj, level)
            if why:
                refused.append(f"{o.release.name}: {obj['kind']} {ns}/{obj['metadata']['name']} under {level}: {why}")
    assert not refused, "\n".join(refused)


def test_node_exporter_would_be_refused_in_the_baseline_monitoring_namespace() -> None:
    """The old values put node-exporter into `monitoring` (baseline): its hostNetwork/hostPID/hostPath pods are refused."""
    spec = spec_for("prod")
    plan_release = next(r for r in releases(plan_for("prod")) if r.chart == "kube-prometheus-stack")
    old_values = copy.deepcopy(prometheus_stack_values(spec))
    old_values.pop("prometheus-node-exporter")
    old = Release(plan_release.resource, plan_release.name, plan_release.chart, plan_release.version, plan_release.namespace, old_values)
    try:
        out = template(old, spec.lock.kubernetes.version, ("monitoring.coreos.com/v1",))
    except ChartMissing as e:
        pytest.skip(str(e))
    daemonset = next(o for o in out.objects if o["kind"] == "DaemonSet" and "node-exporter" in o["metadata"]["name"])
    assert daemonset["metadata"]["namespace"] == spec.monitoring.namespace
    why = pod_security.violations(daemonset, "baseline")
    assert any("hostNetwork" in w for w in why) and any("hostPID" in w for w in why) and any("hostPath" in w for w in why)
    # With the program's values it lands in its own privileged namespace.
    now = next(o for o in rendered("prod")[plan_release.resource].objects if o["kind"] == "DaemonSet" and "node-exporter" in o["metadata"]["name"])
    assert now["metadata"]["namespace"] == NODE_EXPORTER_NAMESPACE
    assert _namespace_levels("prod")[NODE_EXPORTER_NAMESPACE] == "privileged"
    assert _namespace_levels("prod")[spec.monitoring.namespace] == "baseline"


def test_pod_security_checks_reproduce_upstream_levels() -> None:
    """Concrete pods: what baseline admits, what it refuses, what restricted adds."""
    plain = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    assert pod_security.violations(plain, "baseline") == []
    assert pod_security.violations(plain, "restricted")  # no runAsNonRoot, no seccomp, caps not dropped
    hardened = copy.deepcopy(plain)
    hardened["spec"]["securityContext"] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    hardened["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert pod_security.violations(hardened, "restricted") == []
    privileged = copy.deepcopy(plain)
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}}
    assert len(pod_security.violations(privileged, "baseline")) == 2
    assert pod_security.violations(privileged, "privileged") == []


def test_prometheus_keeps_its_data_on_a_persistent_volume() -> None:
    """prometheus-operator (pkg/prometheus/statefulset.go) turns Prometheus.spec.storage.volumeClaimTemplate into a PVC
    per replica; without it the data volume is an emptyDir and chargeback history dies with the pod."""
    out = rendered("prod")
    kps = next((o for o in out.values() if o.release.chart == "kube-prometheus-stack"), None)
    if kps is None:
        pytest.skip(f"kube-prometheus-stack not rendered: {_MISSING.get('prod')}")
    prometheus = next(o for o in kps.objects if o["kind"] == "Prometheus")
    claim = prometheus["spec"]["storage"]["volumeClaimTemplate"]["spec"]
    assert claim["resources"]["requests"]["storage"].endswith("Gi")
    assert claim["accessModes"] == ["ReadWriteOnce"]
    assert prometheus["spec"]["retention"] == "30d"


def test_alertmanager_config_the_chart_writes_pages_critical_alerts() -> None:
    """The chart writes the merged `alertmanager.config` into the Secret Alertmanager loads
    (templates/alertmanager/secret.yaml); route it as Alertmanager's dispatch/route.go does and check the
    credential file is where prometheus-operator mounts `alertmanagerSpec.secrets` (/etc/alertmanager/secrets/<name>/<key>)."""
    out = rendered("prod")
    kps = next((o for o in out.values() if o.release.chart == "kube-prometheus-stack"), None)
    if kps is None:
        pytest.skip(f"kube-prometheus-stack not rendered: {_MISSING.get('prod')}")
    secret = next(o for o in kps.objects if o["kind"] == "Secret" and "alertmanager.yaml" in (o.get("data") or {}))
    config = yaml.safe_load(base64.b64decode(secret["data"]["alertmanager.yaml"]))
    am = spec_for("prod").monitoring.alertmanager
    assert route_receiver(config["route"], {"severity": "critical", "alertname": "GpuXidError"}) == am.critical_receiver == "gpu-oncall"
    assert route_receiver(config["route"], {"severity": "warning", "alertname": "GpuHighTemperature"}) == am.default_receiver
    assert route_receiver(config["route"], {"severity": "none", "alertname": "Watchdog"}) == "null"
    receivers = {r["name"]: r for r in config["receivers"]}
    assert receivers["gpu-oncall"]["pagerduty_configs"][0]["routing_key_file"] == "/etc/alertmanager/secrets/alertmanager-pagerduty/routing-key"
    alertmanager = next(o for o in kps.objects if o["kind"] == "Alertmanager")
    assert sorted(alertmanager["spec"]["secrets"]) == ["alertmanager-pagerduty", "alertmanager-slack"]
    # No credential travels in the stack: every notifier reads a file.
    assert not any(k in str(config) for k in ("routing_key:", "api_url:", "'url':"))
