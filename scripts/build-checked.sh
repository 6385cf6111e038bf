#!/usr/bin/env bash
# Builds with the given `swift build` arguments and fails when the compiler warns
# about the project's own sources (dependencies may warn; we may not).
set -euo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift build "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || exit "$status"
if grep -E "^$(pwd)/(Sources|Tests|Benchmarks|Examples)/.*: warning:" "$log" >/dev/null; then
  echo "build-checked: the project's sources have compiler warnings (above); fix them" >&2
  exit 1
fi
