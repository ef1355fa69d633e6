"""Declared demand (a YAML file teams write) -> demand per class and GPU model, validated against its JSON Schema.

The schema (`data/demand.schema.json`) checks shape and ranges; this module adds what a schema cannot:
GPU models and MIG profiles against the catalog, and p50 <= p95 <= p99 <= peak.
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from itertools import pairwise
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from gpu_platform.catalog import Catalog
from gpu_platform.errors import ConfigError, Problem, did_you_mean, one_of
from gpu_platform.planning.demand import (
    ANY,
    DEFAULT_GPU,
    DEFAULT_SLA,
    MAX_HORIZON_GROWTH,
    SLAS,
    WORKLOAD_CLASSES,
    Demand,
    DemandGroup,
    Options,
    Sla,
)
from gpu_platform.planning.queueing import MAX_SERVERS, Requests, gpus_for, servers_for
from gpu_platform.pricing import load_commitments

KEYS = {
    "coverageTarget": "coverage_target",
    "spotCap": "spot_cap",
    "reservedDiscount": "reserved_discount",
    "spotDiscount": "spot_discount",
    "instrument": "instrument",
    "spotFallbackShare": "spot_fallback_share",
    "safetyStock": "safety_stock",
    "peakBuffer": "peak_buffer",
    "queueDelayHours": "queue_delay_hours",
    "gpuModels": "gpu_models",
}


@cache
def schema() -> dict[str, Any]:
    """The demand file's JSON Schema, shipped in the package."""
    return json.loads(resources.files("gpu_platform").joinpath("data/demand.schema.json").read_text())


def looks_like_declared(doc: Any) -> bool:
    """A YAML mapping with a `demand:` key."""
    return isinstance(doc, dict) and "demand" in doc


def _path(err: ValidationError) -> str:
    out = ""
    for part in err.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _schema_problem(err: ValidationError, file: str) -> Problem:
    """One schema error as a one-line problem naming the key and what is allowed."""
    path = _path(err)
    sub = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties":
        allowed = sorted((sub.get("properties") or {}).keys())
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        key = extra[0] if extra else "?"
        return Problem(file, f"{path}.{key}" if path else key, f"unknown key '{key}'{did_you_mean(key, allowed)}", one_of(allowed))
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else "?"
        return Problem(file, f"{path}.{missing}" if path else missing, "required key is missing", "set it in the demand file")
    if err.validator == "enum":
        return Problem(
            file,
            path,
            f"{err.instance!r} is not a valid choice{did_you_mean(str(err.instance), map(str, err.validator_value))}",
            one_of(map(str, err.validator_value)),
        )
    if err.validator == "type":
        return Problem(file, path, f"{err.instance!r} is not {_a(err.validator_value)}", f"allowed: {_a(err.validator_value)}")
    if err.validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[str(err.validator)]
        return Problem(file, path, f"{err.instance!r} is out of range", f"allowed: {op} {err.validator_value}")
    if err.validator == "pattern":
        return Problem(file, path, f"{err.instance!r} has the wrong format", f"allowed: text matching {err.validator_value}")
    if err.validator == "minItems":
        return Problem(file, path, "is empty", f"allowed: at least {err.validator_value} entry")
    return Problem(file, path, err.message, "see data/demand.schema.json")


def _a(kind: Any) -> str:
    return {
        "number": "a number",
        "integer": "an integer",
        "string": "text",
        "boolean": "true or false",
        "object": "a mapping",
        "array": "a list",
    }.get(str(kind), str(kind))


def mig_layout(profile: str, gpu: str, catalog: Catalog) -> tuple[str, int] | None:
    """The standard mig-parted config that packs the most `profile` slices on one `gpu`, and how many."""
    best = max(((n.get(profile, 0), name) for name, n in catalog.gpu(gpu).mig_configs.items()), default=(0, ""))
    return (best[1], best[0]) if best[0] else None


