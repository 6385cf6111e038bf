#!/usr/bin/env bash
# What the async form of a DAO call costs beside the synchronous one, counted
# by callgrind (instructions do not depend on the machine's load):
# `storage-bench async-cost` runs read-by-id and persist-single through the
# DAO, synchronous and awaited, each in a region of its own, one client, on a
# fresh store per backend; each region writes a callgrind dump holding every
# thread's instructions (the store's writer and reader threads and Swift's
# cooperative pool included). The figures go to results/async-cost.csv, and
# `python3 scripts/doc-tables.py` puts them into docs/CONCURRENCY.md.
#
#   bash scripts/async-cost.sh [--backends sqlite,lmdb] [--calls 200]
#                              [--dialogs 100] [--messages 10]
#                              [--output results/async-cost.csv]
#
# Needs a release build (built here) and valgrind with objcopy
# (`bash scripts/setup.sh instructions`). Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

backends="sqlite,lmdb"
calls=200
dialogs=100
messages=10
output="results/async-cost.csv"
while [ $# -gt 0 ]; do
    case "$1" in
        --backends) backends="$2"; shift 2 ;;
        --calls) calls="$2"; shift 2 ;;
        --dialogs) dialogs="$2"; shift 2 ;;
        --messages) messages="$2"; shift 2 ;;
        --output) output="$2"; shift 2 ;;
        *) echo "async-cost.sh: unknown argument $1" >&2; exit 64 ;;
    esac
done

for tool in valgrind objcopy; do
    command -v "$tool" >/dev/null || { echo "async-cost.sh: $tool is missing; run bash scripts/setup.sh instructions" >&2; exit 1; }
done
swift build --package-path Benchmarks -c release --product storage-bench >&2
binary="$(swift build --package-path Benchmarks -c release --show-bin-path)/storage-bench"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# valgrind cannot read the DWARF 5 of recent Swift toolchains; counts do not
# depend on debug information.
objcopy --strip-debug "$binary" "$work/storage-bench"
env -i PATH="$PATH" TMPDIR="${TMPDIR:-/tmp}" SWIFT_DETERMINISTIC_HASHING=1 \
    valgrind --tool=callgrind --collect-atstart=yes --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$work/cg.out" --log-file="$work/valgrind.log" \
    "$work/storage-bench" async-cost --backends "$backends" --calls "$calls" --dialogs "$dialogs" \
    --messages-per-dialog "$messages" --durability none > "$work/timed.csv"

mkdir -p "$(dirname "$output")"
python3 - "$work" "$output" "$calls" "$dialogs" "$messages" "$(swift --version 2>&1 | head -1)" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" <<'PYTHON'
import csv, glob, os, sys
work, output, calls, dialogs, messages, swift, cpu = sys.argv[1:8]
regions = {}
for path in glob.glob(os.path.join(work, "cg.out*")):
    name, ir, index = None, None, 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("desc: Trigger: Client Request: "):
                name = line[len("desc: Trigger: Client Request: "):].strip()
            elif line.startswith("events:"):
                events = line.split()[1:]
                index = events.index("Ir") if "Ir" in events else 0
            elif line.startswith("summary:") or line.startswith("totals:"):
                ir = int(line.split()[1 + index])
    if name and name.startswith("async-cost/") and ir is not None:
        _, backend, operation, api = name.split("/")
        regions[(backend, operation, api)] = regions.get((backend, operation, api), 0) + ir
if not regions:
    sys.exit("async-cost.sh: callgrind wrote no region dumps; see the valgrind log")
version = swift.split("version ")[1].split()[0] if "version " in swift else swift
with open(output, "w", newline="", encoding="utf-8") as handle:
    writer = csv.writer(handle)
    writer.writerow(["backend", "operation", "api", "calls", "instructions_per_call", "async_over_sync",
                     "dialogs", "messages_per_dialog", "durability", "swift_version", "cpu"])
    for (backend, operation, api) in sorted(regions, key=lambda k: (k[0], k[1], k[2] != "sync")):
        per_call = regions[(backend, operation, api)] / int(calls)
        sync = regions.get((backend, operation, "sync"))
        ratio = f"{regions[(backend, operation, api)] / sync:.3f}" if sync else ""
        writer.writerow([backend, operation, api, calls, f"{per_call:.0f}", ratio, dialogs, messages, "none",
                         version, cpu])
print(f"async-cost.sh: wrote {output}")
PYTHON
cat "$output"
