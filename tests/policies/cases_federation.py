"""Cases of the MultiKueue federation rules: the multi stack (manager + workers east and west) broken one part at a time.

Each edit is what a pull request could do by hand to the plan's inputs, or what a hand-written kubeconfig brings;
the rule names the Secret, queue or release at fault. Kueue's refusals are behaviour.multikueue's.
"""

from __future__ import annotations

import json
from dataclasses import replace

from gpu_platform.k8s.multikueue import kubeconfig
from gpu_platform_policies.model import Resource
from tests.policies.builders import DROP, Case, Edit, at, compliant, drop, fires, silent
from tests.policies.cases_controllers import kueue_config_edit

STACKS = ("multi", "staging", "prod", "dev", "onprem")
EAST_SECRET = "multikueue-kubeconfig-east"
GOOD = json.loads(kubeconfig("east", "https://east.example", "bW9jaw==", "t0ken"))


def _kubeconfig(user: dict[str, object] | None = None, cluster: dict[str, object] | None = None) -> str:
    """The east worker's kubeconfig with the user's or the cluster's entry changed, as a hand-written one would be."""
    doc = json.loads(json.dumps(GOOD))
    doc["users"][0]["user"] = user if user is not None else doc["users"][0]["user"]
    doc["clusters"][0]["cluster"] |= cluster or {}
    return json.dumps(doc)


def _not_secret(name: str) -> Edit:
    """A resource whose inputs the program no longer wraps in pulumi.Output.secret."""

    def edit(res: list[Resource]) -> list[Resource]:
        return [replace(r, secrets=()) if r.name == name else r for r in res]

    return edit


def _without_rules(role: str, group: str) -> Edit:
    """A worker ClusterRole with every rule of one API group left out, as a hand-trimmed role would be."""

    def edit(res: list[Resource]) -> list[Resource]:
        target = next(r for r in res if r.name == role)
        target.inputs["rules"] = [r for r in target.inputs["rules"] if group not in r.get("apiGroups", [])]
        return res

    return edit


EXEC = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": ["eks", "get-token", "--cluster-name", "gpu-east"]}}

