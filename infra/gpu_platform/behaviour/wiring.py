"""Which resource a reference input names: by Pulumi's property dependencies, as a real preview shows them.

A rule that follows a reference (a rule's `securityGroupId`, a node group's `subnetIds`, an association's
`routeTableId`) cannot compare id strings: on a deployed stack they are AWS's ids, which no resource's own
inputs carry, and on a first preview every id is unknown and reads alike. What every runner does have is
the map Pulumi records for each input: the resources whose outputs it was built from.

- SDK: the program's RegisterResourceRequest carries `propertyDependencies` (input name -> URNs; pulumi
  proto/pulumi/resource.proto), filled from the Outputs each input was built from.
- Engine: it keeps the map in state and hands it to stack policies (pkg/resource/deploy/step_generator.go,
  `AnalyzeResources`: `PropertyDependencies: v.PropertyDependencies`); pulumi_policy exposes it as
  `PolicyResource.property_dependencies`.
- Offline: the engine's recorder keeps the same map from the same request (gpu_platform.engine).

A resource is named by `ref_key(type, logical name)`: a VPC's subnet, route table and association may share
one logical name. The group EKS creates for a cluster is named by the cluster resource, whose output
`vpcConfig.clusterSecurityGroupId` it is read from.

Limits, both only where the ids are not known yet (a first preview): a scalar built from one resource names
that resource, so a group id read from some other output of the cluster reads as the cluster's group (the
program reads no other; once deployed, the cluster's state shows its group's id and the two differ); and an
unknown element of a list stands for every dependency of the input no known element accounts for, so which
of a template's interfaces carries which group is judged once ids are known.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpu_platform.plan_ids import planned_id

# A value only known after apply, as the CrossGuard wrapper hands it to rules during `pulumi preview`
# (every such value alike): an identity the rules cannot compare, not a name or id to match.
UNKNOWN = "<computed>"


def ref_key(type_token: str, name: str) -> str:
    """How a resource is named in `refs`: type token and logical name (`aws:ec2/subnet:Subnet::network-private-us-east-1a`)."""
    return f"{type_token}::{name}"


def urn_ref(urn: str) -> str:
    """The ref_key of a URN (`urn:pulumi:<stack>::<project>::<parent types$>type::<name>`)."""
    _, _, qualified, name = urn.split("::", 3)
    return ref_key(qualified.rsplit("$", 1)[-1], name)


EKS_CLUSTER = "aws:eks/cluster:Cluster"
# Inputs that hold security-group ids (rules, launch templates): the only ones where a value built from the
# cluster may be its cluster security group.
GROUP_INPUTS = frozenset(
    {"securityGroupId", "referencedSecurityGroupId", "sourceSecurityGroupId", "vpcSecurityGroupIds", "securityGroupIds", "networkInterfaces"}
)


def label(identity: str) -> str:
    """An identity as a user reads it: a resource's logical name (a cluster's for the group EKS made for it), or the id."""
    if "::" not in identity:
        return identity
    type_token, name = identity.rsplit("::", 1)
    return f"{name}'s cluster security group" if type_token == EKS_CLUSTER else name


def _items(value: Any) -> list[Any]:
    """A list input as a list: a whole list unknown during preview is one unknown element."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _refs(r: Any) -> Mapping[str, tuple[str, ...]]:
    """A resource's property dependencies; none for one built without them (a hand-made test resource)."""
    return getattr(r, "refs", None) or {}


class _Follows:
    """What Wiring and ByValue share: whether an input, scalar or list, names an identity."""

    def target(self, r: Any, key: str) -> str | None:
        """The identity a scalar reference input names."""
        raise NotImplementedError

    def targets(self, r: Any, key: str, values: Any = None) -> tuple[str, ...]:
        """The identities a list input names."""
        raise NotImplementedError

    def names(self, r: Any, key: str, identity: str) -> bool:
        """Whether reference input `key` (scalar or list) names `identity`."""
        value = r.inputs.get(key)
        if isinstance(value, (list, tuple)):
            return identity in self.targets(r, key)
        return self.target(r, key) == identity


