#!/usr/bin/env bash
# `make bench-postgres`: `postgres` beside `postgres-raw` at make
# bench-smoke's size and settings (without instruction counts), written to
# results/postgres-smoke.csv, which docs/ARCHITECTURE.md's `postgres-ratios`
# table comes from (scripts/doc-tables.py). Runs on the server DAO_POSTGRES_URL
# names (left running), or on a throwaway cluster that `scripts/setup.sh
# postgres` starts and that is stopped afterwards, also when the run fails.
# The run makes schemas of its own on the server and drops them, and nothing
# else. Expects a release build of storage-bench (make bench-release).
set -euo pipefail
cd "$(dirname "$0")/.."

bench="${SWIFT:-swift} run --package-path Benchmarks -c release --skip-build storage-bench"
source scripts/throwaway-postgres.sh
throwaway_postgres bench-postgres
# shellcheck disable=SC2086 # the argument list is meant to split
$bench run ${POSTGRES_SMOKE_ARGS:-}
