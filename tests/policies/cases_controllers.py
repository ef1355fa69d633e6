"""Cases of the rules that reproduce the Kubernetes controllers' own acceptance logic (issue 9).

Kept apart from cases.py so the controller rules' cases read together; cases.py appends them to CASES.
"""

from __future__ import annotations

import yaml

from gpu_platform_policies import Resource
from tests.policies.builders import Case, Edit, at, compliant, drop, fires, silent

L40S_PATCH = "pool-l40s-dev-l40s-01"
A100_MIG_PATCH = "pool-hgx-a100-mig-dgx-a100-01"
OPERATOR = "gpu-operator-release"

POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
CONTROLLER_CASES: list[Case] = [
    *compliant("sharing-modes-exclusive", "onprem"),
    fires(
        "sharing-modes-exclusive",
        "cluster-wide-mixed-refuses-mps",
        at(OPERATOR, {"values.mig.strategy": "mixed"}),
        on=L40S_PATCH,
        says="refuses config 'mps-8' (using --mig-strategy=mixed is not supported with MPS)",
        stack="onprem",
    ),
    fires(
        "sharing-modes-exclusive",
        "chart-default-single-hides-mig",
        at(OPERATOR, {"values.mig": {}}),
        on=A100_MIG_PATCH,
        says="runs with MIG strategy 'single', so no nvidia.com/mig-* resource is advertised",
        stack="onprem",
    ),
]

DCGM = "gpu-operator-dcgm-metrics"
COMMA_IN_HELP = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\nDCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Reasons, a bitmask.\n"
CONTROLLER_CASES += [
    *compliant("dcgm-metrics-parse", "prod"),
    fires(
        "dcgm-metrics-parse",
        "comma-in-help",
        at(DCGM, {"data.dcgm-metrics.csv": COMMA_IN_HELP}),
        on=DCGM,
        says="data.dcgm-metrics.csv: dcgm-exporter would exit: record on line 2: wrong number of fields (4, the first record has 3)",
    ),
    fires(
        "dcgm-metrics-parse",
        "unknown-field",
        at(DCGM, {"data.dcgm-metrics.csv": "DCGM_FI_DEV_GPU_TEMPERATURE, gauge, GPU temperature.\n"}),
        on=DCGM,
        says="'DCGM_FI_DEV_GPU_TEMPERATURE' is not a DCGM field the exporter knows",
    ),
]

CONTROLLER_CASES += [
    *compliant("helm-chart-locatable", "prod"),
    fires(
        "helm-chart-locatable",
        "oci-registry-as-repository",
        at("kueue-release", {"chart": "kueue", "repositoryOpts": {"repo": "oci://registry.k8s.io/kueue/charts"}}),
        on="kueue-release",
        says="classic index.yaml repository",
    ),
    fires(
        "helm-chart-locatable",
        "oci-chart-with-repository",
        at("kueue-release", {"repositoryOpts": {"repo": "https://example.com/charts"}}),
        on="kueue-release",
        says="allowed: the OCI reference alone",
    ),
]

QUEUE = "volcano-queue-students"
CONTROLLER_CASES += [
    *compliant("volcano-queue-admitted", "onprem"),
    fires(
        "volcano-queue-admitted",
        "guarantee-without-deserved",
        at(QUEUE, {"spec.guarantee": {"resource": {"cpu": "1"}}}),
        on=QUEUE,
        says="Volcano's queue webhook refuses it: spec.deserved.cpu: deserved[cpu] must be >= guarantee[cpu]=1",
        stack="onprem",
    ),
    fires(
        "volcano-queue-admitted",
        "deserved-above-capability",
        at(QUEUE, {"spec.deserved": {"cpu": "100000"}}),
        on=QUEUE,
        says="Volcano's queue webhook refuses it: spec.deserved.cpu: deserved[cpu] must be <= capability[cpu]",
        stack="onprem",
    ),
]

