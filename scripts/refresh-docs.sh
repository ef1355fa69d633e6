#!/usr/bin/env bash
# Regenerate the documentation's generated parts from the code: the configuration reference
# (docs/configuration.md), the rule tables (docs/policies.md), the benchmark table (docs/benchmarks.md,
# from benchmarks/results.yaml), every `<!-- output: COMMAND -->` block of README.md and docs/ (the
# command's real output), and schema/stack.schema.json. Tests fail when any of them drifts.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m tests.foundation.docs --write
# The editors' JSON Schema of stack files comes from the same models as the configuration reference.
.venv/bin/python -m gpu_platform.spec.schema --write
