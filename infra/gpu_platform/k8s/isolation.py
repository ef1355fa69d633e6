"""What keeps a tenant inside its lane: its own RBAC role and an admission policy on priority.

- `tenant_cluster_role`: what a tenant group may do in its namespace. The built-in `edit` role also
  writes NetworkPolicies (so a tenant could delete its own default deny) and impersonates service
  accounts; this role runs workloads and reads policies, nothing more.
- `owned_policy` / `owned_policy_binding`: a ValidatingAdmissionPolicy that stops tenants (their groups and
  their namespaces' service accounts) from creating, changing or deleting objects labelled
  `gpu-platform.io/owner: platform` (the platform's NetworkPolicies), so they cannot delete the default
  deny or change the platform's rules. They may write their own policies in their namespace, and since
  NetworkPolicies are additive, those can open further paths for their own pods (the tenant role grants it).
- `priority_policy` / `priority_policy_binding`: a ValidatingAdmissionPolicy that lets a tenant use
  only the PriorityClasses (and Kueue WorkloadPriorityClasses) at or below the tenant's tier, read from
  its namespace's `gpu-platform.io/priority` label, which a tenant cannot change. It checks every path
  Kueue reads a priority from (jobframework reconciler.go `ExtractPriority`: the workload priority
  label, else the first pod template's priorityClassName): pods, the pod templates of every job kind
  tenants may create, and the Kueue Workload itself (`spec.priorityClassRef`), which covers any
  integration whose job kind is not listed here.
"""

from __future__ import annotations

from typing import Any

from gpu_platform.behaviour.volcano import SCHEDULER_NAME as VOLCANO_SCHEDULER
from gpu_platform.k8s import job_apis
from gpu_platform.k8s.objects import LABEL_TENANT, Manifest, metadata
from gpu_platform.k8s.tenant_network import LABEL_OWNER, PLATFORM_OWNER
from gpu_platform.k8s.tenants import LABEL_EGRESS_BOUNDARY, LABEL_LOAD_BALANCERS, PRIORITY_VALUES, TENANT_ROLE
from gpu_platform.pools import (
    DOMAIN,
    GPU_TAINT,
    LABEL_EFA,
    LABEL_GPU_MODEL,
    LABEL_GPUS_PER_NODE,
    LABEL_INTERRUPTIBLE,
    LABEL_POOL,
    LABEL_SHARING,
    LABEL_SPOT_FALLBACK,
    LABEL_TIER,
    LABEL_WORKLOAD,
    dra_pools,
)
from gpu_platform.spec.models import PlatformSpec

PRIORITY_POLICY = "gpu-platform-tenant-priority"
GPU_NODES_POLICY = "gpu-platform-gpu-nodes-for-gpu-work"
OWNED_POLICY = "gpu-platform-owned-objects"
GATES_POLICY = "gpu-platform-kueue-gates"
LOAD_BALANCERS_POLICY = "gpu-platform-tenant-load-balancers"
KUEUE_GATE_PREFIX = "kueue.x-k8s.io/"
LABEL_PRIORITY = f"{DOMAIN}/priority"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
ADMISSION_API = "admissionregistration.k8s.io/v1"
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ = ["get", "list", "watch"]

# (apiGroups, resources, verbs). Workloads and their config are the tenant's; policies, quotas and
# queues are the platform's and readable only.
TENANT_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (("",), ("pods", "services", "configmaps", "secrets", "persistentvolumeclaims"), (*READ, *WRITE)),
    (("",), ("pods/log", "pods/status", "events", "endpoints", "resourcequotas", "limitranges", "serviceaccounts"), tuple(READ)),
    (("",), ("pods/exec", "pods/attach", "pods/portforward"), ("create", "get")),
    (("apps",), ("deployments", "statefulsets", "replicasets"), (*READ, *WRITE)),
    (("apps",), ("deployments/scale", "statefulsets/scale"), ("get", "patch", "update")),
    (("batch",), ("jobs", "cronjobs"), (*READ, *WRITE)),
    (("batch.volcano.sh",), ("jobs",), (*READ, *WRITE)),
    (("kueue.x-k8s.io",), ("localqueues", "workloads"), tuple(READ)),
    # Tenants add their own policies (additive); the platform's, labelled, are guarded by OWNED_POLICY.
    (("networking.k8s.io",), ("networkpolicies",), (*READ, *WRITE)),
    (("policy",), ("poddisruptionbudgets",), (*READ, *WRITE)),
    # Gang scheduling of a Kueue-admitted job with an explicit PodGroup (minMember, queue).
    (("scheduling.volcano.sh",), ("podgroups",), (*READ, *WRITE)),
    # A way in for serving (ALB Ingresses; NLB Services above): where and how is LOAD_BALANCERS_POLICY's.
    (("networking.k8s.io",), ("ingresses",), (*READ, *WRITE)),
)

