#!/usr/bin/env bash
# One sticky pull-request comment for the change gate: edit the comment that starts with the gate's
# marker (gpu_platform.change.report.MARKER), or create it once. Never touches another comment, the
# gate's earlier comments on other pull requests, or a person's comment that quotes the marker later on.
# Needs the GitHub CLI (`gh`) with GH_TOKEN, and GITHUB_REPOSITORY (owner/name) as Actions sets it.
set -euo pipefail
pr=${1:?usage: scripts/pr-comment.sh PR_NUMBER MARKDOWN_FILE}
body=${2:?usage: scripts/pr-comment.sh PR_NUMBER MARKDOWN_FILE}
repo=${GITHUB_REPOSITORY:?GITHUB_REPOSITORY (owner/name) is not set}
marker='<!-- gpu-platform-gate -->'
[ "$(head -n 1 "$body")" = "$marker" ] || { echo "$body does not start with $marker" >&2; exit 2; }
# GitHub caps a comment at 65536 characters: cut the body and say where the rest is.
limit=65000
if [ "$(wc -c < "$body")" -gt "$limit" ]; then
  cut_body=$(mktemp)
  head -c "$limit" "$body" > "$cut_body"
  printf '\n\n(cut at %s characters: the job summary has the whole report)\n' "$limit" >> "$cut_body"
  body=$cut_body
fi
# The first comment whose body starts with the marker, by a bot or anyone; --paginate walks every page.
id=$(gh api --paginate "repos/$repo/issues/$pr/comments" \
  --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)
if [ -n "$id" ]; then
  gh api --method PATCH "repos/$repo/issues/comments/$id" -F "body=@$body" > /dev/null
  echo "edited comment $id on #$pr"
else
  gh api --method POST "repos/$repo/issues/$pr/comments" -F "body=@$body" > /dev/null
  echo "created the gate's comment on #$pr"
fi