def _check_entry(e: dict[str, Any], at: str, file: str, catalog: Catalog) -> list[Problem]:
    out = []
    model = e.get("gpuModel", ANY)
    if model != ANY and model not in catalog.gpus:
        out.append(Problem(file, f"{at}.gpuModel", f"unknown GPU model '{model}'{did_you_mean(model, catalog.gpus)}", one_of([ANY, *catalog.gpus])))
        return out
    unit = e.get("unit", "gpus")
    if unit == "mig":
        if model == ANY or not catalog.gpu(model).supports_mig:
            mig = [g.name for g in catalog.gpus.values() if g.supports_mig]
            out.append(Problem(file, f"{at}.gpuModel", f"MIG slices need a MIG-capable GPU model, not '{model}'", one_of(mig)))
        elif "migProfile" not in e:
            out.append(Problem(file, f"{at}.migProfile", "required with unit: mig", one_of(catalog.gpu(model).mig_profiles())))
        elif mig_layout(e["migProfile"], model, catalog) is None:
            profiles = catalog.gpu(model).mig_profiles()
            out.append(
                Problem(
                    file,
                    f"{at}.migProfile",
                    f"{model} has no MIG profile '{e['migProfile']}'{did_you_mean(e['migProfile'], profiles)}",
                    one_of(profiles),
                )
            )
    elif unit == "shared" and "replicas" not in e:
        out.append(Problem(file, f"{at}.replicas", "required with unit: shared", "allowed: shares per physical GPU, 2..48"))
    if "requests" in e and e.get("sla", DEFAULT_SLA.get(e["class"], "batch")) not in ("online", "inference"):
        out.append(
            Problem(
                file,
                f"{at}.requests",
                f"request data given for {e['class']} demand with sla {e.get('sla', DEFAULT_SLA.get(e['class'], 'batch'))}",
                "allowed: only with sla online or inference (queues of jobs are sized by their wait target)",
            )
        )
    if unit != "mig" and "migProfile" in e:
        out.append(Problem(file, f"{at}.migProfile", f"given with unit: {unit}", "allowed: only with unit: mig"))
    for k in ("p50", "p95", "p99", "peak", "growthPerMonth", "leadTimeMonths", "interruptibleShare"):
        if isinstance(e.get(k), float) and not math.isfinite(e[k]):
            out.append(Problem(file, f"{at}.{k}", f"{e[k]} is not a finite number", "allowed: a finite number"))
    if out:
        return out
    grow = (1 + e.get("growthPerMonth", 0.0)) ** e.get("leadTimeMonths", 0.0)
    if grow > MAX_HORIZON_GROWTH:
        out.append(
            Problem(
                file,
                f"{at}.growthPerMonth",
                f"{e['growthPerMonth']:g} a month over {e.get('leadTimeMonths', 0):g} months multiplies demand by {grow:.3g}",
                f"allowed: at most x{MAX_HORIZON_GROWTH:g} to the horizon (a fraction: 0.05 is 5 % a month)",
            )
        )
    req = e.get("requests") or {}
    if isinstance(req, dict) and req.get("arrivalRate") and req.get("serviceTime"):
        load = float(req["arrivalRate"]) * float(req["serviceTime"])
        if load > MAX_SERVERS:  # Erlang C walks the servers one by one: the offered load bounds the time it takes
            out.append(
                Problem(
                    file,
                    f"{at}.requests",
                    f"arrivalRate x serviceTime offers {load:.3g} erlangs (concurrent requests)",
                    f"allowed: at most {MAX_SERVERS:,} (a rate in requests per second, a service time in seconds)",
                )
            )
    values = [(k, e[k]) for k in ("p50", "p95", "p99", "peak") if k in e]
    for (k1, v1), (k2, v2) in pairwise(values):
        if v1 > v2:
            out.append(Problem(file, f"{at}.{k2}", f"{v2} is below {k1} ({v1})", "allowed: p50 <= p95 <= p99 <= peak"))
    return out


def _share(e: dict[str, Any], catalog: Catalog) -> tuple[float, tuple[str, str | int] | None]:
    """Physical GPUs' worth of one unit of the entry, and the sharing its pool needs."""
    unit = e.get("unit", "gpus")
    if unit == "mig":
        found = mig_layout(e["migProfile"], e["gpuModel"], catalog)
        assert found is not None
        config, per_gpu = found
        return 1 / per_gpu, ("mig", config)
    if unit == "shared":
        return 1 / e["replicas"], ("time-slicing", e["replicas"])
    return 1.0, None


