"""`--demand FILE`: tell a trace CSV, a Prometheus export and a demand YAML apart by content, and read it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from gpu_platform.catalog import Catalog
from gpu_platform.errors import ConfigError, Problem
from gpu_platform.input_limits import DEMAND, check_size, check_yaml, not_a_file
from gpu_platform.planning.declared import declared_demand, looks_like_declared
from gpu_platform.planning.demand import Demand, Options
from gpu_platform.planning.prometheus import load_json, looks_like_prometheus, prometheus_demand
from gpu_platform.planning.trace import looks_like_trace, trace_demand
from gpu_platform.spec.models import PlatformSpec

KINDS = "a demand YAML (`demand:` list), an Alibaba GPU trace pod list CSV, or a Prometheus query_range JSON export"


def read_text(path: Path) -> str:
    """The file's text; ConfigError for a missing, unreadable or non-UTF-8 file."""
    file = str(path)
    why = not_a_file(path)
    if why is not None:
        raise ConfigError([Problem(file, "", why, f"allowed: {KINDS}")])
    check_size(path, DEMAND, f"allowed: {KINDS}")
    try:
        return path.read_text(encoding="utf-8-sig")  # a BOM (spreadsheet exports) is not part of the header
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(file, "", f"not UTF-8 text (byte {exc.start})", f"allowed: {KINDS}")]) from None
    except OSError as exc:
        raise ConfigError([Problem(file, "", f"cannot be read: {exc.strerror}", f"allowed: {KINDS}")]) from None


def load_demand(
    path: Path,
    catalog: Catalog,
    spec: PlatformSpec | None = None,
    stack_file: str = "",
    qos_class: Mapping[str, str] | None = None,
    gpu_map: Mapping[str, str] | None = None,
    class_gpu: Mapping[str, str] | None = None,
) -> Demand:
    """Demand from any supported input; which one is decided by what the file holds, not its name."""
    file = str(path)
    text = read_text(path)
    if not text.strip():
        raise ConfigError([Problem(file, "", "file is empty", f"allowed: {KINDS}")])
    history = Options(gpu_models={**Options().gpu_models, **(class_gpu or {})})
    if looks_like_trace(text):
        return trace_demand(text, file, qos_class=qos_class, gpu_map=gpu_map, options=history)
    first = text.splitlines()[0]
    if first.startswith("sn,") and "model" in first:
        raise ConfigError([Problem(file, "", "this is the trace's node list, not its pod list", "allowed: openb_pod_list_*.csv")])
    doc = load_json(text, file)
    if doc is not None and looks_like_prometheus(doc):
        return prometheus_demand(doc, file, spec, stack_file, catalog, history)
    if doc is None:
        check_yaml(text, file, DEMAND, f"allowed: {KINDS}")
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark else ""
            reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError([Problem(file, where, f"invalid YAML: {reason}", f"allowed: {KINDS}")]) from None
    if looks_like_declared(doc):
        return declared_demand(doc, file, catalog)
    kind = type(doc).__name__ if doc is not None else "nothing"
    raise ConfigError([Problem(file, "", f"not a demand input (found a {kind} without a `demand:` key)", f"allowed: {KINDS}")])
