"""The offline engine: run the real program under Pulumi's mock engine and record every resource.

`pulumi up` and `gpu-platform plan` execute the same `program.main()`; here the resource monitor
is Pulumi's MockMonitor with a recorder, so no cloud, CLI or plugin is involved.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import mocks, rpc, settings

from gpu_platform.behaviour.wiring import urn_ref
from gpu_platform.federation import WORKER_COMPONENT
from gpu_platform.plan_ids import CLUSTER_SECURITY_GROUP, PLANNED_S3_PREFIX_LIST, planned_arn, planned_id, planned_ip
from gpu_platform.program import build, main, provider_modules
from gpu_platform.provenance import recorded
from gpu_platform.spec.models import PlatformSpec

PROJECT = "gpu-platform"


@dataclass(frozen=True)
class PlannedResource:
    """One registered resource: Pulumi type token, logical name, parent name and wire inputs."""

    type: str
    name: str
    parent: str | None
    inputs: dict[str, Any]
    ignore_changes: tuple[str, ...] = ()  # input paths a later `pulumi up` leaves as they are in the cloud
    depends_on: tuple[str, ...] = ()
    """Logical names of the resources this one waits for (`dependsOn`), as the engine receives them."""
    source: str | None = None
    """The stack key the program built this resource from (gpu_platform.provenance), e.g. `gpu-platform:nodePools[2]`."""
    refs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Input name -> the resources (behaviour.wiring.ref_key) whose outputs it was built from: the request's propertyDependencies."""
    replace_on_changes: tuple[str, ...] = ()
    """Input paths whose change replaces the resource instead of updating it (`replaceOnChanges`)."""
    delete_before_replace: bool = False
    secrets: tuple[str, ...] = ()
    """Inputs that are or hold a secret (pulumi.Output.secret): encrypted in the state, hidden in previews."""

    def to_json(self) -> dict[str, Any]:
        """The contract's JSON shape."""
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.inputs}


@dataclass
class Plan:
    """Every resource one run of the program registered, in registration order."""

    stack: str
    resources: list[PlannedResource] = field(default_factory=list)

    def of_type(self, type_token: str) -> list[PlannedResource]:
        """Resources of one Pulumi type token."""
        return [r for r in self.resources if r.type == type_token]

    def named(self, name: str) -> PlannedResource:
        """The resource with this logical name (KeyError when absent)."""
        for r in self.resources:
            if r.name == name:
                return r
        raise KeyError(name)

    def clusters(self) -> dict[str, str | None]:
        """Logical name -> the MultiKueue worker it is built for (its WorkerScope's name), None for the stack's own cluster."""
        parents = {r.name: r.parent for r in self.resources if r.type != WORKER_COMPONENT}
        workers = {r.name for r in self.resources if r.type == WORKER_COMPONENT}
        out: dict[str, str | None] = {}
        for name in parents:
            seen: set[str] = set()
            at: str | None = name
            while at is not None and at not in workers and at not in seen:
                seen.add(at)
                at = parents.get(at)
            out[name] = at if at in workers else None
        return out | {w: w for w in workers}

    def children(self, parent: str) -> list[PlannedResource]:
        """Direct children of a component."""
        return [r for r in self.resources if r.parent == parent]

    def tree(self) -> list[tuple[int, PlannedResource]]:
        """(depth, resource) in a stable order: each component followed by its children, by name."""
        by_parent: dict[str | None, list[PlannedResource]] = {}
        for r in self.resources:
            by_parent.setdefault(r.parent, []).append(r)
        out: list[tuple[int, PlannedResource]] = []

        def walk(parent: str | None, depth: int) -> None:
            for r in sorted(by_parent.get(parent, []), key=lambda x: (x.name, x.type)):
                out.append((depth, r))
                walk(r.name, depth + 1)

        walk(None, 0)
        seen = {id(r) for _, r in out}
        out += [(0, r) for r in sorted(self.resources, key=lambda x: (x.name, x.type)) if id(r) not in seen]
        return out

    def to_json(self) -> dict[str, Any]:
        """`{"stack", "resources": [...], "summary": {type: count}}`, in tree order."""
        summary: dict[str, int] = {}
        for r in self.resources:
            summary[r.type] = summary.get(r.type, 0) + 1
        resources = [r.to_json() for _, r in self.tree()]
        return {"stack": self.stack, "resources": resources, "summary": dict(sorted(summary.items()))}


_UNWRAPPED = [0]  # secret wrappers `_plain` has unwrapped so far


