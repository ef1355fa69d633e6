"""Prove a speed change plans the same resources: dump every planned resource, then compare two dumps.

The dump is the plan's JSON (type, name, parent, inputs, in tree order) plus what the JSON leaves
out but `pulumi up` receives: each resource's `dependsOn` and `ignoreChanges`. Stacks: every file
in stacks/ and the generated 100 pools / 200 tenants stack the benchmark measures.
Usage:
  .venv/bin/python benchmarks/plan_identity.py dump DIR       (before and after the change, in two DIRs)
  .venv/bin/python benchmarks/plan_identity.py compare DIR_A DIR_B   (exit 1 on any byte difference)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import yaml
from generate_stack import generate

from gpu_platform.commands.plan import plan_stack

ROOT = Path(__file__).resolve().parents[1]
GENERATED = "gen-100x200"


def stack_files(tmp: Path) -> dict[str, Path]:
    """Stack name -> stack file: the repository's stacks and the generated benchmark stack."""
    files = {p.name.removeprefix("Pulumi.").removesuffix(".yaml"): p for p in sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))}
    generated = tmp / f"Pulumi.{GENERATED}.yaml"
    generated.write_text(yaml.safe_dump(generate(100, 200)))
    files[GENERATED] = generated
    return files


def dump(out: Path) -> None:
    """Write `<stack>.json` for every stack into `out`: the plan JSON plus dependsOn and ignoreChanges."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for stack, path in stack_files(Path(tmp)).items():
            plan = plan_stack(path, stack)
            doc = plan.to_json()
            doc["options"] = [
                {"name": r.name, "type": r.type, "dependsOn": list(r.depends_on), "ignoreChanges": list(r.ignore_changes)} for r in plan.resources
            ]
            text = json.dumps(doc, indent=2)
            (out / f"{stack}.json").write_text(text)
            print(f"{stack}: {len(plan.resources)} resources, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}")


def compare(a: Path, b: Path) -> int:
    """0 when every dump in `a` has a byte-identical twin in `b` (and the same set of stacks), else 1."""
    names_a, names_b = sorted(p.name for p in a.glob("*.json")), sorted(p.name for p in b.glob("*.json"))
    if not names_a or names_a != names_b:
        print(f"different stacks: {names_a} vs {names_b}")
        return 1
    failed = 0
    for name in names_a:
        same = (a / name).read_bytes() == (b / name).read_bytes()
        failed += not same
        print(f"{name}: {'identical' if same else 'DIFFERENT'}")
    return 1 if failed else 0


def main() -> int:
    """Command line: dump DIR | compare DIR_A DIR_B."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("dump").add_argument("dir", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    opts = parser.parse_args()
    if opts.command == "dump":
        dump(opts.dir)
        return 0
    return compare(opts.a, opts.b)


if __name__ == "__main__":
    raise SystemExit(main())
