"""`gpu-platform check` end to end: repository stacks pass; broken copies fail naming rule and resource."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi_aws
import pytest
import yaml

import gpu_platform.aws.nodepools as nodepools
from gpu_platform.change.lines import key_line
from gpu_platform.cli import main
from gpu_platform_policies import RULES
from gpu_platform_policies.model import default_production
from tests.conftest import STACKS, stack_path, without_lines

Doc = dict[str, Any]


def run_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def broken_copy(tmp_path: Path, base: str, mutate: Callable[[Doc], None]) -> Path:
    doc = yaml.safe_load(stack_path(base).read_text())
    mutate(doc["config"])
    path = tmp_path / f"Pulumi.{base}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def pool(cfg: Doc, name: str) -> Doc:
    return next(p for p in cfg["gpu-platform:nodePools"] if p["name"] == name)


@pytest.mark.parametrize("name", STACKS)
def test_repository_stacks_have_no_mandatory_violation(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_check(capsys, "--config", str(stack_path(name)), "--format", "json")
    doc = json.loads(out)
    assert [v for v in doc["violations"] if v["level"] == "mandatory"] == []
    assert code == 0


def spot_only_training(cfg: Doc) -> None:
    for name in ("train-h100-reserved", "train-h100-ondemand", "train-h100-block"):
        p = pool(cfg, name)
        p["capacity"] = "spot"
        p.pop("reservation", None)


def quota_above_capacity(cfg: Doc) -> None:
    serving = next(t for t in cfg["gpu-platform:tenants"] if t["name"] == "serving")
    next(q for q in serving["quotas"] if q["pool"] == "infer-l4-ondemand")["gpus"] = 40


def chart_off_lockfile(cfg: Doc) -> None:
    cfg["gpu-platform:versions"] = {"charts": {"kueue": {"version": "0.18.0"}}}


def public_endpoint(cfg: Doc) -> None:
    cfg["gpu-platform:cluster"]["endpointPublicAccess"] = True
    cfg["gpu-platform:cluster"].pop("publicAccessCidrs", None)


BROKEN_STACKS = {
    "spot-only-production-training": ("prod", spot_only_training, "production-capacity-floor", "pool-train-h100-block-ng"),
    "chart-not-the-lockfile-version": ("prod", chart_off_lockfile, "charts-pinned", "kueue-release"),
    "public-prod-endpoint": ("prod", public_endpoint, "eks-endpoint-restricted", "cluster-eks"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_STACKS))
def test_broken_stack_fails_naming_rule_and_resource(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, mutate, rule, resource = BROKEN_STACKS[case]
    path = broken_copy(tmp_path, base, mutate)
    code, out, err = run_check(capsys, "--config", str(path))
    assert code == 1, err
    line = next((line for line in out.splitlines() if f"{rule}:" in line), None)
    assert line is not None and "mandatory" in line, out
    assert f"\n{resource}\n" in out, f"{resource} not a heading of the text report:\n{out}"


def test_quota_above_its_pool_is_bad_input_for_check_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The spec's cross-check refuses it before any rule runs (as plan does): exit 2, one line, in the GPUs the user wrote."""
    path = broken_copy(tmp_path, "prod", quota_above_capacity)
    code, _, err = run_check(capsys, "--config", str(path))
    assert code == 2
    assert without_lines(err).strip().splitlines() == [
        f"{path}: gpu-platform:tenants[2].quotas[3].gpus: quotas on pool 'infer-l4-ondemand' add up to 40 GPUs (serving 40) but the pool has"
        " 12 GPUs at max size (12 nodes x 1 GPU); allowed: at most 12 GPUs in all on 'infer-l4-ondemand': lower the quotas or raise"
        " gpu-platform:nodePools[5].scaling.max"
    ]