# Kinds tenants create that carry a priority (pods directly; jobs through Kueue's priority label); the job
# APIs' kinds are added where the stack installs them (`priority_resources`).
PRIORITY_RESOURCES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "v1", ("pods",)),
    ("batch", "v1", ("jobs",)),
    ("apps", "v1", ("deployments", "statefulsets")),
    ("kueue.x-k8s.io", "*", ("workloads",)),
    # A tenant's own PodGroup (gang scheduling with minMember) names a Volcano queue and a priority class itself.
    ("scheduling.volcano.sh", "*", ("podgroups",)),
)


def tenant_rules(spec: PlatformSpec) -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    """TENANT_RULES plus read-write on each job kind the stack installs (and read on Trainer's namespaced runtimes)."""
    rules = list(TENANT_RULES)
    for _, _, group, _, plural in job_apis.kinds(spec):
        rules.append(((group,), (plural,), (*READ, *WRITE)))
    if dra_pools(spec):
        # DRA: tenants read the platform's claim templates and the claims made from them; they create neither
        # (a claim of their own could name any DeviceClass), so every claim is one of gpu_platform.k8s.dra's.
        rules.append((("resource.k8s.io",), ("resourceclaimtemplates", "resourceclaims"), tuple(READ)))
    if spec.queueing.job_apis.trainer:
        # A tenant's own TrainingRuntime could carry any pod template (priority, tolerations): the platform's
        # ClusterTrainingRuntimes only, read through the TrainJob.
        rules.append((("trainer.kubeflow.org",), ("trainingruntimes",), tuple(READ)))
    return rules


def priority_resources(spec: PlatformSpec) -> list[tuple[str, str, tuple[str, ...]]]:
    """The kinds the priority policy matches: the built-in ones and every job kind the stack installs."""
    return [*PRIORITY_RESOURCES[:3], *((g, "*", (plural,)) for _, _, g, _, plural in job_apis.kinds(spec)), *PRIORITY_RESOURCES[3:]]


# CEL: the tenant a namespace belongs to (its Volcano queue has the tenant's name, gpu_platform.k8s.volcano).
_NS_LABELS = "namespaceObject.metadata.labels"


def _ns_label(key: str) -> str:
    """CEL: the value of the request namespace's label `key`, '' when it has none."""
    return f"has({_NS_LABELS}) && '{key}' in {_NS_LABELS} ? {_NS_LABELS}['{key}'] : ''"


OWN_TENANT = _ns_label(LABEL_TENANT)


# The pod specs Kueue reads a priority from, per kind (the PodSets of each integration, kueue
# pkg/controller/jobs/*: Job/Deployment/StatefulSet template, JobSet replicatedJobs, Ray head and worker
# groups). A TrainJob has none of its own: its pods come from the platform's ClusterTrainingRuntime, and
# its `runtimePatches` cannot set a priorityClassName (trainer v1alpha1 PodSpecPatch), so only its Kueue
# priority label counts. Optional parts are guarded: a missing field is an evaluation error, which
# failurePolicy Fail turns into a denial.
POD_SPECS = (
    "!has(object.spec) ? [] : "
    "request.kind.kind == 'Pod' ? [object.spec] : "
    "request.kind.kind in ['Job', 'Deployment', 'StatefulSet'] ? "
    "(has(object.spec.template) && has(object.spec.template.spec) ? [object.spec.template.spec] : []) : "
    "request.kind.kind == 'JobSet' ? (has(object.spec.replicatedJobs) ? object.spec.replicatedJobs.map(r, r.template.spec.template.spec) : []) : "
    "request.kind.kind == 'RayJob' ? (has(object.spec.rayClusterSpec) ? [object.spec.rayClusterSpec.headGroupSpec.template.spec] + "
    "(has(object.spec.rayClusterSpec.workerGroupSpecs) ? object.spec.rayClusterSpec.workerGroupSpecs.map(g, g.template.spec) : []) : []) : "
    "request.kind.kind == 'RayCluster' ? (has(object.spec.headGroupSpec) ? [object.spec.headGroupSpec.template.spec] : []) + "
    "(has(object.spec.workerGroupSpecs) ? object.spec.workerGroupSpecs.map(g, g.template.spec) : []) : []"
)


