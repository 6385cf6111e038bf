#!/usr/bin/env bash
# The LMDB damage test of `make torture` (Tests/CrashTests/CorruptionTests.swift,
# every damage of every file of an LMDB store, each opened and read in a child
# process) at several seeds, and each run's verdict counts, into
# results/lmdb-torture.txt. SEEDS and OUTPUT override. Needs a debug build with
# tests (bash scripts/build-checked.sh --build-tests).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS="${SEEDS:-1 2 3 4 11 12}"
OUTPUT="${OUTPUT:-results/lmdb-torture.txt}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
: > "$OUTPUT.tmp"
for seed in $SEEDS; do
    status=0
    STORAGE_TORTURE=1 STORAGE_TORTURE_SEED="$seed" STORAGE_TORTURE_BACKENDS=lmdb \
        swift test --skip-build --filter damagedFiles > "$log" 2>&1 || status=$?
    echo "seed $seed: exit status $status; $(grep 'damaged copies' "$log" || echo 'no summary (the run failed)')" >> "$OUTPUT.tmp"
done
mv "$OUTPUT.tmp" "$OUTPUT"
cat "$OUTPUT"