CONTROLLER_CASES += [
    *compliant("kueue-preemption-enforced", "prod"),
    fires(
        "kueue-preemption-enforced",
        "borrow-guard-under-fair-sharing",
        at("kueue-clusterqueue-serving", {"spec.preemption.borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 30000}}),
        on="kueue-clusterqueue-serving",
        says="ClusterQueue serving sets borrowWithinCohort 'LowerPriority', which Kueue ignores under fair sharing",
    ),
]

KUEUE_CONFIG = "values.managerConfig.controllerManagerConfigYaml"


def kueue_config_edit(**changes: object) -> Edit:
    """Change keys of Kueue's manager configuration inside the release values (None deletes a key)."""

    def edit(res: list[Resource]) -> list[Resource]:
        release = next(r for r in res if r.name == "kueue-release")
        values = release.inputs["values"]["managerConfig"]
        config = yaml.safe_load(values["controllerManagerConfigYaml"])
        for key, value in changes.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        values["controllerManagerConfigYaml"] = yaml.safe_dump(config)
        return res

    return edit


SERVING_RB = "tenant-serving-rolebinding-serving-oncall"
CONTROLLER_CASES += [
    *compliant("tenant-workloads-managed", "prod"),
    fires(
        "tenant-workloads-managed",
        "jobs-without-queue-name-unmanaged",
        kueue_config_edit(manageJobsWithoutQueueName=False),
        on="kueue-release",
        says="manageJobsWithoutQueueName is off",
    ),
    fires(
        "tenant-workloads-managed",
        "pod-integration-without-selector",
        kueue_config_edit(managedJobsNamespaceSelector=None),
        on="kueue-release",
        says="cannot be empty when pod integration is enabled",
    ),
    fires(
        "tenant-workloads-managed",
        "no-deployment-integration",
        kueue_config_edit(integrations={"frameworks": ["batch/job", "pod"]}),
        on="kueue-release",
        says="integrations.frameworks lacks deployment, statefulset: those kinds run unmanaged in tenant namespaces",
    ),
    *compliant("tenant-priority-restricted", "prod"),
    fires(
        "tenant-priority-restricted",
        "no-policy",
        drop("platform-priority-policy"),
        on="tenant-serving-namespace",
        says="any PriorityClass is usable there",
    ),
    fires(
        "tenant-priority-restricted",
        "audit-only-binding",
        at("platform-priority-policy-binding", {"spec.validationActions": ["Audit"]}),
        on="tenant-serving-namespace",
        says="no ValidatingAdmissionPolicy bound with Deny checks pod priorityClassName and Kueue Workload priorityClassRef",
    ),
    *compliant("platform-netpols-protected", "prod"),
    silent("platform-netpols-protected", "builtin-edit-guarded", at(SERVING_RB, {"roleRef.name": "edit"})),
    # The issue-17 regression: pods checked, Workloads not; a Job's template priority is admitted by Kueue.
    fires(
        "tenant-priority-restricted",
        "pods-only",
        at("platform-priority-policy", {"spec.matchConstraints.resourceRules": [POD_RULE]}),
        on="tenant-serving-namespace",
        says="Kueue Workload priorityClassRef",
    ),
    fires("platform-netpols-protected", "no-guard", drop("platform-owned-policy"), on=SERVING_RB, says="a tenant could delete its default deny"),
    fires(
        "platform-netpols-protected",
        "guard-audit-only",
        at("platform-owned-policy-binding", {"spec.validationActions": ["Audit"]}),
        on=SERVING_RB,
        says="no ValidatingAdmissionPolicy bound with Deny",
    ),
    fires(
        "platform-netpols-protected",
        "guard-misses-delete",
        at("platform-owned-policy", {"spec.matchConstraints.resourceRules.0.operations": ["CREATE", "UPDATE"]}),
        on=SERVING_RB,
        says="grants 'gpu-platform-tenant', which writes NetworkPolicies, and no ValidatingAdmissionPolicy bound with Deny guards",
    ),
    fires(
        "platform-netpols-protected",
        "default-deny-unlabelled",
        at("tenant-serving-netpol-default-deny", {"metadata.labels": {"gpu-platform.io/tenant": "serving"}}),
        on="tenant-serving-netpol-default-deny",
        says="lacks gpu-platform.io/owner=platform",
    ),
]

RESEARCH_RB = "tenant-foundation-research-rolebinding-research-scientists"
LB_POLICY = "platform-load-balancers-policy"
CONTROLLER_CASES += [
    *compliant("tenant-load-balancers-guarded", "prod", "staging", "dev", "onprem"),
    fires("tenant-load-balancers-guarded", "no-policy", drop(LB_POLICY), on=SERVING_RB, says="refuses a NodePort Service"),
    fires(
        "tenant-load-balancers-guarded",
        "audit-only",
        at(f"{LB_POLICY}-binding", {"spec.validationActions": ["Audit"]}),
        on=RESEARCH_RB,
        says="no Deny-bound admission policy refuses a NodePort Service",
    ),
    # The CEL itself is evaluated: a validation that always passes lets the Classic ELB through.
    fires(
        "tenant-load-balancers-guarded",
        "class-not-checked",
        at(LB_POLICY, {"spec.validations.2.expression": "true"}),
        on=SERVING_RB,
        says="without the controller's class",
    ),
    fires(
        "tenant-load-balancers-guarded",
        "declaration-not-checked",
        at(LB_POLICY, {"spec.validations.1.expression": "true"}),
        on=RESEARCH_RB,
        says="declares no network.ingress.loadBalancers",
    ),
]

TENANT_ROLE = "platform-tenant-role"
LEGACY_RULE = {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs", "mpijobs"], "verbs": ["create", "get"]}
CONTROLLER_CASES += [
    *compliant("job-apis-served", "prod", "staging", "dev", "onprem"),
    fires(
        "job-apis-served",
        "jobset-release-dropped",
        drop("job-apis-jobset-release"),
        on="kueue-release",
        says="Kueue manages jobset.x-k8s.io/jobset but no release of the stack installs the jobset.x-k8s.io CRDs",
    ),
    fires(
        "job-apis-served",
        "role-grants-legacy-pytorchjobs",
        at(TENANT_ROLE, {"rules.0": LEGACY_RULE}),
        on=TENANT_ROLE,
        says="names kubeflow.org kinds, which no release of the stack serves",
    ),
]
