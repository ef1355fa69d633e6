#!/usr/bin/env bash
# The pull-request change gate: `gpu-platform check --base GIT_REF` for every stack in stacks/.
# Prints GitHub annotations (each change finding on the stack file line of the key that caused it) and
# appends each stack's markdown summary to MARKDOWN_FILE (the pull-request comment). Exit: the worst
# stack's code (0 pass, 1 a mandatory violation, 2 bad input).
# The base needs the target branch's history: check out with fetch-depth 0.
set -uo pipefail
shopt -s nullglob
base=${1:?usage: scripts/change-gate.sh GIT_REF [MARKDOWN_FILE]}
out=${2:-/dev/null}
cd "$(dirname "$0")/.."
status=0
# The gate's marker first: scripts/pr-comment.sh edits the comment that starts with it.
printf '<!-- gpu-platform-gate -->\n' > "$out"
# A stack file the change deletes is judged by nothing below (the loop sees only files that exist), yet its
# stack keeps running until someone destroys it: say so, and fail, so its owners decide (CODEOWNERS: /stacks/).
while IFS= read -r gone; do
  [ -n "$gone" ] || continue
  echo "::error file=$gone,title=stack-file-deleted::$gone is deleted: the gate judges nothing of it, and its stack still runs until 'pulumi destroy'; this needs its code owners' approval"
  printf '### %s deleted\n\nThe stack file is gone from this branch; its stack still runs until `pulumi destroy`. Needs its code owners.\n\n' "$gone" >> "$out"
  status=1
done < <(git diff --name-only --diff-filter=D "$base" -- 'stacks/Pulumi.*.yaml')
for file in stacks/Pulumi.*.yaml; do
  .venv/bin/gpu-platform check --config "$file" --base "$base" --format github || { code=$?; (( code > status )) && status=$code; }
  # The base plan is cached by the first run (.cache/gpu-platform/base-plans), so this one costs one plan.
  .venv/bin/gpu-platform check --config "$file" --base "$base" --format markdown >> "$out" || true
  printf '\n' >> "$out"
done
exit "$status"