def tenant_cluster_role(spec: PlatformSpec) -> Manifest:
    """The ClusterRole every tenant group is bound to in its own namespace (by RoleBinding)."""
    rules = [{"apiGroups": list(g), "resources": list(r), "verbs": list(v)} for g, r, v in tenant_rules(spec)]
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": metadata(TENANT_ROLE), "rules": rules}


def allowed_tiers(tier: str) -> list[str]:
    """The platform tiers a tenant of this tier may use: its own and every lower one."""
    ceiling = PRIORITY_VALUES[tier]
    return [t for t, v in PRIORITY_VALUES.items() if v <= ceiling]


def _cel_list(items: list[str]) -> str:
    return "[" + ", ".join(f"'{i}'" for i in items) + "]"


def priority_policy(spec: PlatformSpec) -> Manifest:
    """ValidatingAdmissionPolicy: tenant pods and jobs use only priorities at or below their namespace's tier."""
    pod_classes = "{" + ", ".join(f"'{t}': {_cel_list([f'gpu-{a}' for a in allowed_tiers(t)])}" for t in PRIORITY_VALUES) + "}"
    workload_classes = "{" + ", ".join(f"'{t}': {_cel_list(allowed_tiers(t))}" for t in PRIORITY_VALUES) + "}"
    tier = _ns_label(LABEL_PRIORITY)
    body: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
            "resourceRules": [
                {"apiGroups": [g], "apiVersions": [v], "operations": ["CREATE", "UPDATE"], "resources": list(r)}
                for g, v, r in priority_resources(spec)
            ],
        },
        "variables": [
            {"name": "tier", "expression": tier},
            {"name": "podClasses", "expression": f"variables.tier in {pod_classes} ? {pod_classes}[variables.tier] : []"},
            {"name": "workloadClasses", "expression": f"variables.tier in {workload_classes} ? {workload_classes}[variables.tier] : []"},
            {"name": "podSpecs", "expression": POD_SPECS},
            {"name": "tenant", "expression": OWN_TENANT},
        ],
        "validations": [
            {
                "expression": "variables.podSpecs.all(s, !has(s.priorityClassName) || s.priorityClassName in variables.podClasses)",
                "message": "priorityClassName is above this tenant's tier; allowed: the gpu-<tier> classes at or below the namespace's tier",
                "reason": "Forbidden",
            },
            {
                "expression": (
                    "request.kind.kind != 'Workload' || !has(object.spec.priorityClassRef) || "
                    "(object.spec.priorityClassRef.group == 'kueue.x-k8s.io' ? object.spec.priorityClassRef.name in variables.workloadClasses "
                    ": object.spec.priorityClassRef.name in variables.podClasses)"
                ),
                "message": "the Workload's priorityClassRef is above this tenant's tier; allowed: the classes at or below the namespace's tier",
                "reason": "Forbidden",
            },
            {
                # Volcano reads a PodGroup's own spec.priorityClassName (scheduler api job_info.go) and queue
                # (the podgroups mutate webhook fills only an empty/default queue): both are the tenant's to choose.
                "expression": (
                    "request.kind.kind != 'PodGroup' || ((!has(object.spec.priorityClassName) || "
                    "object.spec.priorityClassName in variables.podClasses) && "
                    "(!has(object.spec.queue) || object.spec.queue == variables.tenant))"
                ),
                "message": (
                    "a tenant's PodGroup uses its own Volcano queue (named after the tenant) and a priorityClassName at or below the namespace's tier"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": (
                    f"!has(object.metadata.labels) || !('{KUEUE_PRIORITY_LABEL}' in object.metadata.labels) || "
                    f"object.metadata.labels['{KUEUE_PRIORITY_LABEL}'] in variables.workloadClasses"
                ),
                "message": f"{KUEUE_PRIORITY_LABEL} is above this tenant's tier; allowed: the tiers at or below the namespace's tier",
                "reason": "Forbidden",
            },
        ],
    }
    return {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": metadata(PRIORITY_POLICY), "spec": body}


def deny_binding(policy: str) -> Manifest:
    """A cluster-wide ValidatingAdmissionPolicyBinding of `policy` with Deny, named after it.

    The policy's own namespaceSelector decides where it applies.
    """
    spec = {"policyName": policy, "validationActions": ["Deny"]}
    return {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicyBinding", "metadata": metadata(policy), "spec": spec}


def priority_policy_binding() -> Manifest:
    """Binds the priority policy cluster-wide with Deny (its own namespaceSelector limits it to tenants)."""
    return deny_binding(PRIORITY_POLICY)


def _owned(var: str, absent_on: str) -> str:
    """CEL: `var` carries the platform's owner label.

    `var` is null on `absent_on` (object on DELETE, oldObject on CREATE), which the operation test skips
    (`&&` short-circuits; a field of null would be an evaluation error).
    """
    labels = f"{var}.metadata.labels"
    return f"request.operation != '{absent_on}' && has({labels}) && '{LABEL_OWNER}' in {labels} && {labels}['{LABEL_OWNER}'] == '{PLATFORM_OWNER}'"


def _tenant_requester(spec: PlatformSpec) -> str:
    """CEL: the request comes from a tenant: a member of a tenant group, or a service account of the request's namespace."""
    groups = sorted({g for t in spec.tenants for g in t.groups})
    return (
        f"(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {_cel_list(groups)})) || "
        "(has(request.userInfo.username) && request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace + ':'))"
    )


def gates_policy(spec: PlatformSpec) -> Manifest:
    """ValidatingAdmissionPolicy: tenants may not remove Kueue's scheduling gates from their pods.

    Kueue holds a managed pod back with the scheduling gate `kueue.x-k8s.io/admission` until its Workload is
    admitted (pkg/controller/jobs/pod/pod_webhook.go Default adds it; the pod reconciler removes it on admission),
    and a TAS pod with `kueue.x-k8s.io/topology` until the topology ungater pins its node. The tenant role may
    update pods, and the API server lets an update drop gates (pkg/apis/core/validation ValidatePodUpdate allows
    removing schedulingGates), so a tenant could start a pod outside its quota and placement. Kueue's own service
    account is not a tenant, so its ungating passes; tenants may still add and keep gates of their own.
    """
    gone = (
        f"has(oldObject.spec.schedulingGates) && oldObject.spec.schedulingGates.exists(g, g.name.startsWith('{KUEUE_GATE_PREFIX}') && "
        "!(has(object.spec.schedulingGates) && object.spec.schedulingGates.exists(h, h.name == g.name)))"
    )
    body: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods"]}],
        },
        "variables": [{"name": "tenant", "expression": _tenant_requester(spec)}, {"name": "ungated", "expression": gone}],
        "validations": [
            {
                "expression": "!variables.tenant || !variables.ungated",
                "message": f"scheduling gates {KUEUE_GATE_PREFIX}* are Kueue's: only Kueue removes them, when it admits the pod's workload",
                "reason": "Forbidden",
            }
        ],
    }
    return {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": metadata(GATES_POLICY), "spec": body}


def gates_policy_binding() -> Manifest:
    """Binds the Kueue-gates policy cluster-wide with Deny (its namespaceSelector limits it to tenant namespaces)."""
    return deny_binding(GATES_POLICY)


def owned_policy(spec: PlatformSpec) -> Manifest:
    """ValidatingAdmissionPolicy: tenants may not create, change or delete NetworkPolicies labelled as the platform's.

    A tenant is a member of any tenant group of the stack, or a service account of the namespace the
    request is in; the platform's deployer (and cluster admins) are neither. On DELETE `object` is null
    and `oldObject` is the stored policy; on UPDATE both are set, so removing the label is caught too
    (Kubernetes API reference, ValidatingAdmissionPolicy CEL variables `object`, `oldObject`, `request`).
    """
    tenant = _tenant_requester(spec)
    body: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
            "resourceRules": [
                {
                    "apiGroups": ["networking.k8s.io"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["networkpolicies"],
                }
            ],
        },
        "variables": [
            {"name": "tenant", "expression": tenant},
            {"name": "owned", "expression": f"({_owned('object', 'DELETE')}) || ({_owned('oldObject', 'CREATE')})"},
            {
                "name": "boundary",
                "expression": (
                    f"has(namespaceObject.metadata.labels) && '{LABEL_EGRESS_BOUNDARY}' in namespaceObject.metadata.labels && "
                    f"namespaceObject.metadata.labels['{LABEL_EGRESS_BOUNDARY}'] == 'true'"
                ),
            },
        ],
        "validations": [
            {
                "expression": "!variables.tenant || !variables.owned",
                "message": (
                    f"NetworkPolicies labelled {LABEL_OWNER}={PLATFORM_OWNER} belong to the platform; "
                    "tenants may add their own policies but not create, change or delete these"
                ),
                "reason": "Forbidden",
            },
            {
                # A namespace whose stack egress is a boundary: the tenant's own policies may not add egress rules
                # (NetworkPolicies are additive: any `egress` rule of any policy selecting a pod opens that path).
                "expression": (
                    "!variables.tenant || request.operation == 'DELETE' || !variables.boundary || "
                    "!(has(object.spec.egress) && size(object.spec.egress) > 0)"
                ),
                "message": (
                    "this namespace's egress is the stack's (network.egressBoundary): NetworkPolicies a tenant writes may not "
                    "open egress; ask the platform team to add it to the stack's network.egress"
                ),
                "reason": "Forbidden",
            },
        ],
    }
    return {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": metadata(OWNED_POLICY), "spec": body}


def owned_policy_binding() -> Manifest:
    """Binds the owned-objects policy cluster-wide with Deny (its namespaceSelector limits it to tenant namespaces)."""
    return deny_binding(OWNED_POLICY)


# Node labels only GPU pools carry (gpu_platform.pools.node_labels); `nvidia.com/` labels come from the GPU
# Operator's feature discovery, on GPU nodes only.
GPU_POOL_LABELS = (
    LABEL_POOL,
    LABEL_WORKLOAD,
    LABEL_TIER,
    LABEL_GPU_MODEL,
    LABEL_SHARING,
    LABEL_GPUS_PER_NODE,
    LABEL_INTERRUPTIBLE,
    LABEL_EFA,
    LABEL_SPOT_FALLBACK,
)


def gpu_nodes_policy(dra: bool = False) -> Manifest:
    """ValidatingAdmissionPolicy: a tenant pod that can land on GPU nodes must ask for a GPU there.

    Every GPU pool is tainted `nvidia.com/gpu` (pools.GPU_TAINT); a pod that tolerates it (or tolerates
    everything) or selects a GPU pool's labels, yet asks no `nvidia.com/` resource, would sit on a GPU node
    outside every GPU quota, taking its CPU, memory, EFA interfaces and hugepages from the tenant whose pods
    the node was scaled for. EFA devices and hugepages likewise come only with GPUs (Kueue does not count
    them: kueue excludeResourcePrefixes). GPU limits are what count: for extended resources the request
    must equal the limit (core validation), and a limit of 0 asks for nothing. Pods only (CREATE and UPDATE:
    tolerations may be added to a pending pod): every workload kind reaches the nodes as pods; Kueue's own
    ungating update of a GPU pod passes, since that pod asks a GPU.
    """
    keys = _cel_list(list(GPU_POOL_LABELS))
    limits = "has(c.resources) && has(c.resources.limits)"
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}],
        },
        "variables": [
            {"name": "containers", "expression": "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"},
            {
                "name": "asksGpu",
                "expression": (
                    f"variables.containers.exists(c, {limits} && c.resources.limits.exists(k, "
                    "k.startsWith('nvidia.com/') && !(string(c.resources.limits[k]) in ['0', '0m'])))"
                    # DRA pools: GPUs come by ResourceClaim (tenants create no claim or template of their own, so
                    # every claim is one of the platform's GPU templates, gpu_platform.k8s.dra)
                    + (" || (has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)" if dra else "")
                ),
            },
            {
                "name": "toleratesGpuNodes",
                "expression": (
                    f"has(object.spec.tolerations) && object.spec.tolerations.exists(t, !has(t.key) || t.key == '' || t.key == '{GPU_TAINT.key}')"
                ),
            },
            {
                "name": "selectsGpuPool",
                "expression": (
                    f"(has(object.spec.nodeSelector) && object.spec.nodeSelector.exists(k, k in {keys} || k.startsWith('nvidia.com/'))) || "
                    "(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
                    "has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) && "
                    "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.exists(term, "
                    f"has(term.matchExpressions) && term.matchExpressions.exists(e, e.key in {keys} || e.key.startsWith('nvidia.com/'))))"
                ),
            },
            {
                "name": "takesNodeDevices",
                "expression": (
                    f"variables.containers.exists(c, {limits} && c.resources.limits.exists(k, "
                    "k.startsWith('hugepages-') || k == 'vpc.amazonaws.com/efa'))"
                ),
            },
        ],
        "validations": [
            {
                "expression": "variables.asksGpu || !(variables.toleratesGpuNodes || variables.selectsGpuPool)",
                "message": (
                    f"this pod tolerates the GPU nodes' taint {GPU_TAINT.key} or selects a GPU pool but asks no GPU; "
                    "GPU nodes run GPU work only: request a GPU resource (nvidia.com/...), or drop the toleration and selector"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": "variables.asksGpu || !variables.takesNodeDevices",
                "message": "EFA devices and hugepages come with the GPUs of their node: request a GPU resource (nvidia.com/...) with them",
                "reason": "Forbidden",
            },
            {
                # The kubelet runs a pod created with spec.nodeName without the scheduler: no taint, selector or
                # quota placement applies, and Kueue's gate is bypassed. The scheduler binds through the
                # pods/binding subresource, which this policy does not match, so only CREATE is checked.
                "expression": "request.operation != 'CREATE' || !has(object.spec.nodeName) || object.spec.nodeName == ''",
                "message": "spec.nodeName places a pod without the scheduler (taints, pools, quota); tenants may not set it",
                "reason": "Forbidden",
            },
        ],
    }
    if dra:
        spec["validations"] += dra_validations()
    return {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": metadata(GPU_NODES_POLICY), "spec": spec}


def dra_validations() -> list[dict[str, str]]:
    """On stacks with DRA pools: claims come from the platform's templates, and not through Volcano.

    kueue pkg/workload/workload.go HasResourceClaim: a pod set naming a ResourceClaim is never counted against quota (only
    templates are, pkg/dra/claims.go), so such a pod is refused at once instead of pending forever (a job naming one
    stays inadmissible in Kueue). Volcano allocates claims only with its predicates plugin's
    `predicate.DynamicResourceAllocationEnable` argument (on in the chart's config/volcano-scheduler-ci.conf only; the
    platform's scheduler config, gpu_platform.k8s.volcano, leaves it off): a Volcano-bound pod would start with its
    claim unallocated, and the kubelet refuses it.
    """
    return [
        {
            "expression": "!has(object.spec.resourceClaims) || object.spec.resourceClaims.all(c, has(c.resourceClaimTemplateName))",
            "message": (
                "a tenant pod claims devices through the namespace's ResourceClaimTemplates (resourceClaimTemplateName: gpu, "
                "gpu-2, gpu-4 or gpu-8 where a node has that many), not a named ResourceClaim, which no quota counts"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                f"!has(object.spec.resourceClaims) || size(object.spec.resourceClaims) == 0 || "
                f"!has(object.spec.schedulerName) || object.spec.schedulerName != '{VOLCANO_SCHEDULER}'"
            ),
            "message": "pods with resourceClaims are scheduled by the default scheduler: Volcano here does not allocate DRA claims",
            "reason": "Forbidden",
        },
    ]


def gpu_nodes_policy_binding() -> Manifest:
    """Binds the GPU-nodes policy cluster-wide with Deny (its namespaceSelector limits it to tenant namespaces)."""
    return deny_binding(GPU_NODES_POLICY)


# AWS Load Balancer Controller at the lockfile's tag: the Service class it reconciles (pkg/config
# `ServiceConfig.LoadBalancerClass` default), the Ingress class the chart creates, and the annotations that set
# a load balancer's scheme (pkg/annotations constants; pkg/service/model_build_load_balancer.go
# `buildLoadBalancerSchemeViaAnnotation`, `buildLoadBalancerSchemeLegacyAnnotation` (a bool, Go strconv.ParseBool);
# pkg/ingress/model_build_load_balancer.go `buildLoadBalancerScheme`), and the IngressGroup annotation
# (pkg/ingress/group_loader.go: Ingresses of every namespace naming one group share one ALB).
NLB_CLASS = "service.k8s.aws/nlb"
ALB_CLASS = "alb"
SERVICE_SCHEME = "service.beta.kubernetes.io/aws-load-balancer-scheme"
SERVICE_INTERNAL = "service.beta.kubernetes.io/aws-load-balancer-internal"
INGRESS_SCHEME = "alb.ingress.kubernetes.io/scheme"
INGRESS_GROUP = "alb.ingress.kubernetes.io/group.name"
GO_FALSE = ["0", "f", "F", "false", "FALSE", "False"]  # strconv.ParseBool's false spellings


def load_balancers_policy() -> Manifest:
    """ValidatingAdmissionPolicy: a tenant's load balancers are the ones its stack declares, and only through the controller.

    Tenants may write Services and Ingresses (serving needs them). Without admission a tenant whose stack
    declares no `network.ingress.loadBalancers` could still buy one, and any Service of `type: LoadBalancer`
    without `loadBalancerClass: service.k8s.aws/nlb` goes to the in-tree cloud provider (the controller's
    Service webhook is off), which builds an internet-facing Classic ELB over NodePorts of every node. So, in
    tenant namespaces: `NodePort` Services are refused (a port on every node, GPU nodes included); a
    `LoadBalancer` Service or an Ingress needs the namespace label the stack sets from `loadBalancers`; a
    Service names the controller's NLB class and an Ingress the `alb` class; an `internal` tenant may not ask
    for `internet-facing` (by either annotation); and no Ingress joins an IngressGroup, which would merge it
    with other namespaces' Ingresses into one ALB. The controller's defaults are `internal` for both kinds.
    """

    def annotation(key: str) -> str:  # CEL: the annotation's value, '' when absent (a string either way)
        return f"(has(object.metadata.annotations) && '{key}' in object.metadata.annotations ? object.metadata.annotations['{key}'] : '')"

    service = "(request.kind.kind == 'Service')"
    balanced = f"({service} && has(object.spec.type) && object.spec.type == 'LoadBalancer')"
    ingress = "(request.kind.kind == 'Ingress')"
    scheme = annotation(SERVICE_SCHEME)
    public_service = f"({scheme} == 'internet-facing' || ({scheme} == '' && {annotation(SERVICE_INTERNAL)} in {_cel_list(GO_FALSE)}))"
    public_ingress = f"{annotation(INGRESS_SCHEME)} == 'internet-facing'"
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["services"]},
                {"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["ingresses"]},
            ],
        },
        "variables": [
            {"name": "scheme", "expression": _ns_label(LABEL_LOAD_BALANCERS)},
            {"name": "wantsBalancer", "expression": f"{balanced} || {ingress}"},
        ],
        "validations": [
            {
                "expression": f"!({service} && has(object.spec.type) && object.spec.type == 'NodePort')",
                "message": (
                    "a NodePort Service opens its port on every node, GPU nodes included; "
                    "use a ClusterIP Service (and an Ingress or an NLB Service where the stack allows)"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": "!variables.wantsBalancer || variables.scheme != ''",
                "message": (
                    "this tenant's stack declares no network.ingress.loadBalancers: it may create no load balancer (LoadBalancer Service or Ingress)"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": f"!{balanced} || (has(object.spec.loadBalancerClass) && object.spec.loadBalancerClass == '{NLB_CLASS}')",
                "message": (
                    f"a LoadBalancer Service needs spec.loadBalancerClass: {NLB_CLASS} (the AWS Load Balancer Controller's NLB); "
                    "without it the in-tree cloud provider builds an internet-facing Classic ELB over every node's NodePort"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": (
                    f"!{ingress} || (has(object.spec.ingressClassName) && object.spec.ingressClassName == '{ALB_CLASS}') || "
                    f"(!has(object.spec.ingressClassName) && {annotation('kubernetes.io/ingress.class')} == '{ALB_CLASS}')"
                ),
                "message": (
                    f"an Ingress needs ingressClassName: {ALB_CLASS} (the AWS Load Balancer Controller; no other ingress controller is installed)"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": f"variables.scheme != 'internal' || !(({balanced} && {public_service}) || ({ingress} && {public_ingress}))",
                "message": "this tenant's load balancers are internal (network.ingress.loadBalancers); internet-facing is refused",
                "reason": "Forbidden",
            },
            {
                "expression": f"!{ingress} || {annotation(INGRESS_GROUP)} == ''",
                "message": f"{INGRESS_GROUP} merges Ingresses of every namespace into one ALB; a tenant's Ingress gets its own",
                "reason": "Forbidden",
            },
        ],
    }
    return {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": metadata(LOAD_BALANCERS_POLICY), "spec": spec}


def load_balancers_policy_binding() -> Manifest:
    """Binds the load-balancers policy cluster-wide with Deny (its namespaceSelector limits it to tenant namespaces)."""
    return deny_binding(LOAD_BALANCERS_POLICY)
