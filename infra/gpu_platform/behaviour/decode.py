"""Decoding a manifest into the API's Go types, as kube-apiserver does before any admission or validation.

`kubectl apply` sends JSON; the API server's serializer (k8s.io/apimachinery runtime/serializer/json, with
sigs.k8s.io/json on Go's encoding/json) unmarshals it into the kind's typed struct. A value of the wrong
JSON type fails the whole request: "json: cannot unmarshal string into Go struct field PodSpec.spec.containers
of type []v1.Container". Go's rules, per target type: a struct or map takes an object; a slice an array; a
string a string; an intN a number without fraction that fits N bits; a bool a bool; `null` leaves any field
at its zero value. Custom unmarshalers: resource.Quantity (pkg/api/resource/quantity.go `UnmarshalJSON`:
the string, or a bare number's text, through `ParseQuantity`) and intstr.IntOrString (util/intstr
`UnmarshalJSON`: a string, else an int32). Unknown fields are not judged here.

The types come from the API server's own OpenAPI for the stack's Kubernetes minor, as kubernetes-validate
bundles it (behaviour.ssa.openapi_definitions). Kinds served by CRDs (JobSet, TrainJob, PyTorchJob, MPIJob,
RayJob, RayCluster) are typed by `CRD_OUTLINES`: the fields the platform's explain reads, with the types of
the CRDs' OpenAPI at the lockfile's tags, their pod templates as core PodTemplateSpec.

`decoded()` also returns the object as the API server stores it: a Quantity written as a bare number is
held as its text (a Quantity serializes as a string), which is what admission's CEL then sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_platform.behaviour.apimachinery import parse_quantity
from gpu_platform.behaviour.ssa import openapi_definitions

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
BITS = {"int32": 32, "int64": 64}
# (group, kind) of the built-in kinds tenants submit -> OpenAPI definition.
BUILTIN = {
    ("", "Pod"): "io.k8s.api.core.v1.Pod",
    ("batch", "Job"): "io.k8s.api.batch.v1.Job",
    ("batch", "CronJob"): "io.k8s.api.batch.v1.CronJob",
    ("apps", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("apps", "StatefulSet"): "io.k8s.api.apps.v1.StatefulSet",
}
_REF = "#/$defs/"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF + name}


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": ["object", "null"], "properties": props}


def _arr(items: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": ["array", "null"], "items": items}


_STR = {"type": ["string", "null"]}
_BOOL = {"type": ["boolean", "null"]}
_INT32 = {"type": ["integer", "null"], "format": "int32"}
_TEMPLATE = _ref("io.k8s.api.core.v1.PodTemplateSpec")
_META = _ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
_REPLICA_SPECS = {"type": ["object", "null"], "additionalProperties": _obj(replicas=_INT32, template=_TEMPLATE, restartPolicy=_STR)}
_RAY_CLUSTER = _obj(
    headGroupSpec=_obj(template=_TEMPLATE, rayStartParams={"type": ["object", "null"], "additionalProperties": _STR}),
    workerGroupSpecs=_arr(_obj(groupName=_STR, replicas=_INT32, minReplicas=_INT32, maxReplicas=_INT32, numOfHosts=_INT32, template=_TEMPLATE)),
)
# What explain reads of each CRD kind (jobset api/jobset/v1alpha2 jobset_types.go; trainer pkg/apis/trainer/v1alpha1
# trainjob_types.go; kubeflow training-operator v1 pytorchjob_types.go, mpi-operator v2beta1; kuberay ray/v1
# rayjob_types.go, raycluster_types.go), each field with the Go type its CRD declares.
CRD_OUTLINES: dict[tuple[str, str], dict[str, Any]] = {
    ("jobset.x-k8s.io", "JobSet"): _obj(
        metadata=_META,
        spec=_obj(
            replicatedJobs=_arr(_obj(name=_STR, replicas=_INT32, template=_ref("io.k8s.api.batch.v1.JobTemplateSpec"))),
            network=_obj(enableDNSHostnames=_BOOL, subdomain=_STR, publishNotReadyAddresses=_BOOL),
        ),
    ),
    ("trainer.kubeflow.org", "TrainJob"): _obj(
        metadata=_META,
        spec=_obj(
            runtimeRef=_obj(name=_STR, kind=_STR, apiGroup=_STR),
            trainer=_obj(
                numNodes=_INT32,
                image=_STR,
                command=_arr(_STR),
                args=_arr(_STR),
                resourcesPerNode=_ref("io.k8s.api.core.v1.ResourceRequirements"),
            ),
            runtimePatches=_arr(
                _obj(
                    trainingRuntimeSpec=_obj(
                        template=_obj(spec=_obj(replicatedJobs=_arr(_obj(name=_STR, template=_obj(spec=_obj(template=_TEMPLATE))))))
                    )
                )
            ),
        ),
    ),
    ("kubeflow.org", "PyTorchJob"): _obj(metadata=_META, spec=_obj(pytorchReplicaSpecs=_REPLICA_SPECS)),
    ("kubeflow.org", "MPIJob"): _obj(metadata=_META, spec=_obj(mpiReplicaSpecs=_REPLICA_SPECS)),
    ("ray.io", "RayJob"): _obj(metadata=_META, spec=_obj(rayClusterSpec=_RAY_CLUSTER)),
    ("ray.io", "RayCluster"): _obj(metadata=_META, spec=_RAY_CLUSTER),
}


class _Walk:
    """One decode: the first errors found (at most `limit`), and the stored form being built."""

    def __init__(self, defs: Mapping[str, Any], strict_structs: bool, limit: int = 5):
        self.defs = defs
        self.errors: list[str] = []
        self.limit = limit
        self.strict_structs = strict_structs  # Go structs drop unknown fields; a CRD outline names only some

    def fail(self, path: str, value: Any, go_type: str) -> None:
        if len(self.errors) < self.limit:
            self.errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type {go_type}")

    def resolve(self, schema: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            name = ref[len(_REF) :]
            return name, self.defs.get(name, {})
        return None, schema

    def value(self, value: Any, schema: Mapping[str, Any], path: str, depth: int = 0) -> Any:
        """`value` as stored; records an error where Go's decoding would fail."""
        name, schema = self.resolve(schema)
        if depth > 64:
            return value
        if value is None:
            return _zero(name, schema)
        if name == QUANTITY:
            return self.quantity(value, path)
        if name == INT_OR_STRING:
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31):
                return value
            self.fail(path, value, "int32")
            return value
        types = schema.get("type")
        types = {types} if isinstance(types, str) else set(types or [])
        if "object" in types or "properties" in schema or "additionalProperties" in schema:
            if not isinstance(value, Mapping):
                self.fail(path, value, _go_type(name, schema, types))
                return value
            props = schema.get("properties") or {}
            extra = schema.get("additionalProperties")
            out = {}
            for key, item in value.items():
                here = f"{path}.{key}"
                sub = props.get(key) if isinstance(key, str) else None
                if sub is None and isinstance(extra, Mapping):
                    sub = extra
                if sub is None:
                    if not (self.strict_structs and props):  # a Go struct has no place for an unknown field
                        out[key] = _unstructured(item)
                    continue
                if item is None and props:
                    continue  # a null field keeps its zero value, which is not written back (omitempty)
                out[key] = self.value(item, sub, here, depth + 1)
            return out
        if "array" in types:
            if not isinstance(value, list):
                self.fail(path, value, _go_type(name, schema, types))
                return value
            items = schema.get("items") or {}
            return [self.value(item, items, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
        if "integer" in types:
            # kubectl turns YAML into JSON with Go's float formatting, so `8.0` arrives as `8`.
            bits = BITS.get(str(schema.get("format")), 64)
            whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            if isinstance(value, bool) or not whole or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                self.fail(path, value, f"int{bits}")
            return value
        if "number" in types:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.fail(path, value, "float64")
            return value
        if "boolean" in types and not isinstance(value, bool):
            self.fail(path, value, "bool")
        elif "string" in types and not isinstance(value, str):
            self.fail(path, value, "string")
        return value

    def quantity(self, value: Any, path: str) -> Any:
        """resource.Quantity UnmarshalJSON: a string or a bare number, through ParseQuantity; stored as its text."""
        text = value if isinstance(value, str) else _json_text(value)
        try:
            parse_quantity(text)
        except (ValueError, ArithmeticError):
            if len(self.errors) < self.limit:
                self.errors.append(f"{path}: quantities must match the regular expression '{QUANTITY_PATTERN}'")
            return value
        return text


def _zero(name: str | None, schema: Mapping[str, Any]) -> Any:
    """What `null` decodes to where a value is required (a list item, a map value): the type's zero value as stored."""
    if name == QUANTITY:
        return "0"  # quantity.go UnmarshalJSON: null is the zero Quantity
    if name == INT_OR_STRING:
        return 0
    types = schema.get("type")
    types = {types} if isinstance(types, str) else set(types or [])
    if "object" in types or "properties" in schema:
        return {}
    if "array" in types:
        return []
    if "integer" in types or "number" in types:
        return 0
    if "boolean" in types:
        return False
    if "string" in types:
        return ""
    return None


def _unstructured(value: Any) -> Any:
    """A value outside the typed fields, as apimachinery's unstructured JSON holds it.

    util/json `convertNumber`: an int64 where the number is one, else a float64.
    """
    if isinstance(value, Mapping):
        return {k: _unstructured(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unstructured(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return float(value)
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return f"bool {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {_json_text(value)}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _json_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value) if isinstance(value, (int, float)) else repr(value)


def _go_name(definition: str) -> str:
    """`io.k8s.api.core.v1.Container` -> `v1.Container`, as Go prints a type (package.Type)."""
    parts = definition.rsplit(".", 2)
    return ".".join(parts[-2:]) if len(parts) == 3 else definition


def _go_type(name: str | None, schema: Mapping[str, Any], types: set[str]) -> str:
    """The Go type a decoding error names (only computed when decoding fails)."""
    if name:
        return _go_name(name)
    if "array" in types:
        items = schema.get("items") or {}
        ref = items.get("$ref") if isinstance(items, Mapping) else None
        return "[]" + (_go_name(ref) if isinstance(ref, str) else "interface {}")
    if "additionalProperties" in schema:
        return "map[string]" + ("string" if (schema.get("additionalProperties") or {}).get("type") else "interface {}")
    return "struct"


def decoded(obj: Mapping[str, Any], minor: str) -> tuple[dict[str, Any], list[str]]:
    """(the object as the API server stores it, why decoding fails); kinds this module does not type pass unchanged."""
    type_meta = [
        f"json: cannot unmarshal {_json_type(obj[key])} into Go struct field TypeMeta.{key} of type string"
        for key in ("apiVersion", "kind")
        if obj.get(key) is not None and not isinstance(obj.get(key), str)
    ]
    if type_meta:  # apimachinery reads apiVersion and kind first, to pick the Go type
        return dict(obj), type_meta
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind = str(obj.get("kind", ""))
    defs = openapi_definitions(minor)
    if (group, kind) in BUILTIN:
        schema: Mapping[str, Any] = _ref(BUILTIN[(group, kind)])
    elif (group, kind) in CRD_OUTLINES:
        schema = CRD_OUTLINES[(group, kind)]
    else:
        return dict(obj), []
    walk = _Walk(defs, strict_structs=(group, kind) in BUILTIN)
    stored = walk.value(dict(obj), schema, kind)
    return (dict(stored) if isinstance(stored, Mapping) else dict(obj)), walk.errors
