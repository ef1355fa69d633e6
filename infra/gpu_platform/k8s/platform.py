"""The GPU platform layer, identical for EKS and on-prem: one component composing every concern.

Resource naming (Pulumi logical name -> type token; Kubernetes object name), for the policy gate:

- `platform` gpu-platform:k8s:GpuPlatform (parent of everything below)
- `platform-priority-<tier>` kubernetes:scheduling.k8s.io/v1:PriorityClass `gpu-<tier>`
  (tiers: production-training, inference, batch, experiments)
- `gpu-operator` gpu-platform:k8s:GpuOperator, children `gpu-operator-namespace` (Namespace `gpu-operator`),
  `gpu-operator-sharing-config` (ConfigMap `device-plugin-config`), `gpu-operator-mig-config` (ConfigMap
  `mig-parted-config`, only with MIG-capable GPUs), `gpu-operator-dcgm-metrics` (ConfigMap
  `dcgm-exporter-metrics`), `gpu-operator-release` kubernetes:helm.sh/v3:Release (values: inputs.values;
  upgrade policy at values.driver.upgradePolicy)
- `dra-driver` gpu-platform:k8s:DraDriver (only with DRA pools, `allocation: dra`): `dra-driver-namespace` (Namespace
  `dra-driver-nvidia-gpu`, privileged), `dra-driver-release` (chart dra-driver-nvidia-gpu: DeviceClasses
  `gpu.nvidia.com`, `mig.nvidia.com`, `vfio.gpu.nvidia.com`; kubelet plugin on `gpu-platform.io/gpu-allocation: dra`
  nodes); each tenant with quota on a DRA pool gets `tenant-<tenant>-claim-template-<gpu|gpu-2|gpu-4|gpu-8>`
  kubernetes:resource.k8s.io/v1:ResourceClaimTemplate
- `efa-device-plugin` gpu-platform:k8s:EfaDevicePlugin (only with EFA pools), child `efa-device-plugin-release`
  kubernetes:helm.sh/v3:Release (chart aws-efa-k8s-device-plugin in kube-system; nodeSelector
  `gpu-platform.io/efa: "true"`)
- `platform-storageclass-<class>` kubernetes:storage.k8s.io/v1:StorageClass (EKS: `gp3`, default, encrypted,
  provisioner `ebs.csi.aws.com` of the `ebs-csi-addon` add-on); `platform-owned-policy` /
  `platform-owned-policy-binding` ValidatingAdmissionPolicy(Binding) `gpu-platform-owned-objects`;
  `platform-load-balancers-policy(-binding)` `gpu-platform-tenant-load-balancers`
- `platform-tenant-role` kubernetes:rbac.authorization.k8s.io/v1:ClusterRole `gpu-platform-tenant`;
  `platform-priority-policy` ...admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy and
  `platform-priority-policy-binding` ...:ValidatingAdmissionPolicyBinding, both `gpu-platform-tenant-priority`;
  `platform-gpu-nodes-policy` / `-binding` (`gpu-platform-gpu-nodes-for-gpu-work`: a tenant pod that tolerates the GPU
  taint or selects a GPU pool must ask a GPU)
- `tenant-<tenant>` gpu-platform:k8s:TenantSpace, children `tenant-<tenant>-namespace` (Namespace, label
  `gpu-platform.io/tenant`), `-quota` (ResourceQuota `gpu-quota`), `-limits` (LimitRange `defaults`),
  `-rolebinding-<group>` (RoleBinding `<group>-tenant` to ClusterRole `gpu-platform-tenant`),
  `-netpol-<name>` kubernetes:networking.k8s.io/v1:NetworkPolicy
  with names `default-deny`, `allow-same-namespace`, `allow-dns`, `allow-monitoring-scrape`, `allow-kubernetes-api`,
  `allow-aws-services` and `allow-s3` (EKS), `allow-egress` and `allow-ingress` (where the tenant's `network` asks),
  all labelled `gpu-platform.io/owner: platform`
- `kueue` gpu-platform:k8s:Kueue (when enabled): `kueue-namespace`, `kueue-release`,
  `kueue-flavor-<pool>` kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor (object name = pool name; plus
  `kueue-flavor-default-cpu`), `kueue-clusterqueue-<tenant>` ...:ClusterQueue (object name = tenant),
  `kueue-localqueue-<tenant>` ...:LocalQueue `default` in the tenant namespace, `kueue-priority-<tier>`
  ...:WorkloadPriorityClass
- `job-apis` gpu-platform:k8s:JobApis (each as `queueing.jobApis` enables it): `job-apis-jobset-namespace` /
  `-release` (JobSet in `jobset-system`), `job-apis-kubeflow-trainer-namespace` / `-release` (Kubeflow Trainer in
  `kubeflow-system`) and `job-apis-runtime-torch-distributed` (its ClusterTrainingRuntime),
  `job-apis-kuberay-operator-namespace` / `-release` (in `kuberay-system`); all installed before Kueue
- `volcano` gpu-platform:k8s:Volcano (when enabled): `volcano-namespace`, `volcano-release`,
  `volcano-queue-<tenant>` kubernetes:scheduling.volcano.sh/v1beta1:Queue (object name = tenant)
- `monitoring` gpu-platform:k8s:Monitoring: `monitoring-namespace` + `monitoring-release`
  (kube-prometheus-stack, only when monitoring.prometheus is install) + `monitoring-node-exporter-namespace`
  (Namespace `node-exporter`, privileged, for the chart's node-exporter), `monitoring-dcgm-servicemonitor`
  kubernetes:monitoring.coreos.com/v1:ServiceMonitor, `monitoring-gpu-rules` ...:PrometheusRule
  `gpu-platform-rules` (alerts GpuXidError, GpuDoubleBitEccError, GpuLost are severity critical),
  `monitoring-dashboard` ConfigMap `gpu-platform-dashboard`
- `platform-capacity-demand` ConfigMap `gpu-platform-capacity-demand` in kube-system (only when the stack
  declares `demand`): the P95 demand per class that the capacity policies compare pools with

- `platform-volcano-default-queue` (Volcano's Queue `default`, no GPU capability) where Volcano runs;
  `platform-routing-validatingadmissionpolicy` / `-validatingadmissionpolicybinding`
  (`gpu-platform-volcano-jobs-through-kueue`) where Kueue and Volcano both run (gpu_platform.k8s.routing)

Helm releases install in the order of gpu_platform.k8s.releases (a release depends on the release
bringing the CRDs it renders: Kueue's ServiceMonitor waits for kube-prometheus-stack).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.catalog import Catalog
from gpu_platform.efa import efa_pools
from gpu_platform.federation import federated_spec, is_manager
from gpu_platform.k8s import dra, job_apis
from gpu_platform.k8s.demand import demand_configmap
from gpu_platform.k8s.efa import EfaDevicePlugin, EfaDevicePluginArgs
from gpu_platform.k8s.gpu_operator import GpuOperator, GpuOperatorArgs, gpu_operator_values
from gpu_platform.k8s.isolation import (
    gates_policy,
    gates_policy_binding,
    gpu_nodes_policy,
    gpu_nodes_policy_binding,
    load_balancers_policy,
    load_balancers_policy_binding,
    owned_policy,
    owned_policy_binding,
    priority_policy,
    priority_policy_binding,
    tenant_cluster_role,
)
from gpu_platform.k8s.kueue import Kueue, KueueArgs, kueue_values
from gpu_platform.k8s.monitoring import Monitoring, MonitoringArgs, prometheus_stack_values
from gpu_platform.k8s.objects import create
from gpu_platform.k8s.releases import MONITORING_GROUP, release_dependencies
from gpu_platform.k8s.routing import both_schedulers, default_queue, volcano_jobs_policy
from gpu_platform.k8s.storage import storage_classes
from gpu_platform.k8s.tenants import TenantArgs, TenantSpace, priority_classes
from gpu_platform.k8s.volcano import Volcano, VolcanoArgs, volcano_values
from gpu_platform.pools import dra_pools
from gpu_platform.provenance import NS, pool_key, source, tenant_key
from gpu_platform.spec.models import PlatformSpec


@dataclass(frozen=True)
class GpuPlatformArgs:
    """Inputs of the GpuPlatform component."""

    spec: PlatformSpec
    catalog: Catalog
    provider: k8s.Provider
    s3_peers: pulumi.Input[list[dict[str, Any]]] | None = None  # EKS: the `to` of the tenants' `allow-s3` (program.build_aws)
    prefix: str = ""
    """A MultiKueue worker's name prefix for the components below (program.build_workers); "" for the stack's own cluster."""


def installed_releases(spec: PlatformSpec, catalog: Catalog) -> dict[str, dict[str, Any]]:
    """Chart -> Helm values of every release the platform layer installs on this stack."""
    out: dict[str, dict[str, Any]] = {}
    if spec.monitoring.prometheus == "install":
        out["kube-prometheus-stack"] = prometheus_stack_values(spec)
    if not is_manager(spec):
        out["gpu-operator"] = gpu_operator_values(spec, catalog)
    if dra_pools(spec):
        out[dra.CHART] = dra.dra_driver_values(spec)
    out |= job_apis.release_values(spec)
    if spec.queueing.kueue.enabled:
        out["kueue"] = kueue_values(spec)
    if spec.queueing.volcano.enabled:
        out["volcano"] = volcano_values(spec)
    return out


def release_graph(spec: PlatformSpec, catalog: Catalog) -> dict[str, list[str]]:
    """Chart -> charts of this stack to install first; an `existing` Prometheus already brings its CRDs."""
    existing = {MONITORING_GROUP} if spec.monitoring.prometheus == "existing" else set()
    return release_dependencies(installed_releases(spec, catalog), existing)


class GpuPlatform(pulumi.ComponentResource):
    """GPU Operator, sharing, tenants, Kueue, Volcano and monitoring on one cluster."""

    def __init__(self, name: str, args: GpuPlatformArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:k8s:GpuPlatform", name, None, opts)
        spec, catalog, provider, pre = args.spec, args.catalog, args.provider, args.prefix
        child = pulumi.ResourceOptions(parent=self)
        cluster_scoped = pulumi.ResourceOptions(parent=self, provider=provider)
        graph = release_graph(spec, catalog)
        built: dict[str, pulumi.Resource] = {}

        def after(chart: str) -> tuple[pulumi.Resource, ...]:
            # Components are built in install_order(graph)'s order, so every dependency exists here.
            return tuple(built[dep] for dep in graph[chart])

        with source(NS + "queueing"):
            for pc in priority_classes():
                create(f"{name}-priority-{pc['metadata']['name'].removeprefix('gpu-')}", pc, cluster_scoped)
        with source(NS + "tenants"):  # what every tenant namespace gets: role, priority ceiling, guarded objects
            create(f"{name}-tenant-role", tenant_cluster_role(spec), cluster_scoped)
            policy = create(f"{name}-priority-policy", priority_policy(spec), cluster_scoped)
            after_policy = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[policy])
            create(f"{name}-priority-policy-binding", priority_policy_binding(), after_policy)
            gpu_nodes = create(f"{name}-gpu-nodes-policy", gpu_nodes_policy(bool(dra_pools(spec))), cluster_scoped)
            after_gpu_nodes = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[gpu_nodes])
            create(f"{name}-gpu-nodes-policy-binding", gpu_nodes_policy_binding(), after_gpu_nodes)
            owned = create(f"{name}-owned-policy", owned_policy(spec), cluster_scoped)
            after_owned = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[owned])
            create(f"{name}-owned-policy-binding", owned_policy_binding(), after_owned)
            balancers = create(f"{name}-load-balancers-policy", load_balancers_policy(), cluster_scoped)
            after_balancers = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[balancers])
            create(f"{name}-load-balancers-policy-binding", load_balancers_policy_binding(), after_balancers)
            if spec.queueing.kueue.enabled and spec.tenants:
                gates = create(f"{name}-kueue-gates-policy", gates_policy(spec), cluster_scoped)
                create(
                    f"{name}-kueue-gates-policy-binding",
                    gates_policy_binding(),
                    pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[gates]),
                )
        with source(NS + "storage"):
            classes = tuple(create(f"{name}-storageclass-{sc['metadata']['name']}", sc, cluster_scoped) for sc in storage_classes(spec))
        with source(NS + "monitoring"):
            monitoring = Monitoring(f"{pre}monitoring", MonitoringArgs(spec=spec, provider=provider, after=classes), child)
        if monitoring.release is not None:
            built["kube-prometheus-stack"] = monitoring.release
        if not is_manager(spec):  # a MultiKueue manager has no GPU nodes: its workers run the operator
            with source(NS + "gpuOperator"):
                operator_args = GpuOperatorArgs(spec=spec, catalog=catalog, provider=provider, after=after("gpu-operator"))
                operator = GpuOperator(f"{pre}gpu-operator", operator_args, child)
            built["gpu-operator"] = operator.release
            monitoring.scrape_gpu_operator(operator.release)
        if dra_pools(spec):
            with source(pool_key(spec, dra_pools(spec)[0].name) + ".allocation"):
                driver = dra.DraDriver(f"{pre}dra-driver", dra.DraDriverArgs(spec=spec, provider=provider, after=after(dra.CHART)), child)
            built[dra.CHART] = driver.release
        if efa_pools(spec):
            with source(pool_key(spec, efa_pools(spec)[0].name) + ".efa"):
                EfaDevicePlugin(f"{pre}efa-device-plugin", EfaDevicePluginArgs(spec=spec, catalog=catalog, provider=provider), child)
        if job_apis.installed(spec):
            with source(NS + "queueing.jobApis"):
                apis = job_apis.JobApis(f"{pre}job-apis", job_apis.JobApisArgs(spec=spec, provider=provider, dependencies=graph, built=built), child)
            built |= apis.releases
        # A MultiKueue manager's Kueue sees the federation: the workers' pools as flavors, quotas summed.
        queues = federated_spec(spec) if is_manager(spec) else spec
        spaces: dict[str, TenantSpace] = {}
        for t in spec.tenants:
            with source(tenant_key(spec, t.name)):
                tenant_args = TenantArgs(spec=spec, catalog=catalog, tenant=t, provider=provider, s3_peers=args.s3_peers, queues=queues)
                spaces[t.name] = TenantSpace(f"{pre}tenant-{t.name}", tenant_args, child)
        self.kueue: pulumi.Resource | None = None
        self.tenant_namespaces: dict[str, pulumi.Resource] = {n: s.namespace for n, s in spaces.items()}
        if spec.queueing.kueue.enabled:
            namespaces = self.tenant_namespaces
            with source(NS + "queueing.kueue"):
                kueue_args = KueueArgs(spec=queues, catalog=catalog, provider=provider, tenant_namespaces=namespaces, after=after("kueue"))
                self.kueue = Kueue(f"{pre}kueue", kueue_args, child)
        if spec.queueing.volcano.enabled:
            with source(NS + "queueing.volcano"):
                volcano = Volcano(f"{pre}volcano", VolcanoArgs(spec=spec, catalog=catalog, provider=provider, after=after("volcano")), child)
            # Retained on delete: Volcano's queue webhook refuses to delete `default` (validate_queue.go
            # validateQueueDeleting), which would fail `pulumi destroy` and turning Volcano off.
            after_volcano = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[volcano], retain_on_delete=True)
            with source(NS + "queueing.volcano"):
                create(f"{name}-volcano-default-queue", default_queue(spec, catalog), after_volcano)
            if both_schedulers(spec):
                for manifest in volcano_jobs_policy():
                    with source(NS + "queueing"):
                        create(f"{name}-routing-{manifest['kind'].lower()}", manifest, pulumi.ResourceOptions(parent=self, provider=provider))
        demand = demand_configmap(spec)
        if demand is not None:
            with source(NS + "demand"):
                create(f"{name}-capacity-demand", demand, cluster_scoped)
        self.register_outputs({})