def test_untainted_gpu_pool_from_a_broken_program(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A program change that drops the GPU taint is caught before rollout."""
    monkeypatch.setattr(nodepools, "node_taints", lambda pool: [])
    code, out, _ = run_check(capsys, "--config", str(stack_path("staging")), "--format", "json")
    hits = {(v["policy"], v["resource"]) for v in json.loads(out)["violations"] if v["level"] == "mandatory"}
    assert ("gpu-pool-tainted", "pool-train-a100-ng") in hits
    assert code == 1


def test_optional_imds_tokens_from_a_broken_program(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = pulumi_aws.ec2.LaunchTemplateMetadataOptionsArgs

    def optional_tokens(**kwargs: Any) -> Any:
        return real(**{**kwargs, "http_tokens": "optional"})

    monkeypatch.setattr(pulumi_aws.ec2, "LaunchTemplateMetadataOptionsArgs", optional_tokens)
    code, out, _ = run_check(capsys, "--config", str(stack_path("prod")), "--format", "github")
    assert code == 1
    # The program (not the stack) broke it: the annotation lands on the pool's entry, the key the launch template came from.
    line = key_line(stack_path("prod").read_text(), "gpu-platform:nodePools[0]")
    assert f",line={line},title=imdsv2-required::gpu-platform:nodePools[0]: metadataOptions.httpTokens is 'optional'" in out
    assert "(pool-train-h100-reserved-lt)" in out


def test_github_format_annotates_the_stack_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken_copy(tmp_path, "prod", spot_only_training)
    code, out, _ = run_check(capsys, "--config", str(path), "--format", "github")
    esc = str(path).replace(":", "%3A").replace(",", "%2C")
    # spot_only_training turns every training pool to Spot; the floor finding names the first of them, where the user wrote it.
    found = next(row for row in out.splitlines() if "title=production-capacity-floor::" in row)
    key = found.split("::")[2].split(": ")[0]
    assert found.startswith(f"::error file={esc},line=") and key.startswith("gpu-platform:nodePools["), found
    line = int(found.split(",line=")[1].split(",")[0])
    assert line == key_line(path.read_text(), key) and "workload class training" in found and "(pool-train-h100-block-ng)" in found
    assert "::warning " in out and "title=spot-exposure::" in out  # advisories are warnings, not errors
    assert code == 1


def test_advisories_alone_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_check(capsys, "--config", str(stack_path("dev")), "--format", "json")
    doc = json.loads(out)
    assert {(v["policy"], v["level"]) for v in doc["violations"]} == {("spot-exposure", "advisory")}
    assert set(doc["violations"][0]) >= {"policy", "level", "resource", "message"}
    assert code == 0


def test_stack_can_raise_an_advisory_to_mandatory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken_copy(tmp_path, "dev", lambda cfg: cfg.update({"gpu-platform:policy": {"enforcement": {"spot-exposure": "mandatory"}}}))
    code, out, _ = run_check(capsys, "--config", str(path))
    assert code == 1 and "mandatory  spot-exposure" in out


def test_stack_threshold_override_silences_the_advisory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken_copy(tmp_path, "dev", lambda cfg: cfg.update({"gpu-platform:policy": {"thresholds": {"max-spot-share-development": 0.9}}}))
    code, out, _ = run_check(capsys, "--config", str(path), "--format", "json")
    assert json.loads(out)["violations"] == [] and code == 0


def test_disabling_a_rule_lets_the_broken_stack_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def mutate(cfg: Doc) -> None:
        spot_only_training(cfg)
        # prod's own override (documentation-cidr advisory: its placeholder CIDR) stays.
        cfg["gpu-platform:policy"]["enforcement"].update({"production-capacity-floor": "disabled", "spot-exposure": "disabled"})

    code, out, _ = run_check(capsys, "--config", str(broken_copy(tmp_path, "prod", mutate)), "--format", "json")
    left = [(v["policy"], v["level"]) for v in json.loads(out)["violations"]]
    assert left == [("documentation-cidr", "advisory")] and code == 0


def test_unknown_rule_name_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken_copy(tmp_path, "dev", lambda cfg: cfg.update({"gpu-platform:policy": {"enforcement": {"spot-exposur": "advisory"}}}))
    code, out, err = run_check(capsys, "--config", str(path))
    assert code == 2 and out == "Stack dev: bad input, not checked (1 problem(s) on stderr)\n"
    assert without_lines(err).strip() == (
        f"{path}: gpu-platform:policy.enforcement.spot-exposur: unknown rule 'spot-exposur' (did you mean 'spot-exposure'?); "
        + err.split("; ", 1)[1].strip()
    )
    assert "allowed: " in err and "Traceback" not in err


def test_missing_stack_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_check(capsys, "--config", str(tmp_path / "Pulumi.nope.yaml"))
    assert code == 2 and "file not found" in err


def test_ansible_inventory_overriding_a_pinned_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A temp copy of the real inventories passes; the same copy with a literal driver branch fails on that file."""
    import shutil

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "ansible" / "inventories", tmp_path / "ansible" / "inventories")
    monkeypatch.setenv("GPU_PLATFORM_ROOT", str(tmp_path))
    code, out, _ = run_check(capsys, "--config", str(stack_path("prod")), "--format", "json")
    # prod's one advisory is its documentation-range placeholder CIDR (stack file, not inventories).
    assert code == 0 and [v["policy"] for v in json.loads(out)["violations"]] == ["documentation-cidr"]
    target = tmp_path / "ansible" / "inventories" / "prod" / "group_vars" / "gpu_nodes.yml"
    target.write_text(target.read_text() + '\nnvidia_driver_branch: "550"\n')
    code, out, _ = run_check(capsys, "--config", str(stack_path("prod")), "--format", "github")
    assert code == 1
    line = len(target.read_text().splitlines())  # the appended pin is the file's last line
    assert f"::error file=ansible/inventories/prod/group_vars/gpu_nodes.yml,line={line},title=ansible-no-version-override::" in out
    assert "nvidia_driver_branch sets '550'" in out


