#!/usr/bin/env bash
# `make bench-server`: the server backends beside the embedded ones. Starts a
# throwaway PostgreSQL cluster with `scripts/setup.sh postgres` (or uses the
# server DAO_POSTGRES_URL names, and leaves it running), then runs, with
# DAO_POSTGRES_URL set:
#   storage-bench run $SERVER_BENCH_ARGS
#   storage-bench load $SERVER_LOAD_ARGS
#   storage-bench postgres-bulk $SERVER_BULK_ARGS
# and stops the cluster it started, also when a step fails. Each storage-bench
# run makes schemas of its own on the server and drops them, and nothing else.
# Expects a release build of storage-bench (make bench-release).
set -euo pipefail
cd "$(dirname "$0")/.."

bench="${SWIFT:-swift} run --package-path Benchmarks -c release --skip-build storage-bench"
source scripts/throwaway-postgres.sh
throwaway_postgres bench-server

status=0
# shellcheck disable=SC2086 # the argument lists are meant to split
$bench run ${SERVER_BENCH_ARGS:-} || status=$?
# shellcheck disable=SC2086
$bench load ${SERVER_LOAD_ARGS:-} || status=$?
# shellcheck disable=SC2086
$bench postgres-bulk ${SERVER_BULK_ARGS:-} || status=$?
exit "$status"