def declared_demand(doc: dict[str, Any], file: str, catalog: Catalog) -> Demand:
    """Validate a demand document and sum its entries per (class, GPU model) and per class."""
    problems = [
        _schema_problem(err, file) for err in sorted(Draft202012Validator(schema()).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    ]
    if problems:
        raise ConfigError(problems)
    planning = doc.get("planning") or {}
    for cls, gpu in (planning.get("gpuModels") or {}).items():
        if gpu not in catalog.gpus:
            problems.append(
                Problem(file, f"planning.gpuModels.{cls}", f"unknown GPU model '{gpu}'{did_you_mean(gpu, catalog.gpus)}", one_of(catalog.gpus))
            )
    entries = doc["demand"]
    for i, e in enumerate(entries):
        problems += _check_entry(e, f"demand[{i}]", file, catalog)
    if problems:
        raise ConfigError(problems)

    defaults = Options()
    kwargs: dict[str, Any] = {}
    for key, attr in KEYS.items():
        if key in planning:
            value = planning[key]
            base = getattr(defaults, attr)
            kwargs[attr] = {**base, **value} if isinstance(base, dict) else value
    if "instrument" in kwargs and "reserved_discount" not in kwargs:
        kwargs["reserved_discount"] = load_commitments().instrument(kwargs["instrument"]).discount
    opts = Options(**kwargs)

    buckets: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in entries:
        buckets.setdefault((e["class"], e.get("gpuModel", ANY)), []).append(e)
    groups = [
        _group(cls, model, members, opts, catalog)
        for (cls, model), members in sorted(buckets.items(), key=lambda kv: (WORKLOAD_CLASSES.index(kv[0][0]), kv[0][1]))
    ]
    totals = []
    for cls in WORKLOAD_CLASSES:
        mine = [g for g in groups if g.workload_class == cls]
        if not mine:
            continue
        totals.append(
            DemandGroup(
                workload_class=cls,
                gpu_model=ANY,
                p50=sum(g.p50 for g in mine),
                p95=sum(g.p95 for g in mine),
                p99=sum(g.p99 for g in mine),
                peak=sum(g.peak for g in mine),
                interruptible=any(g.interruptible for g in mine),
                interruptible_p95=sum(g.interruptible_p95 for g in mine),
                sla=_strictest([g.sla for g in mine]),
                growth_per_month=_weighted([(g.growth_per_month, g.p95) for g in mine]),
                lead_time_months=max(g.lead_time_months for g in mine),
                catalog_gpu=mine[0].catalog_gpu if len(mine) == 1 else "",
            )
        )
    notes = (
        ("declared quantiles of several teams are summed: that assumes their peaks coincide (conservative)",)
        if any(len(m) > 1 for m in buckets.values())
        else ()
    )
    return Demand(source=file, kind="declared", groups=tuple(groups), totals=tuple(totals), options=opts, notes=notes)


def _strictest(slas: list[Sla]) -> Sla:
    return min(slas, key=SLAS.index)


def _weighted(pairs: list[tuple[float, float]]) -> float:
    weight = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / weight if weight else 0.0


def _group(cls: str, model: str, members: list[dict[str, Any]], opts: Options, catalog: Catalog) -> DemandGroup:
    """Sum the entries of one (class, model) in physical GPUs' worth."""
    sums = dict.fromkeys(("p50", "p95", "p99", "peak", "spot"), 0.0)
    teams: dict[str, float] = {}
    spot_teams: set[str] = set()
    sharing = None
    request_gpus: float | None = None
    request_p95 = 0.0
    bases: list[str] = []
    for e in members:
        share, sharing_e = _share(e, catalog)
        if "requests" in e:
            q = e["requests"]
            grow = (1 + e.get("growthPerMonth", 0.0)) ** e.get("leadTimeMonths", 0.0)
            r = Requests(q["arrivalRate"] * grow, q["serviceTime"], q["targetWait"], q.get("percentile", 0.95), q.get("concurrency", 1))
            units = gpus_for(r)
            request_gpus = (request_gpus or 0.0) + units * share
            request_p95 += e["p95"] * share
            bases.append(
                f"{e['team']}: {r.arrival_rate:g} req/s x {r.service_time:g} s = {r.arrival_rate * r.service_time:.3g} erlangs, "
                f"{servers_for(r)} slots for P(wait > {r.target_wait:g} s) <= {1 - r.percentile:.0%}, {r.concurrency} per unit: {units} units"
            )
        sharing = sharing or sharing_e
        p99 = e.get("p99", e["p95"])
        values = {"p50": e["p50"], "p95": e["p95"], "p99": p99, "peak": e.get("peak", p99)}
        for k, v in values.items():
            sums[k] += v * share
        part = e.get("interruptibleShare", 1.0 if e.get("interruptible") else 0.0)
        sums["spot"] += e["p95"] * share * part
        if part > 0:
            spot_teams.add(e["team"])
        teams[e["team"]] = teams.get(e["team"], 0.0) + e["p95"] * share
    gpu = model if model != ANY else opts.gpu_models.get(cls, DEFAULT_GPU[cls])
    return DemandGroup(
        workload_class=cls,
        gpu_model=model,
        p50=sums["p50"],
        p95=sums["p95"],
        p99=sums["p99"],
        peak=sums["peak"],
        interruptible=sums["spot"] > 0,
        interruptible_p95=sums["spot"],
        interruptible_share=sums["spot"] / sums["p95"] if sums["p95"] > 0 else 0.0,
        sla=_strictest([e.get("sla", DEFAULT_SLA[cls]) for e in members]),
        growth_per_month=_weighted([(e.get("growthPerMonth", 0.0), e["p95"]) for e in members]),
        lead_time_months=max(e.get("leadTimeMonths", 0.0) for e in members),
        known_peak=any(e.get("knownPeak", False) for e in members),
        catalog_gpu=gpu,
        sharing=sharing,
        teams=teams,
        interruptible_teams=tuple(sorted(spot_teams)),
        request_gpus=request_gpus,
        request_p95=request_p95,
        request_basis="; ".join(bases),
    )


__all__ = ["declared_demand", "looks_like_declared", "mig_layout", "schema"]
