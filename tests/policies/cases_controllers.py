"""Cases of the rules that reproduce the Kubernetes controllers' own acceptance logic (issue 9).

Kept apart from cases.py so the controller rules' cases read together; cases.py appends them to CASES.
"""

from __future__ import annotations

import yaml

from gpu_platform_policies import Resource
from tests.policies.cases import Case, Edit, drop, set_in

L40S_PATCH = "pool-l40s-dev-l40s-01"
A100_MIG_PATCH = "pool-hgx-a100-mig-dgx-a100-01"
OPERATOR = "gpu-operator-release"

POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
CONTROLLER_CASES: list[Case] = [
    Case("sharing-modes-exclusive", "onprem-compliant", "onprem"),
    Case(
        "sharing-modes-exclusive",
        "cluster-wide-mixed-refuses-mps",
        "onprem",
        (set_in(OPERATOR, "values.mig.strategy", "mixed"),),
        L40S_PATCH,
        "not supported with MPS",
    ),
    Case(
        "sharing-modes-exclusive",
        "chart-default-single-hides-mig",
        "onprem",
        (set_in(OPERATOR, "values.mig", {}),),
        A100_MIG_PATCH,
        "no nvidia.com/mig-*",
    ),
]

DCGM = "gpu-operator-dcgm-metrics"
COMMA_IN_HELP = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\nDCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Reasons, a bitmask.\n"
CONTROLLER_CASES += [
    Case("dcgm-metrics-parse", "prod-compliant", "prod"),
    Case(
        "dcgm-metrics-parse",
        "comma-in-help",
        "prod",
        (set_in(DCGM, "data.dcgm-metrics.csv", COMMA_IN_HELP),),
        DCGM,
        "wrong number of fields",
    ),
    Case(
        "dcgm-metrics-parse",
        "unknown-field",
        "prod",
        (set_in(DCGM, "data.dcgm-metrics.csv", "DCGM_FI_DEV_GPU_TEMPERATURE, gauge, GPU temperature.\n"),),
        DCGM,
        "not a DCGM field",
    ),
]

CONTROLLER_CASES += [
    Case("helm-chart-locatable", "prod-compliant", "prod"),
    Case(
        "helm-chart-locatable",
        "oci-registry-as-repository",
        "prod",
        (set_in("kueue-release", "chart", "kueue"), set_in("kueue-release", "repositoryOpts", {"repo": "oci://registry.k8s.io/kueue/charts"})),
        "kueue-release",
        "classic index.yaml repository",
    ),
    Case(
        "helm-chart-locatable",
        "oci-chart-with-repository",
        "prod",
        (set_in("kueue-release", "repositoryOpts", {"repo": "https://example.com/charts"}),),
        "kueue-release",
        "OCI reference alone",
    ),
]

QUEUE = "volcano-queue-students"
CONTROLLER_CASES += [
    Case("volcano-queue-admitted", "onprem-compliant", "onprem"),
    Case(
        "volcano-queue-admitted",
        "guarantee-without-deserved",
        "onprem",
        (set_in(QUEUE, "spec.guarantee", {"resource": {"cpu": "1"}}),),
        QUEUE,
        "must be >= guarantee",
    ),
    Case(
        "volcano-queue-admitted",
        "deserved-above-capability",
        "onprem",
        (set_in(QUEUE, "spec.deserved", {"cpu": "100000"}),),
        QUEUE,
        "must be <= capability",
    ),
]

CONTROLLER_CASES += [
    Case("kueue-preemption-enforced", "prod-compliant", "prod"),
    Case(
        "kueue-preemption-enforced",
        "borrow-guard-under-fair-sharing",
        "prod",
        (set_in("kueue-clusterqueue-serving", "spec.preemption.borrowWithinCohort", {"policy": "LowerPriority", "maxPriorityThreshold": 30000}),),
        "kueue-clusterqueue-serving",
        "ignores under fair sharing",
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
    Case("tenant-workloads-managed", "prod-compliant", "prod"),
    Case(
        "tenant-workloads-managed",
        "jobs-without-queue-name-unmanaged",
        "prod",
        (kueue_config_edit(manageJobsWithoutQueueName=False),),
        "kueue-release",
        "manageJobsWithoutQueueName is off",
    ),
    Case(
        "tenant-workloads-managed",
        "pod-integration-without-selector",
        "prod",
        (kueue_config_edit(managedJobsNamespaceSelector=None),),
        "kueue-release",
        "cannot be empty when pod integration is enabled",
    ),
    Case(
        "tenant-workloads-managed",
        "no-deployment-integration",
        "prod",
        (kueue_config_edit(integrations={"frameworks": ["batch/job", "pod"]}),),
        "kueue-release",
        "deployment, statefulset",
    ),
    Case("tenant-priority-restricted", "prod-compliant", "prod"),
    Case("tenant-priority-restricted", "no-policy", "prod", (drop("platform-priority-policy"),), "tenant-serving-namespace", "any PriorityClass"),
    Case(
        "tenant-priority-restricted",
        "audit-only-binding",
        "prod",
        (set_in("platform-priority-policy-binding", "spec.validationActions", ["Audit"]),),
        "tenant-serving-namespace",
        "bound with Deny",
    ),
    Case("platform-netpols-protected", "prod-compliant", "prod"),
    Case("platform-netpols-protected", "builtin-edit-guarded", "prod", (set_in(SERVING_RB, "roleRef.name", "edit"),)),
    # The issue-17 regression: pods checked, Workloads not; a Job's template priority is admitted by Kueue.
    Case(
        "tenant-priority-restricted",
        "pods-only",
        "prod",
        (set_in("platform-priority-policy", "spec.matchConstraints.resourceRules", [POD_RULE]),),
        "tenant-serving-namespace",
        "Kueue Workload priorityClassRef",
    ),
    Case(
        "platform-netpols-protected",
        "no-guard",
        "prod",
        (drop("platform-owned-policy"),),
        SERVING_RB,
        "a tenant could delete its default deny",
    ),
    Case(
        "platform-netpols-protected",
        "guard-audit-only",
        "prod",
        (set_in("platform-owned-policy-binding", "spec.validationActions", ["Audit"]),),
        SERVING_RB,
        "no ValidatingAdmissionPolicy bound with Deny",
    ),
    Case(
        "platform-netpols-protected",
        "guard-misses-delete",
        "prod",
        (set_in("platform-owned-policy", "spec.matchConstraints.resourceRules.0.operations", ["CREATE", "UPDATE"]),),
        SERVING_RB,
        "writes NetworkPolicies",
    ),
    Case(
        "platform-netpols-protected",
        "default-deny-unlabelled",
        "prod",
        (set_in("tenant-serving-netpol-default-deny", "metadata.labels", {"gpu-platform.io/tenant": "serving"}),),
        "tenant-serving-netpol-default-deny",
        "lacks gpu-platform.io/owner=platform",
    ),
]
