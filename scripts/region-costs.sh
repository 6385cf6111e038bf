#!/usr/bin/env bash
# What an operation costs besides its instructions, per backend, in figures
# that do not depend on the machine's load: for each backend and durability,
#
#   1. one worker run natively with STORAGE_BENCH_REGION_USAGE set
#      (Benchmarks/Sources/StorageBenchKit/RegionUsage.swift): per timed region, the
#      bytes passed to write calls (wchar; with LMDB, the pages a commit
#      writes, 4096 bytes each, plus its meta page) and their number, page
#      faults, context switches, and user and system CPU time (the last two
#      do depend on the load: read them only from an idle machine);
#   2. one worker run under callgrind with its cache and branch simulation
#      (--cache-sim=yes --branch-sim=yes): per timed region, instructions
#      (Ir), first-level instruction and data misses (I1mr, D1mr, D1mw),
#      last-level misses (ILmr, DLmr, DLmw), conditional and indirect
#      branches mispredicted (Bcm, Bim). The dumps stay in the output
#      directory for callgrind_annotate.
#
#   bash scripts/region-costs.sh [options]
#     --backends lmdb,lmdb-raw   backends of storage-bench's registry
#     --dialogs 1000 --messages 100
#     --durability full,none
#     --operations persist,read-all,read-by-id,query,update
#                                (persist always runs; the operations after
#                                the last one named do not)
#     --no-simulation            skip the callgrind runs (they take minutes)
#     --caches "ARGS"            callgrind's cache geometry, e.g.
#                                "--I1=32768,8,64 --D1=32768,8,64 --LL=1048576,8,64"
#                                (default: what valgrind reads from the CPU;
#                                a virtual machine may report odd sizes)
#     --binary PATH              another storage-bench build (default: this
#                                checkout's release build)
#     --output DIR               keep the lines and dumps there (default: a
#                                temporary directory, removed at the end)
#
# Needs a release build (`swift build --package-path Benchmarks -c release --product storage-bench`);
# the callgrind runs need valgrind and objcopy (`bash scripts/setup.sh
# instructions`). The worker is started with the same job as `storage-bench
# run` gives it, one iteration, each operation run once.
set -euo pipefail
cd "$(dirname "$0")/.."

backends="lmdb,lmdb-raw"
dialogs=1000
messages=100
durabilities="full,none"
operations="persist,read-all,read-by-id,query,update"
simulate=1
output=""
binary=""
caches=""
while [ $# -gt 0 ]; do
    case "$1" in
    --backends) backends="$2"; shift 2 ;;
    --dialogs) dialogs="$2"; shift 2 ;;
    --messages) messages="$2"; shift 2 ;;
    --durability) durabilities="$2"; shift 2 ;;
    --operations) operations="$2"; shift 2 ;;
    --no-simulation) simulate=0; shift ;;
    --output) output="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --caches) caches="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

[ -n "$binary" ] || binary="$(swift build --package-path Benchmarks -c release --show-bin-path)/storage-bench"
if [ ! -x "$binary" ]; then
    echo "build it first: swift build --package-path Benchmarks -c release --product storage-bench" >&2
    exit 1
fi
if [ -z "$output" ]; then
    output="$(mktemp -d)"
    trap 'rm -rf "$output"' EXIT
else
    mkdir -p "$output"
fi
if [ "$simulate" = 1 ]; then
    # valgrind cannot read the DWARF 5 the compiler writes; run a stripped copy.
    objcopy --strip-debug "$binary" "$output/storage-bench-worker"
fi

job() {  # backend durability counts-instructions
    local ops
    ops="$(printf '"%s",' ${operations//,/ })"
    printf '{"backend":"%s","size":{"dialogs":%d,"messagesPerDialog":%d},"seed":42,"durability":"%s",' \
        "$1" "$dialogs" "$messages" "$2"
    printf '"operations":[%s],"round":0,"isWarmup":false,"countsInstructions":%s,' "${ops%,}" "$3"
    printf '"readRuns":1,"readRunSeconds":0,"minReadRuns":1,"eraseRuns":1,"eraseRunSeconds":0,'
    printf '"updateRuns":1,"updateRunSeconds":0}'
}

