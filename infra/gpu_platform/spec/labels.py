"""Kubernetes label rules, as the API server and the kubelet apply them (Kubernetes 1.33).

- Keys: `IsQualifiedName` in `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go`: an
  optional DNS-1123 subdomain prefix (at most 253 characters) and `/`, then a name of at most 63
  characters matching `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
- Values: `IsValidLabelValue` in the same file: empty, or at most 63 characters of the same form.
- Node labels: the kubelet refuses `--node-labels` in the `kubernetes.io` and `k8s.io` domains (and their
  subdomains) unless `IsKubeletLabel` allows them (`cmd/kubelet/app/options/options.go`,
  `ValidateKubeletFlags`; `staging/src/k8s.io/kubelet/pkg/apis/well_known_labels.go`), so such a node
  never registers.
"""

from __future__ import annotations

import re

NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_MAX, PREFIX_MAX = 63, 253
KUBERNETES_DOMAINS = ("kubernetes.io", "k8s.io")
# well_known_labels.go: kubeletLabels and kubeletLabelNamespaces.
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)
KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KEY_ALLOWED = "allowed: [prefix/]name: prefix a lowercase DNS subdomain, name <= 63 letters, digits, '-', '_', '.' (alphanumeric at both ends)"
VALUE_ALLOWED = "allowed: empty, or <= 63 letters, digits, '-', '_', '.' (alphanumeric at both ends)"


def label_key_problem(key: str) -> str | None:
    """Why the API server would refuse `key` as a label key (None when valid)."""
    prefix, sep, name = key.rpartition("/")
    if sep and not prefix:
        return f"label key {key!r} has an empty prefix"
    if prefix and (len(prefix) > PREFIX_MAX or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"label key prefix {prefix!r} is not a lowercase DNS subdomain"
    if not name:
        return f"label key {key!r} has an empty name"
    if len(name) > NAME_MAX:
        return f"label key name {name!r} is {len(name)} characters"
    if not NAME.match(name):
        return f"label key name {name!r} has characters Kubernetes refuses"
    return None


def label_value_problem(value: str) -> str | None:
    """Why the API server would refuse `value` as a label value (None when valid)."""
    if value == "":
        return None
    if len(value) > NAME_MAX:
        return f"label value {value[:20]!r}... is {len(value)} characters"
    if not NAME.match(value):
        return f"label value {value!r} has characters Kubernetes refuses"
    return None


def kubelet_refuses(key: str) -> bool:
    """True when the kubelet refuses to register a node carrying this `--node-labels` key."""
    domain = key.split("/", 1)[0] if "/" in key else ""
    if not any(domain == d or domain.endswith("." + d) for d in KUBERNETES_DOMAINS):
        return False
    if key in KUBELET_LABELS:
        return False
    return not any(domain == ns or domain.endswith("." + ns) for ns in KUBELET_NAMESPACES)
