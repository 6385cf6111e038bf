#!/usr/bin/env bash
# What the LMDB adapter's check of the data file at open costs: `storage-bench
# open` on LMDB with its page walk (lmdb) and without it (lmdb-metapages), at
# stores of about 10 MB, 100 MB and 1 GB, into results/lmdb-open-check.csv,
# then rewrites the docs' tables made from it (scripts/doc-tables.py:
# lmdb-open, lmdb-open-walk). SIZES, ITERATIONS and OUTPUT override.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${SIZES:-500x100,4500x100,45000x100}"
ITERATIONS="${ITERATIONS:-5}"
OUTPUT="${OUTPUT:-results/lmdb-open-check.csv}"
bash scripts/build-checked.sh --package-path Benchmarks -c release --product storage-bench >&2
swift run --package-path Benchmarks -c release --skip-build storage-bench open --backends lmdb,lmdb-metapages \
    --sizes "$SIZES" --iterations "$ITERATIONS" --output "$OUTPUT"
python3 scripts/doc-tables.py
