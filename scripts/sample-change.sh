#!/usr/bin/env bash
# The sample pull request of docs/pr-comment.md, judged for real: prod's reserved H100 pool moved to
# p4de.24xlarge, a tenant's reserved quota cut from 8 to 4 GPUs, and a new Spot L4 pool with a quota.
# Copies infra/ and stacks/ into a scratch git repository (this clone is never touched), commits them
# as the base, makes the change and prints `check --base` in FORMAT (default markdown), the base
# commit shown as <base>. Exit: check's (1: the change has mandatory findings).
set -uo pipefail
format=${1:-markdown}
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r "$root/infra" "$root/stacks" "$scratch/"
cd "$scratch"
printf '.cache/\n__pycache__/\n*.egg-info/\n' > .gitignore
export GIT_AUTHOR_NAME=sample GIT_AUTHOR_EMAIL=sample@example.com GIT_COMMITTER_NAME=sample GIT_COMMITTER_EMAIL=sample@example.com
git init -q -b main && git add -A && git commit -qm base && git tag base
"$root/.venv/bin/python" - stacks/Pulumi.prod.yaml <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("instanceTypes: [p5.48xlarge]", "instanceTypes: [p4de.24xlarge]", 1)
spot = ("    - name: batch-l4-spot\n      workloadClass: batch\n      capacity: spot\n"
        "      instanceTypes: [g6.12xlarge, g6.24xlarge]\n      scaling: {min: 0, desired: 1, max: 4}\n")
text = text.replace("    - name: batch-l40s-ondemand\n", spot + "    - name: batch-l40s-ondemand\n", 1)
quota = "        - {pool: train-h100-reserved, gpus: 8, borrowingLimit: 8}\n        - {pool: batch-l40s-spot, gpus: 8}\n"
assert quota in text, "prod's foundation-research quotas moved: update scripts/sample-change.sh"
text = text.replace(quota, quota.replace("gpus: 8, borrowingLimit", "gpus: 4, borrowingLimit") + "        - {pool: batch-l4-spot, gpus: 8}\n")
open(path, "w").write(text)
PY
commit=$(git rev-parse HEAD | cut -c1-12)
"$root/.venv/bin/gpu-platform" check --config stacks/Pulumi.prod.yaml --base base --format "$format" | sed "s/$commit/<base>/g"
exit "${PIPESTATUS[0]}"