FEDERATION_CASES: list[Case] = [
    *compliant("multikueue-kubeconfigs-static", *STACKS),
    fires(
        "multikueue-kubeconfigs-static",
        "exec-plugin",
        at(EAST_SECRET, {"stringData.kubeconfig": _kubeconfig(user=EXEC)}),
        on=EAST_SECRET,
        says="exec plugins are not allowed",
        stack="multi",
    ),
    fires(
        "multikueue-kubeconfigs-static",
        "token-file",
        at(EAST_SECRET, {"stringData.kubeconfig": _kubeconfig(user={"tokenFile": "/var/run/secrets/token"})}),
        on=EAST_SECRET,
        says="tokenFile is not allowed",
        stack="multi",
    ),
    fires(
        "multikueue-kubeconfigs-static",
        "insecure-tls",
        at(EAST_SECRET, {"stringData.kubeconfig": _kubeconfig(cluster={"insecure-skip-tls-verify": True})}),
        on=EAST_SECRET,
        says="insecure TLS verification is not allowed",
        stack="multi",
    ),
    fires(
        "multikueue-kubeconfigs-static",
        "plain-http",
        at(EAST_SECRET, {"stringData.kubeconfig": _kubeconfig(cluster={"server": "http://east.example"})}),
        on=EAST_SECRET,
        says="is not https",
        stack="multi",
    ),
    fires(
        "multikueue-kubeconfigs-static",
        "kubeconfig-not-a-pulumi-secret",
        _not_secret(EAST_SECRET),
        on=EAST_SECRET,
        says="is not a Pulumi secret: the state would keep it in plain text",
        stack="multi",
        key="gpu-platform:workers[0]",
        offline_only="CrossGuard validation hands a policy secrets unwrapped (pulumi_policy deserialize.py, proxy_secrets off)",
    ),
    fires(
        "multikueue-kubeconfigs-static",
        "secret-missing",
        drop(EAST_SECRET),
        on="multikueue-cluster-east",
        says="is not created by this stack",
        stack="multi",
    ),
    fires(
        "multikueue-kubeconfigs-static",
        "path-location",
        at("multikueue-cluster-east", {"spec.clusterSource.kubeConfig.locationType": "Path"}),
        on="multikueue-cluster-east",
        says="reads a file inside the manager's Kueue pod",
        stack="multi",
        key="gpu-platform:workers[0]",
    ),
    *compliant("multikueue-workers-mirror-manager", *STACKS),
    fires(
        "multikueue-workers-mirror-manager",
        "local-queue-missing-on-a-worker",
        drop("west-kueue-localqueue-research"),
        on="west-worker",
        says="worker west: no LocalQueue research/default",
        stack="multi",
        key="gpu-platform:workers[1]",
    ),
    fires(
        "multikueue-workers-mirror-manager",
        "older-kueue-on-a-worker",
        at("west-kueue-release", {"version": "0.18.0"}),
        on="west-worker",
        says="chart kueue is 0.18.0",
        stack="multi",
    ),
    fires(
        "multikueue-workers-mirror-manager",
        "jobset-missing-on-a-worker",
        drop("east-job-apis-jobset-release"),
        on="east-worker",
        says="chart jobset is not installed",
        stack="multi",
    ),
    *compliant("multikueue-quota-sums", *STACKS),
    fires(
        "multikueue-quota-sums",
        "manager-admits-more-than-workers-hold",
        at("kueue-clusterqueue-research", {"spec.resourceGroups.1.flavors.0.resources.0.nominalQuota": 12}),
        on="kueue-clusterqueue-research",
        says="the manager admits 12, the workers hold 8",
        stack="multi",
    ),
    fires(
        "multikueue-quota-sums",
        "worker-quota-raised-alone",
        at("west-kueue-clusterqueue-research", {"spec.resourceGroups.1.flavors.0.resources.0.nominalQuota": 8}),
        on="kueue-clusterqueue-research",
        says="the manager admits 8, the workers hold 12",
        stack="multi",
    ),
    fires(
        "multikueue-quota-sums",
        "manager-cpu-above-the-workers-sum",
        at("kueue-clusterqueue-research", {"spec.resourceGroups.0.flavors.0.resources.0.nominalQuota": 1000}),
        on="kueue-clusterqueue-research",
        says="cpu on flavor default-cpu: the manager admits 1000, the workers hold 128",
        stack="multi",
    ),
    fires(
        "multikueue-quota-sums",
        "manager-memory-above-the-workers-sum",
        at("kueue-clusterqueue-research", {"spec.resourceGroups.0.flavors.0.resources.1.nominalQuota": "1Ti"}),
        on="kueue-clusterqueue-research",
        says="memory on flavor default-cpu: the manager admits 1099511627776, the workers hold 549755813888",
        stack="multi",
    ),
    fires(
        "multikueue-quota-sums",
        "manager-quota-not-a-quantity",
        at("kueue-clusterqueue-research", {"spec.resourceGroups.0.flavors.0.resources.1.nominalQuota": "lots"}),
        on="kueue-clusterqueue-research",
        says="the manager admits 'lots' (not a quantity)",
        stack="multi",
    ),
    # The same amount written in other units is the same quota (Kueue compares parsed quantities).
    fires(
        # A multiplier written onto the queue without the quota that goes with it (the program writes both).
        "multikueue-quota-sums",
        "multiplier-declared-quota-not-scaled",
        at("kueue-clusterqueue-research", {"metadata.annotations": {"gpu-platform.io/multikueue-quota-multiplier": "2"}}),
        on="kueue-clusterqueue-research",
        says="the manager admits 8, the workers hold 8, times the declared multiplier 2",
        stack="multi",
    ),
    fires(
        "multikueue-quota-sums",
        "multiplier-out-of-bounds",
        at("kueue-clusterqueue-research", {"metadata.annotations": {"gpu-platform.io/multikueue-quota-multiplier": "100"}}),
        on="kueue-clusterqueue-research",
        says="quota multiplier '100' is not a whole number from 1 to 4",
        stack="multi",
    ),
    silent(
        "multikueue-quota-sums",
        "memory-in-bytes",
        at("kueue-clusterqueue-research", {"spec.resourceGroups.0.flavors.0.resources.1.nominalQuota": "549755813888"}),
        stack="multi",
    ),
    *compliant("multikueue-dispatch-complete", *STACKS),
    fires(
        "multikueue-dispatch-complete",
        "queue-without-the-check",
        at("kueue-clusterqueue-research", {"spec.admissionChecksStrategy": DROP}),
        on="kueue-clusterqueue-research",
        says="has no MultiKueue admission check",
        stack="multi",
    ),
    fires(
        "multikueue-dispatch-complete",
        "worker-left-out-of-the-config",
        at("multikueue-config", {"spec.clusters": ["east"]}),
        on="multikueue-config",
        says="does not list worker west",
        stack="multi",
    ),
    fires(
        "multikueue-dispatch-complete",
        "config-names-a-stranger",
        at("multikueue-config", {"spec.clusters": ["east", "west", "gcp"]}),
        on="multikueue-config",
        says="lists worker gcp, which has no MultiKueueCluster",
        stack="multi",
    ),
    fires(
        "multikueue-dispatch-complete",
        "all-at-once-dispatcher",
        kueue_config_edit(multiKueue=None),
        on="kueue-release",
        says="dispatches to every worker at once",
        stack="multi",
    ),
    fires(
        "multikueue-dispatch-complete",
        "three-workers-per-round",
        kueue_config_edit(
            multiKueue={"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental", "incrementalDispatcherConfig": {"stepSize": 3}}
        ),
        on="kueue-release",
        says="nominates 3 workers per round (stepSize), not 1",
        stack="multi",
    ),
    *compliant("multikueue-worker-access", *STACKS),
    fires(
        "multikueue-worker-access",
        "service-account-dropped",
        drop("east-multikueue-serviceaccount"),
        on="east-worker",
        says="worker east: no ServiceAccount kueue-system/multikueue-sa",
        stack="multi",
        key="gpu-platform:workers[0]",
    ),
    fires(
        "multikueue-worker-access",
        "token-secret-dropped",
        drop("west-multikueue-token"),
        on="west-worker",
        says="no kubernetes.io/service-account-token Secret for multikueue-sa in kueue-system",
        stack="multi",
        key="gpu-platform:workers[1]",
    ),
    fires(
        "multikueue-worker-access",
        "binding-dropped",
        drop("east-multikueue-clusterrolebinding"),
        on="east-worker",
        says="multikueue-sa may not create kueue.x-k8s.io/workloads",
        stack="multi",
    ),
    fires(
        "multikueue-worker-access",
        "jobsets-left-out-of-the-role",
        _without_rules("east-multikueue-clusterrole", "jobset.x-k8s.io"),
        on="east-worker",
        says="may not create jobset.x-k8s.io/jobsets",
        stack="multi",
    ),
    *compliant("multikueue-committed-first", *STACKS),
    fires(
        "multikueue-committed-first",
        "on-demand-worker-first",
        at("multikueue-config", {"spec.clusters": ["west", "east"]}),
        on="multikueue-config",
        says="worker west has no reserved or Capacity Block pool but comes before east, which do",
        stack="multi",
    ),
    *compliant("multikueue-workers-alerted", *STACKS),
    fires(
        "multikueue-workers-alerted",
        "alert-removed",
        at("monitoring-gpu-rules", {"spec.groups.3": DROP}),
        on="stack",
        says="no alert on kube_customresource_multikueue_cluster_condition",
        stack="multi",
    ),
    fires(
        "multikueue-workers-alerted",
        "conditions-not-exported",
        at("monitoring-release", {"values.kube-state-metrics.customResourceState": DROP}),
        on="monitoring-release",
        says="exports no MultiKueueCluster conditions",
        stack="multi",
    ),
]