def test_custom_monitoring_namespace_passes_prod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The configuration reference documents `monitoring.namespace`; the tenant rules read the namespace labels the
    platform writes (k8s/objects.py `system_namespace`), so a custom name is not mistaken for a tenant."""
    path = broken_copy(tmp_path, "prod", lambda cfg: cfg.setdefault("gpu-platform:monitoring", {}).update(namespace="observability"))
    code, out, err = run_check(capsys, "--config", str(path), "--format", "json")
    doc = json.loads(out)
    assert [v for v in doc["violations"] if "observability" in v["message"]] == [], doc["violations"]
    assert code == 0, err


def test_platform_namespaces_carry_the_label_the_gate_reads() -> None:
    from gpu_platform.k8s.objects import system_namespace
    from gpu_platform_policies.view import LABEL_SYSTEM

    assert system_namespace("observability")["metadata"]["labels"][LABEL_SYSTEM] == "true"


def test_stack_versions_override_is_what_driver_rule_judges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An H200 pool on an AMI whose driver branch the stack overrides to 535 (H200 needs >= 550) fails the gate."""

    def h200_on_old_ami(cfg: Doc) -> None:
        cfg["gpu-platform:nodePools"].append(
            {
                "name": "train-h200",
                "workloadClass": "training",
                "capacity": "capacity-block",
                "instanceTypes": ["p5e.48xlarge"],
                "scaling": {"min": 0, "desired": 0, "max": 2},
                "reservation": {"id": "cr-0d1b2c3d4e5f6071b", "start": "2026-11-16", "end": "2027-05-17"},
                "availabilityZones": ["us-east-1a"],
            }
        )
        cfg["gpu-platform:versions"] = {"eks": {"ami_driver_branch": "535"}}

    code, out, _ = run_check(capsys, "--config", str(broken_copy(tmp_path, "prod", h200_on_old_ami)), "--format", "json")
    hits = [v for v in json.loads(out)["violations"] if v["policy"] == "driver-supports-gpu"]
    assert [v["resource"] for v in hits] == ["pool-train-h200-ng"], hits
    assert "the stack's versions override of eks.ami_driver_branch is 535" in hits[0]["message"]
    assert code == 1


@pytest.mark.parametrize(
    ("environment", "production"),
    [
        ("prod", True),
        ("production", True),
        ("prd", True),
        ("live", True),
        ("prod-eu", True),
        ("eu-west-prod", True),
        ("prod2", True),
        ("production_us", True),
        ("staging", False),
        ("dev", False),
        ("onprem", False),
        ("preprod", False),
        ("pre-prod", False),
        ("non-prod", False),
        ("product-demo", False),
    ],
)
def test_production_default_from_the_environment_name(environment: str, production: bool) -> None:
    """The documented default of policy.production (docs/configuration.md)."""
    assert default_production(environment) is production


def test_eu_prod_environment_gets_production_rules_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def mutate(cfg: Doc) -> None:
        spot_only_training(cfg)
        cfg["gpu-platform:environment"] = "eu-west-prod"

    code, out, _ = run_check(capsys, "--config", str(broken_copy(tmp_path, "prod", mutate)))
    assert "production: yes (default for environment 'eu-west-prod')" in out
    assert "production-capacity-floor:" in out and code == 1


