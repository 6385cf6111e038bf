#!/usr/bin/env bash
# Counts the instructions of record-cost's operations under callgrind and
# prints them per record: the README way (Codable), hand-written
# FieldwiseRecord code and @StoredRecord, on every backend. The figures go to
# results/record-cost.csv, and `python3 scripts/doc-tables.py` puts them into
# docs/ARCHITECTURE.md.
#
#   bash scripts/record-cost.sh [--output results/record-cost.csv]
#                               [warehouses shelves items]
#
# Needs valgrind and objcopy (`bash scripts/setup.sh instructions`) before the release
# build, so that the callgrind client requests are compiled in.
set -euo pipefail
cd "$(dirname "$0")/.."
output="results/record-cost.csv"
sizes=()
while [ $# -gt 0 ]; do
    case "$1" in
        --output) output="$2"; shift 2 ;;
        *) sizes+=("$1"); shift ;;
    esac
done
swift build --package-path Benchmarks -c release --product record-cost >&2
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# valgrind cannot read the DWARF 5 the compiler writes; count a stripped copy.
binary="$out/record-cost"
objcopy --strip-debug "$(swift build --package-path Benchmarks -c release --show-bin-path)/record-cost" "$binary"
# Each variant in a process of its own.
for variant in readme hand macro; do
    SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --collect-atstart=no --dump-instr=no \
        --callgrind-out-file="$out/callgrind.out.%p" "$binary" "$variant" "${sizes[@]}" >&2 2>"$out/valgrind.log" || {
        cat "$out/valgrind.log" >&2
        exit 1
    }
done
mkdir -p "$(dirname "$output")"
python3 - "$out" "$output" "$(swift --version 2>&1 | head -1)" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" "${sizes[@]}" <<'PY'
import csv, glob, os, sys
out, output, swift, cpu = sys.argv[1:5]
sizes = (sys.argv[5:] + ["10", "10", "10"][len(sys.argv[5:]):])[:3]
rows = {}
for path in glob.glob(os.path.join(out, "callgrind.out.*")):
    desc = total = None
    with open(path) as f:
        for line in f:
            if line.startswith("desc: Trigger: Client Request: "):
                desc = line.split("Client Request: ", 1)[1].strip()
            elif line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    if desc and total is not None and not desc.startswith("warm-up/"):
        variant, backend, operation, records = desc.split("/")
        rows[(backend, operation, variant)] = (total, int(records))
if not rows:
    sys.exit("no callgrind dumps: was record-cost built with valgrind's headers?")
version = swift.split("version ")[1].split()[0] if "version " in swift else swift
with open(output, "w", newline="", encoding="utf-8") as handle:
    writer = csv.writer(handle)
    writer.writerow(["backend", "operation", "variant", "instructions", "records", "instructions_per_record",
                     "warehouses", "shelves", "items", "swift_version", "cpu"])
    for (backend, operation, variant), (total, records) in sorted(rows.items()):
        writer.writerow([backend, operation, variant, total, records, f"{total / records:.0f}", *sizes, version, cpu])
print("| backend | operation | README way (Codable) | hand-written FieldwiseRecord | @StoredRecord | macro ÷ hand | README ÷ hand |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for backend in ("sqlite", "lmdb", "json", "plist"):
    for operation in ("persist", "read-all", "read-by-id", "update"):
        cells = {v: rows.get((backend, operation, v)) for v in ("readme", "hand", "macro")}
        if None in cells.values():
            continue
        per = {v: total / records for v, (total, records) in cells.items()}
        print(f"| {backend} | {operation} | {per['readme']:,.0f} | {per['hand']:,.0f} | {per['macro']:,.0f} | "
              f"{per['macro'] / per['hand']:.3f} | {per['readme'] / per['hand']:.2f} |")
print(f"\n(instructions per record: warehouses, shelves and items each count as one record; written to {output})")
PY