def _plain_inputs(inputs: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(the inputs made plain, the names of those that are or hold a secret: what Pulumi encrypts in the state)."""
    secret: list[str] = []
    for key, value in inputs.items():
        before = _UNWRAPPED[0]
        inputs[key] = _plain(value)
        if _UNWRAPPED[0] != before:
            secret.append(key)
    return inputs, tuple(secret)


def _plain(value: Any) -> Any:
    """Inputs as JSON-safe data: whole numbers as ints, resource references as their type's name.

    The dicts and lists MockMonitor has just deserialized are fresh and held by nothing else, so they
    are converted in place (copying them cost 0.11 s against 0.014 s for the generated 100-pool /
    200-tenant stack); any other mapping or sequence is copied.
    """
    kind = type(value)
    if kind is dict and value.get(rpc._special_sig_key) == rpc._special_secret_sig:
        # A secret input (pulumi.Output.secret) as MockMonitor hands it over: the value inside the wire format's
        # secret wrapper (pulumi/runtime/rpc.py). The plan holds only the engine's own fake values, and which inputs
        # were secret (`_secret_inputs` counts the unwrapping).
        _UNWRAPPED[0] += 1
        return _plain(value.get("value"))
    if kind is dict:
        for key, item in value.items():
            value[key] = _plain(item)
        return value
    if kind is list:
        for i, item in enumerate(value):
            value[i] = _plain(item)
        return value
    if kind is str or kind is bool or kind is int or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire format carries every number as a double
    if isinstance(value, (str, int, float)):  # subclasses (str enums) and fractional floats; None returned above
        return value
    if isinstance(value, Unknown):
        raise UnknownInputError
    urn = getattr(value, "urn", None)
    return f"<resource {type(value).__name__}>" if urn is not None else str(value)


class UnknownInputError(ValueError):
    """An input the dry run left unknown: built from an output the mock provider does not return."""


def _parent_name(urn: str) -> str | None:
    """Logical name of the parent, or None for resources directly under the stack."""
    if not urn:
        return None
    parts = urn.split("::")
    return None if parts[2].split("$")[-1] == "pulumi:pulumi:Stack" else parts[-1]


def auto_name(type_token: str, name: str) -> str:
    """The physical name the provider gives a resource the program does not name: logical name, dash, 7 hex.

    Pulumi's auto-naming (pulumi-terraform-bridge `tfbridge.AutoName` → `resource.NewUniqueHex(name + "-", 7, maxlen)`)
    appends 7 random hex digits; here they come from a hash, so plans stay byte-identical run to run.
    """
    return f"{name}-{hashlib.sha256(f'{type_token}::{name}'.encode()).hexdigest()[:7]}"


def computed_outputs(type_token: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs the program reads back from resources, with recognisable fake values.

    `name` is what the provider reports: the given name, else the auto-name, so a reference such as
    a RolePolicyAttachment's `role` (the Role's `.name`) resolves in the plan as it does in AWS.
    Only these are returned, not an echo of every input: MockMonitor serializes whatever this returns
    and the SDK deserializes it into each resource's outputs, which for a 4,000-resource stack cost
    about as much again as registering the inputs, for values nothing reads.
    """
    out: dict[str, Any] = {}
    if type_token == "kubernetes:core/v1:Secret" and inputs.get("type") == "kubernetes.io/service-account-token":
        # A MultiKueue worker's token (k8s.multikueue): the token controller fills `data.token`, base64 as the API returns it.
        out["data"] = {"token": base64.b64encode(f"planned-token-{name}".encode()).decode()}
        return out
    if not type_token.startswith("aws:"):
        return out  # the program reads no other output of a Kubernetes object or provider
    out["name"] = inputs.get("name") or auto_name(type_token, name)
    out["arn"] = planned_arn(type_token, name)
    if type_token == "aws:eks/cluster:Cluster":
        out["endpoint"] = f"https://{name}.eks.mock"
        out["certificateAuthority"] = {"data": "bW9jaw=="}
        out["vpcConfig"] = {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": CLUSTER_SECURITY_GROUP}
    elif type_token == "aws:eks/nodeGroup:NodeGroup":
        out["nodeGroupName"] = inputs.get("nodeGroupName")
        out["resources"] = [{"autoscalingGroups": [{"name": f"eks-{inputs.get('nodeGroupName', name)}-mock"}]}]
    elif type_token == "aws:ec2/launchTemplate:LaunchTemplate":
        out["latestVersion"] = 1
    elif type_token == "aws:ec2/eip:Eip":
        out["publicIp"] = planned_ip(name)
    return out


PREFIX_LIST_READ = "aws:ec2/getPrefixList:getPrefixList"


def invoke_result(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """What the engine's mock answers a data-source read with: S3's prefix list (plan_ids), nothing else.

    The program reads one data source, `aws.ec2.get_prefix_list(name="com.amazonaws.<region>.s3")`, for the
    CIDRs of the tenants' `allow-s3` policy; its result type is pulumi_aws.ec2.GetPrefixListResult
    (`cidrBlocks`, `id`, `name`). The answer is PLANNED_S3_PREFIX_LIST for any region.
    """
    name = str(args.get("name") or "")
    if token == PREFIX_LIST_READ and re.fullmatch(r"com\.amazonaws\.[a-z0-9-]+\.s3", name):
        return {"cidrBlocks": list(PLANNED_S3_PREFIX_LIST), "id": "pl-0mock0s3", "name": name}
    return {}


def run_program(config: Mapping[str, Any], stack: str, spec: PlatformSpec | None = None) -> Plan:
    """Run `program.main()` for `stack` with `config` (namespaced keys) under the mock engine.

    `spec`: the same config already validated by the caller (`load_stack`), so it is not parsed twice.
    """
    plan = Plan(stack=stack)
    # Everything imported so far (the SDKs' thousands of classes and functions) lives for the whole
    # process; freezing it keeps the collector's full passes, which the registration of thousands of
    # resources triggers again and again, from walking it each time (CPython gc.freeze). The provider
    # modules the program will execute are loaded first (any attribute but the introspection ones runs
    # a lazy module, pulumi/_utils.py `_LazyModule`), or their ~70,000 functions, classes and
    # annotations would be walked by every full pass of the registration.
    for name in provider_modules(spec) if spec is not None else ():
        parts = name.split(".")
        for depth in range(2, len(parts) + 1):  # parents first: importing a child leaves a lazy parent unexecuted
            getattr(importlib.import_module(".".join(parts[:depth])), "__all__", None)
    gc.collect()
    gc.freeze()
    # MockMonitor.RegisterResource (pulumi/runtime/mocks.py) deserializes each request's inputs once and
    # hands them to `new_resource`; keeping them here saves deserializing every resource a second time.
    seen: dict[tuple[str, str], list[Any]] = {}

    class Recorder(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
            seen.setdefault((args.typ, args.name), []).append(args.inputs)
            return planned_id(args.name), computed_outputs(args.typ, args.name, args.inputs)

        def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
            return invoke_result(args.token, args.args), []  # MockMonitor.Invoke iterates the failures

    unknown: list[str] = []
    urns: set[str] = set()
    duplicates: list[str] = []

    class RecordingMonitor(mocks.MockMonitor):
        def RegisterResource(self, request: Any) -> Any:
            response = super().RegisterResource(request)
            if response.urn in urns:  # the engine refuses a second resource with one URN ("Duplicate resource URN")
                duplicates.append(response.urn)
            urns.add(response.urn)
            if request.type != "pulumi:pulumi:Stack":
                try:
                    inputs, secret = _plain_inputs(seen[(request.type, request.name)].pop(0))
                except UnknownInputError:
                    unknown.append(f"{request.type} {request.name}")
                    return response
                parent = _parent_name(request.parent or "")
                ignored = tuple(request.ignoreChanges)
                deps = tuple(sorted({urn.split("::")[-1] for urn in request.dependencies}))
                source = recorded(request.type, request.name)
                # The same map `pulumi preview` stores in state and hands a stack policy (PolicyResource.property_dependencies).
                refs = {k: tuple(sorted({urn_ref(u) for u in v.urns})) for k, v in request.propertyDependencies.items() if v.urns}
                planned = PlannedResource(
                    request.type,
                    request.name,
                    parent,
                    inputs,
                    ignored,
                    deps,
                    source,
                    refs,
                    tuple(request.replaceOnChanges),
                    bool(request.deleteBeforeReplace),
                    secret,
                )
                plan.resources.append(planned)
            return response

    recorder = Recorder()
    # A fresh root per run, so several stacks can be planned in one process (tests do).
    settings.ROOT.set(None)
    # Run as `pulumi preview` runs the program (a dry run), the step the gate's policy pack sees. Only then
    # does the SDK leave an output the provider did not return unknown, instead of deserializing every
    # resource's inputs back into its outputs (pulumi/runtime/rpc.py `resolve_outputs`, `is_dry_run`):
    # work the plan never reads, about 8 % of a 4,600-resource plan. An input built from such an output is
    # unknown in a dry run; `computed_outputs` returns every output the program reads, and a plan with an
    # unknown input is refused below rather than recorded.
    pulumi.runtime.set_mocks(recorder, project=PROJECT, stack=stack, preview=True, monitor=RecordingMonitor(recorder))
    pulumi.runtime.set_all_config({str(k): v if isinstance(v, str) else json.dumps(v) for k, v in config.items()})

    # With a validated spec, the program's body itself is the test function (`main` would only pass the spec
    # on): the SDK walks the whole Python stack below every resource it registers and turns each frame into
    # a source position (pulumi/runtime/resource.py `_get_stack_trace`), so two fewer frames under the
    # program are two fewer per resource.
    if spec is not None:
        pulumi.runtime.test(build)(spec)
    else:
        pulumi.runtime.test(main)()
    if duplicates:
        raise RuntimeError(f"the program registered {len(duplicates)} URN(s) twice, which `pulumi up` refuses: {', '.join(sorted(duplicates)[:5])}")
    if unknown:
        # A program defect, not a stack's: an input `pulumi preview` would show as "(known after apply)".
        raise RuntimeError(
            f"the program built inputs of {len(unknown)} resource(s) from outputs the offline engine does not provide "
            f"(add them to gpu_platform.engine.computed_outputs): {', '.join(sorted(unknown)[:5])}"
        )
    # Registration order is asynchronous; everything downstream (check, render, JSON) gets a stable order.
    plan.resources = [r for _, r in plan.tree()]
    return plan