def test_explicit_production_setting_wins_and_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken_copy(tmp_path, "dev", lambda cfg: cfg.update({"gpu-platform:policy": {"production": True}}))
    code, out, _ = run_check(capsys, "--config", str(path), "--format", "json")
    doc = json.loads(out)
    assert doc["gate"]["production"] is True and doc["gate"]["productionSource"] == "policy.production"
    assert any(v["policy"] == "production-capacity-floor" and v["level"] == "mandatory" for v in doc["violations"])
    assert code == 1
    path = broken_copy(tmp_path, "prod", lambda cfg: (spot_only_training(cfg), cfg.update({"gpu-platform:policy": {"production": False}})))
    code, out, _ = run_check(capsys, "--config", str(path))
    assert "production: no (policy.production)" in out
    assert "production-capacity-floor" not in out


def weakened_gate(cfg: Doc) -> None:
    spot_only_training(cfg)
    cfg["gpu-platform:policy"] = {
        "enforcement": {"production-capacity-floor": "disabled", "spot-exposure": "mandatory", "charts-pinned": "advisory"},
        "thresholds": {"max-spot-share-inference": 0.95},
    }


def test_disabled_and_changed_rules_are_printed_in_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_check(capsys, "--config", str(broken_copy(tmp_path, "prod", weakened_gate)))
    head = out.splitlines()[:5]
    idle = sum(line.startswith("  not applicable: ") for line in out.splitlines())  # rules with nothing to judge (no demand)
    assert idle and head[0].startswith(f"Stack prod: {len(RULES) - 1 - idle} of {len(RULES)} rules ({idle} not applicable), "), head
    assert "  disabled by the stack: production-capacity-floor" in head
    assert "  level changed by the stack: charts-pinned mandatory -> advisory, spot-exposure advisory -> mandatory" in head
    assert "  threshold changed by the stack: max-spot-share-inference 0.5 -> 0.95" in head


def test_disabled_and_changed_rules_are_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_check(capsys, "--config", str(broken_copy(tmp_path, "prod", weakened_gate)), "--format", "json")
    doc = json.loads(out)
    assert doc["gate"]["disabled"] == ["production-capacity-floor"]
    assert {"policy": "charts-pinned", "default": "mandatory", "level": "advisory"} in doc["gate"]["levels"]
    assert doc["gate"]["thresholds"] == [{"name": "max-spot-share-inference", "default": 0.5, "value": 0.95}]
    assert doc["summary"]["rulesRun"] == len(RULES) - 1 - doc["summary"]["notApplicable"] == len(RULES) - 1 - len(doc["gate"]["notApplicable"])


def test_disabled_and_changed_rules_are_annotated_on_github(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken_copy(tmp_path, "prod", weakened_gate)
    _, out, _ = run_check(capsys, "--config", str(path), "--format", "github")
    esc = str(path).replace(":", "%3A").replace(",", "%2C")
    notice = next(line for line in out.splitlines() if line.startswith("::notice "))
    assert notice.startswith(f"::notice file={esc},title=policy overrides::disabled by the stack: production-capacity-floor; level changed")
    assert "gpu-platform check: disabled by the stack: production-capacity-floor" in out


def test_every_format_points_at_the_key_the_user_wrote(capsys: pytest.CaptureFixture[str]) -> None:
    """dev's Spot share: the finding lands on `capacity: spot` of its first pool, in text, JSON, markdown and GitHub alike."""
    path = stack_path("dev")
    line = next(i for i, row in enumerate(path.read_text().splitlines(), 1) if row.strip() == "capacity: spot")
    where = f"{path}:{line} gpu-platform:nodePools[0].capacity"
    code, out, _ = run_check(capsys, "--config", str(path), "--format", "json")
    (v,) = json.loads(out)["violations"]
    assert code == 0
    assert (v["file"], v["line"], v["keyPath"], v["resource"]) == (str(path), line, "gpu-platform:nodePools[0].capacity", "pool-dev-l4-spot-ng")
    _, out, _ = run_check(capsys, "--config", str(path))
    assert "advisory   spot-exposure: development: 10 of 12 GPUs" in out and f"at {where}" in out
    _, out, _ = run_check(capsys, "--config", str(path), "--format", "markdown")
    assert f"| advisory | `spot-exposure` | `{where}` | `pool-dev-l4-spot-ng` |" in out
    _, out, _ = run_check(capsys, "--config", str(path), "--format", "github")
    esc = str(path).replace(":", "%3A").replace(",", "%2C")
    assert f"::warning file={esc},line={line},title=spot-exposure::gpu-platform:nodePools[0].capacity: development: 10 of 12" in out
