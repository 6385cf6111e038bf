#!/usr/bin/env bash
# Runs the read-only mix at 1, 2, 4 and 8 clients with one build of the
# harness and appends its rows, under a variant's name, to
# results/oversubscribed-reads.csv (docs/CONCURRENCY.md, "More threads than
# cores"; scripts/doc-tables.py makes the table).
#
#   scripts/oversubscribed-reads.sh VARIANT BACKENDS [STORAGE_BENCH]
#
# VARIANT names the build ("adapter" for the tree as it is, or what a
# variant changed); BACKENDS is passed to --backends. Interleave the builds'
# runs: the machine's load moves between them.
set -euo pipefail
cd "$(dirname "$0")/.."
variant=${1:?variant name}
backends=${2:?backends}
bench=${3:-Benchmarks/.build/release/storage-bench}
out=results/oversubscribed-reads.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bench" load --mix ycsb-c --backends "$backends" --clients 1,2,4,8 --duration 3 --warmup 0.5 \
    --durability full --output "$tmp/run.csv" --no-progress > /dev/null
python3 - "$tmp/run.csv" "$out" "$variant" <<'PY'
import csv, os, sys
source, out, variant = sys.argv[1:]
rows = list(csv.DictReader(open(source)))
exists = os.path.exists(out)
with open(out, "a", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["variant"] + list(rows[0].keys()))
    if not exists:
        writer.writeheader()
    for row in rows:
        writer.writerow({"variant": variant, **row})
PY