for durability in ${durabilities//,/ }; do
    for backend in ${backends//,/ }; do
        tag="$backend-$durability"
        echo "$tag: native run" >&2
        rm -f "$output/usage-$tag.txt"
        STORAGE_BENCH_REGION_USAGE="$output/usage-$tag.txt" SWIFT_DETERMINISTIC_HASHING=1 \
            "$binary" worker --job "$(job "$backend" "$durability" false)" >"$output/result-$tag.json"
        if [ "$simulate" = 1 ]; then
            echo "$tag: callgrind with cache and branch simulation" >&2
            rm -f "$output/callgrind-$tag".*
            (cd / && env -i SWIFT_DETERMINISTIC_HASHING=1 TMPDIR="${TMPDIR:-/tmp}" \
                valgrind --tool=callgrind --collect-atstart=yes --cache-sim=yes --branch-sim=yes $caches \
                --compress-strings=no --compress-pos=no --callgrind-out-file="$output/callgrind-$tag" \
                --log-file="$output/callgrind-$tag-valgrind.log" \
                "$output/storage-bench-worker" worker --job "$(job "$backend" "$durability" true)" \
                >"$output/result-sim-$tag.json")
        fi
    done
done

python3 - "$output" "$backends" "$durabilities" <<'PY'
import glob, os, sys
out, backends, durabilities = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")

def usage(tag):
    rows = {}
    path = os.path.join(out, f"usage-{tag}.txt")
    if not os.path.exists(path):
        return rows
    for line in open(path):
        fields = dict(part.split("=", 1) for part in line.split())
        op = fields.pop("operation")
        rows[op] = {k: int(v) for k, v in fields.items()}
    return rows

def simulation(tag):
    rows = {}
    for path in glob.glob(os.path.join(out, f"callgrind-{tag}.*")):
        if path.endswith(".log"):
            continue
        name, events, totals = None, None, None
        for line in open(path, errors="replace"):
            if line.startswith("desc: Trigger: Client Request: "):
                name = line.split("Client Request: ", 1)[1].strip()
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("totals:") or line.startswith("summary:"):
                totals = [int(x) for x in line.split()[1:]]
        if not name or name == "between-regions" or events is None or totals is None:
            continue
        sums = rows.setdefault(name, {})
        for event, value in zip(events, totals):
            sums[event] = sums.get(event, 0) + value
    return rows

def fmt(value):
    if value is None:
        return "-"
    if abs(value) >= 10_000_000:
        return f"{value / 1e6:.1f}M"
    if abs(value) >= 10_000:
        return f"{value / 1e3:.1f}k"
    return str(value)

def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print()

for durability in durabilities:
    print(f"## durability {durability}\n")
    data = {b: (usage(f"{b}-{durability}"), simulation(f"{b}-{durability}")) for b in backends}
    ops = []
    for b in backends:
        for op in list(data[b][0]) + list(data[b][1]):
            if op not in ops:
                ops.append(op)
    cols = ["wchar", "syscw", "write_bytes", "minflt", "majflt", "nvcsw", "nivcsw", "utime_us", "stime_us"]
    rows = []
    for op in ops:
        for b in backends:
            u = data[b][0].get(op, {})
            pages = u.get("wchar")
            rows.append([op, b] + [fmt(u.get(c)) for c in cols] + [fmt(pages // 4096 if pages is not None else None)])
    table(["operation", "backend"] + cols + ["pages"], rows)
    events = ["Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim"]
    rows = []
    for op in ops:
        for b in backends:
            s = data[b][1].get(op, {})
            if s:
                rows.append([op, b] + [fmt(s.get(e)) for e in events])
    if rows:
        table(["operation", "backend"] + events, rows)
PY
