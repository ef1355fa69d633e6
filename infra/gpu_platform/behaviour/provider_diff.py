"""What the providers do with a changed input: update in place, roll the nodes, or replace the resource.

Pulumi's bridged AWS provider (pulumi-aws, pinned in uv.lock) takes ForceNew from the upstream
terraform-provider-aws schema: a change to a ForceNew attribute is a replacement, any other change an
update. The node group and launch template behaviour below is read from that upstream source; the
Kubernetes provider replaces an object when its identity (kind, name, namespace) or one of a few
immutable fields changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"

# hashicorp/terraform-provider-aws internal/service/eks/node_group.go, resourceNodeGroup(): the schema
# attributes marked `ForceNew: true`, as Pulumi wire names (camelCase; launch_template.0.id -> launchTemplate.id).
NODE_GROUP_FORCE_NEW = (
    "amiType",
    "capacityType",
    "clusterName",
    "diskSize",
    "instanceTypes",
    "launchTemplate.id",
    "launchTemplate.name",
    "nodeGroupName",
    "nodeGroupNamePrefix",
    "nodeRoleArn",
    "remoteAccess",
    "subnetIds",
)
# Same file, resourceNodeGroupUpdate(): `d.HasChanges(launch_template, release_version, version)` calls
# UpdateNodegroupVersion, which replaces every node of the group (a rolling update under updateConfig);
# every other change goes to UpdateNodegroupConfig (labels, taints, scaling, updateConfig) and no node restarts.
NODE_GROUP_ROLLING = ("launchTemplate.version", "releaseVersion", "version", "forceUpdateVersion")

# terraform-provider-aws internal/service/ec2/ec2_launch_template.go, resourceLaunchTemplate(): only `name`
# and `name_prefix` are ForceNew; resourceLaunchTemplateUpdate() calls CreateLaunchTemplateVersion for any
# other change and, with update_default_version, makes it the default: the node group's
# launchTemplate.version then moves to it, which rolls the group (NODE_GROUP_ROLLING above).
LAUNCH_TEMPLATE_FORCE_NEW = ("name", "namePrefix")

# pulumi-kubernetes provider/pkg/provider/forcenew.go: metadataForceNewProperties (.metadata.name,
# .metadata.namespace) for every kind, plus the `forceNew` table's entries for kinds this program creates
# (RoleBinding .roleRef, which the API server also refuses to change; ResourceQuota .spec.scopes).
K8S_FORCE_NEW_ALL = ("metadata.name", "metadata.namespace", "apiVersion", "kind")
K8S_FORCE_NEW = {"RoleBinding": ("roleRef",), "ClusterRoleBinding": ("roleRef",), "ResourceQuota": ("spec.scopes",)}

Action = Literal["create", "update", "replace", "delete"]


@dataclass(frozen=True)
class Decision:
    """How the provider applies one resource's change: the action, the fields, and whether nodes roll."""

    action: Action
    fields: tuple[str, ...]
    replace_fields: tuple[str, ...] = ()
    rolls_nodes: bool = False


def changed_paths(before: Any, after: Any, path: str = "") -> list[str]:
    """Dotted paths of the inputs that differ; mappings compared key by key, lists and scalars as a whole."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            out += changed_paths(before.get(key), after.get(key), f"{path}.{key}" if path else str(key))
        return out
    return [] if before == after else [path or "<inputs>"]


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r + ".") for r in roots)


def decide(type_token: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> Decision | None:
    """The provider's action for inputs `before` -> `after` of one resource; None when nothing changed.

    Bridged AWS resources: terraform-plugin-sdk's schemaMap.Diff marks a change to a ForceNew attribute
    RequiresNew, which Pulumi shows as a replacement (NODE_GROUP_FORCE_NEW, LAUNCH_TEMPLATE_FORCE_NEW);
    node group rolls follow resourceNodeGroupUpdate(). Kubernetes: forceNewProperties() as cited above.
    """
    fields = tuple(changed_paths(before, after))
    if not fields:
        return None
    force: tuple[str, ...] = ()
    if type_token == NODE_GROUP:
        force = tuple(f for f in fields if _under(f, NODE_GROUP_FORCE_NEW))
    elif type_token == LAUNCH_TEMPLATE:
        force = tuple(f for f in fields if _under(f, LAUNCH_TEMPLATE_FORCE_NEW))
    elif type_token.startswith("kubernetes:"):
        # pulumi-kubernetes forceNewProperties(): a new name, namespace or kind is a new object; some kinds more.
        roots = K8S_FORCE_NEW_ALL + K8S_FORCE_NEW.get(str(after.get("kind", "")), ())
        force = tuple(f for f in fields if _under(f, roots))
    if force:
        return Decision("replace", fields, force, rolls_nodes=type_token == NODE_GROUP)
    rolls = type_token == NODE_GROUP and any(_under(f, NODE_GROUP_ROLLING) for f in fields)
    return Decision("update", fields, rolls_nodes=rolls)


def launch_template_versioned(type_token: str, decision: Decision | None) -> bool:
    """True when the change writes a new launch template version (an in-place update, not a replacement)."""
    return type_token == LAUNCH_TEMPLATE and decision is not None and decision.action == "update"
