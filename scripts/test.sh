#!/usr/bin/env bash
# `make test`: the whole test suite, PostgreSQL included. When DAO_POSTGRES_URL
# names no server, starts a throwaway cluster on 127.0.0.1 for the run
# (scripts/setup.sh postgres, which installs Debian's postgresql when missing)
# and stops and removes it afterwards; POSTGRES=0 skips the PostgreSQL tests
# instead. The last line says which. Runs the library's tests, then the
# harness's (Benchmarks/Package.swift); expects both built
# (scripts/build-checked.sh [--package-path Benchmarks] --build-tests).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/throwaway-postgres.sh
if [ "${POSTGRES:-1}" != 0 ]; then
    throwaway_postgres
fi
status=0
"${SWIFT:-swift}" test --skip-build || status=$?
"${SWIFT:-swift}" test --package-path Benchmarks --skip-build || status=$?
if [ -n "${DAO_POSTGRES_URL:-}" ]; then
    echo "PostgreSQL: the tests ran against ${DAO_POSTGRES_URL}"
else
    echo "PostgreSQL: skipped (POSTGRES=0)"
fi
exit "$status"