class Wiring(_Follows):
    """Follows reference inputs to the resources they name, for any runner's plan.

    An identity is a resource's ref_key, or, for an id the plan does not create (an existing VPC's
    subnet from the stack file), the id itself. Ids a real preview knows are learned from scalar inputs
    built from exactly one resource (a rule's `securityGroupId` is its group's id), so a list element
    holding the same id is followed too; an element that is unknown, or an id two resources claim, stands
    for the input's dependencies no other element accounts for.
    """

    def __init__(self, plan: Iterable[Any]):
        plan = list(plan)
        self.resources: dict[str, Any] = {ref_key(r.type, r.name): r for r in plan}
        learned: dict[str, str | None] = {}
        for r in plan:
            for key, deps in _refs(r).items():
                value = r.inputs.get(key)
                if len(deps) != 1 or not isinstance(value, str) or value == UNKNOWN or self._other_cluster_output(key, deps[0], value):
                    continue
                if learned.setdefault(value, deps[0]) != deps[0]:
                    learned[value] = None  # two resources' inputs carry it: it names neither
        self._ids = learned

    def of(self, r: Any) -> str:
        """A resource's own identity."""
        return ref_key(r.type, r.name)

    def resource(self, identity: str | None, type_token: str | None = None) -> Any | None:
        """The planned resource an identity names (of this type, when given), or None (a literal id, or unknown)."""
        r = self.resources.get(identity or "")
        return r if r is not None and (type_token is None or r.type == type_token) else None

    def target(self, r: Any, key: str) -> str | None:
        """The identity a scalar reference input names; None when it is absent or cannot be known."""
        value = r.inputs.get(key)
        if value is None:
            return None
        deps = _refs(r).get(key, ())
        if len(deps) == 1 and not self._other_cluster_output(key, deps[0], value):
            return deps[0]
        if value == UNKNOWN:
            return None
        if str(value) in self._ids:
            return self._ids[str(value)]  # None when two resources claim it, as targets() reads it
        return str(value)

    def _other_cluster_output(self, key: str, dep: str, value: Any) -> bool:
        """Whether a security-group input built from an EKS cluster is known not to be its cluster security group.

        A deployed cluster's state shows the group's id (`vpcConfig.clusterSecurityGroupId`, an output); a
        different known value is some other output (a group listed in `vpcConfig.securityGroupIds`).
        """
        cluster = self.resources.get(dep)
        if key not in GROUP_INPUTS or cluster is None or cluster.type != EKS_CLUSTER or value == UNKNOWN:
            return False
        group = (cluster.inputs.get("vpcConfig") or {}).get("clusterSecurityGroupId")
        return isinstance(group, str) and group not in (UNKNOWN, value)

    def targets(self, r: Any, key: str, values: Any = None) -> tuple[str, ...]:
        """The identities a list input names (or `values`, a part of input `key`, like one interface's groups)."""
        items = _items(r.inputs.get(key) if values is None else values)
        deps = _refs(r).get(key, ())
        out: list[str] = []
        open_ = False
        for item in items:
            named = self._ids.get(str(item)) if item != UNKNOWN else None
            if named is not None:
                out.append(named)
            elif item == UNKNOWN or str(item) in self._ids:  # unknown, or an id two resources claim
                open_ = True
            elif deps and len(items) == 1 and len(deps) == 1 and not self._other_cluster_output(key, deps[0], item):
                out.append(deps[0])
            else:
                out.append(str(item))  # an id the plan does not create
        if open_:
            out += [d for d in deps if d not in out]
        return tuple(dict.fromkeys(out))


class ByValue(_Follows):
    """The offline engine's ids followed as text (plan_ids.planned_id): what journeys over the offline plan use.

    Same questions as Wiring; an identity is an id string.
    """

    def __init__(self, plan: Iterable[Any], id_of: Any = planned_id):
        self.id_of = id_of
        self.resources: dict[str, list[Any]] = {}
        for r in plan:
            self.resources.setdefault(id_of(r.name), []).append(r)

    def of(self, r: Any) -> str:
        """A resource's own id."""
        return str(self.id_of(r.name))

    def resource(self, identity: str | None, type_token: str | None = None) -> Any | None:
        """The planned resource with this id (of this type, when given)."""
        return next((r for r in self.resources.get(identity or "", []) if type_token is None or r.type == type_token), None)

    def target(self, r: Any, key: str) -> str | None:
        """The id a scalar reference input holds."""
        value = r.inputs.get(key)
        return None if value is None else str(value)

    def targets(self, r: Any, key: str, values: Any = None) -> tuple[str, ...]:
        """The ids a list input holds (or `values`, a part of it)."""
        return tuple(str(v) for v in _items(r.inputs.get(key) if values is None else values))


Ids = Wiring | ByValue


def refs_of(property_dependencies: Mapping[str, Sequence[Any]]) -> dict[str, tuple[str, ...]]:
    """`refs` from CrossGuard's PolicyResource.property_dependencies (input name -> PolicyResources)."""
    return {k: tuple(sorted({ref_key(d.resource_type, d.name) for d in deps})) for k, deps in property_dependencies.items() if deps}
