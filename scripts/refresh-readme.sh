#!/usr/bin/env bash
# Old name of scripts/refresh-docs.sh (the reference moved from README.md to docs/); kept so existing
# habits and notes keep working.
exec "$(dirname "$0")/refresh-docs.sh" "$@"
