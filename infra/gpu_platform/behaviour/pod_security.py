"""Pod Security admission, as kube-apiserver's PodSecurity plugin evaluates a pod (levels baseline and restricted).

Reproduces k8s.io/pod-security-admission/policy (the checks registered for version "latest", which
the 1.33 API server applies when the namespace label names no version): check_hostNamespaces.go,
check_privileged.go, check_capabilities_baseline.go, check_hostPathVolumes.go, check_hostPorts.go,
check_appArmorProfile.go, check_seLinuxOptions.go, check_procMount.go, check_seccompProfile_baseline.go,
check_sysctls.go, check_windowsHostProcess.go (baseline), plus check_restrictedVolumes.go,
check_allowPrivilegeEscalation.go, check_runAsNonRoot.go, check_runAsUser.go,
check_seccompProfile_restricted.go, check_capabilities_restricted.go (restricted).
Controllers' templates are checked like their pods (admission/admission.go EvaluatePod on the
PodTemplate of workload resources warns; the pod itself is then refused).
"""

from __future__ import annotations

from typing import Any

LEVELS = ("privileged", "baseline", "restricted")
LABEL = "pod-security.kubernetes.io/enforce"

# check_capabilities_baseline.go: capabilities_allowed_1_0
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
# check_sysctls.go: sysctls_allowed_1_32 (newest list)
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
}  # fmt: skip
# check_restrictedVolumes.go: the volume sources the restricted level allows.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"}


def pod_spec(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(pod metadata, pod spec) of a Pod, a workload's template or a CronJob's job template; None otherwise.

    pod-security-admission admission.go `DefaultPodSpecExtractor` knows resources, not kinds: pods and the
    core, `apps` and `batch` workloads. A `Job` of another group (Volcano's batch.volcano.sh) is not checked
    until its pods are created.
    """
    kind = obj.get("kind")
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    if group not in ("", "apps", "batch"):
        return None
    if kind == "Pod":
        return obj.get("metadata") or {}, obj.get("spec") or {}
    template = (obj.get("spec") or {}).get("jobTemplate", {}).get("spec", {}) if kind == "CronJob" else obj.get("spec") or {}
    if kind in (*WORKLOADS, "CronJob"):
        t = template.get("template") or {}
        return t.get("metadata") or {}, t.get("spec") or {}
    return None


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec.get("containers", []), *spec.get("ephemeralContainers", [])]


def _baseline(meta: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    out = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            out.append(f"host namespaces ({field}=true)")
    psc = spec.get("securityContext") or {}
    if (psc.get("windowsOptions") or {}).get("hostProcess"):
        out.append("hostProcess")
    if any(v.get("hostPath") is not None for v in spec.get("volumes", [])):
        out.append("hostPath volumes (" + ", ".join(v["name"] for v in spec["volumes"] if v.get("hostPath") is not None) + ")")
    for sysctl in psc.get("sysctls", []):
        if sysctl["name"] not in SAFE_SYSCTLS:
            out.append(f"forbidden sysctl {sysctl['name']}")
    profiles = [(psc.get("seccompProfile") or {}).get("type")]
    annotations = meta.get("annotations") or {}
    for key, value in annotations.items():
        if (
            key.startswith("container.apparmor.security.beta.kubernetes.io/")
            and value not in ("runtime/default",)
            and not value.startswith("localhost/")
        ):
            out.append(f"AppArmor profile {value}")
    for c in _containers(spec):
        sc = c.get("securityContext") or {}
        name = c["name"]
        if sc.get("privileged"):
            out.append(f"privileged container {name}")
        added = set((sc.get("capabilities") or {}).get("add", [])) - BASELINE_CAPABILITIES
        if added:
            out.append(f"container {name} adds capabilities {sorted(added)}")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            out.append(f"container {name} uses hostPort")
        if sc.get("procMount") not in (None, "Default"):
            out.append(f"container {name} procMount {sc['procMount']}")
        se = sc.get("seLinuxOptions") or {}
        if (
            se.get("type") not in (None, "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")
            or se.get("user")
            or se.get("role")
        ):
            out.append(f"container {name} seLinuxOptions {se}")
        profiles.append((sc.get("seccompProfile") or {}).get("type"))
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            out.append(f"container {name} AppArmor Unconfined")
    if "Unconfined" in profiles:
        out.append("seccompProfile Unconfined")
    return out


def _restricted(spec: dict[str, Any]) -> list[str]:
    out = []
    psc = spec.get("securityContext") or {}
    for v in spec.get("volumes", []):
        source = set(v) - {"name"}
        if not source <= RESTRICTED_VOLUMES:
            out.append(f"volume {v['name']} of type {sorted(source)}")
    for c in _containers(spec):
        sc = c.get("securityContext") or {}
        name = c["name"]
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"container {name} must set allowPrivilegeEscalation=false")
        if not sc.get("runAsNonRoot", psc.get("runAsNonRoot")):
            out.append(f"container {name} must set runAsNonRoot=true")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            out.append(f"container {name} runAsUser=0")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"container {name} must set seccompProfile RuntimeDefault or Localhost")
        caps = sc.get("capabilities") or {}
        if "ALL" not in caps.get("drop", []):
            out.append(f"container {name} must drop ALL capabilities")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"container {name} may add only NET_BIND_SERVICE")
    return out


def violations(obj: dict[str, Any], level: str) -> list[str]:
    """Why Pod Security at `level` refuses this pod (or the pods of this workload); empty when admitted."""
    found = pod_spec(obj)
    if found is None or level == "privileged":
        return []
    meta, spec = found
    out = _baseline(meta, spec)
    if level == "restricted":
        out += _restricted(spec)
    return out
