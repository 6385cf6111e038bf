#!/usr/bin/env python3
"""Checks a storage-bench CSV report: every backend x operation (for each size and
durability in the report) has a row without an error, with a positive throughput,
with the units the operation must touch (fewer only where the note says the calls
were bounded), and latency percentiles exactly for the per-call operations; and
every such row whose backend names a reference (column `reference`) that is
among the checked backends has its `ratio_to_raw`: its throughput divided by the
reference's row of the same size, durability and operation, and its
`ratio_paired` (the median of the ratios taken round by round) inside its interval
and, where the report lists them (`ratio_paired_rounds`), the median of those rounds.

    storage-bench operations --format json --sizes 100x10 > operations.json
    scripts/check-bench-csv.py results/smoke.csv --backends json,plist,sqlite,grdb,sqlite-raw,lmdb,lmdb-raw \
        --operations-json operations.json

The operations (names, units, per-call, expected units per size) come from
`storage-bench operations --format json`, the one description the harness uses.
Exit status 0 when the report is complete, 1 otherwise (each problem is printed).
"""
import argparse
import csv
import json
import sys

REQUIRED = (
    "workload,run_id,timestamp,git_commit,host,os,cpu,swift_version,build,backend,durability,operation,"
    "dialogs,messages_per_dialog,units,unit,iterations,median_s,min_s,max_s,mean_s,stddev_s,throughput_per_s,"
    "p50_us,p90_us,p99_us,bytes_on_disk,peak_rss_bytes"
).split(",")


def check_ratio(row, reference, rows, where):
    """The row's ratio_to_raw must be its throughput over its reference's."""
    key = (row["durability"], row["dialogs"], row["messages_per_dialog"], row["operation"])
    raw = [
        r for r in rows
        if r["backend"] == reference and (r["durability"], r["dialogs"], r["messages_per_dialog"], r["operation"]) == key
    ]
    if len(raw) != 1 or raw[0].get("error"):
        return []  # reported where the reference's own row is checked
    try:
        expected = float(row["throughput_per_s"]) / float(raw[0]["throughput_per_s"])
    except (ValueError, ZeroDivisionError):
        return []
    try:
        ratio = float(row.get("ratio_to_raw") or "")
    except ValueError:
        return [f"{where}: no ratio_to_raw to {reference}, which ran"]
    if abs(ratio - expected) > 1e-6 * expected:
        return [f"{where}: ratio_to_raw {ratio} is not throughput / {reference} throughput = {expected:.9g}"]
    if "ratio_paired" not in row:
        return []  # a report made before the paired ratio
    try:
        paired, low, high = (float(row[c]) for c in ("ratio_paired", "ratio_paired_low", "ratio_paired_high"))
    except ValueError:
        return [f"{where}: no ratio_paired (with its interval) to {reference}, which ran"]
    if not 0 < low <= paired <= high:
        return [f"{where}: ratio_paired {paired} is not inside its interval {low} … {high}"]
    if not row.get("ratio_paired_rounds"):
        return []  # a report made before the per-round ratios
    try:
        rounds = sorted(float(v) for v in row["ratio_paired_rounds"].split(";"))
    except ValueError:
        return [f"{where}: ratio_paired_rounds {row['ratio_paired_rounds']!r} is not a list of numbers"]
    n = len(rounds)
    median = rounds[n // 2] if n % 2 else (rounds[n // 2 - 1] + rounds[n // 2]) / 2
    # The rounds are written to 6 significant digits.
    if abs(median - paired) > 1e-5 * paired:
        return [f"{where}: ratio_paired {paired} is not the median of its rounds ({median:.6g})"]
    if not (rounds[0] * (1 - 1e-5) <= low and high <= rounds[-1] * (1 + 1e-5)):
        return [f"{where}: the interval {low} … {high} is not within its rounds' range {rounds[0]} … {rounds[-1]}"]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report")
    parser.add_argument("--backends", required=True, help="comma-separated registered backends")
    parser.add_argument("--operations-json", required=True,
                        help="the output of `storage-bench operations --format json --sizes ...` (- for stdin)")
    parser.add_argument("--operations", help="comma-separated subset of the operations to require (default: all)")
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b]
    with (sys.stdin if args.operations_json == "-" else open(args.operations_json, encoding="utf-8")) as handle:
        described = {d["name"]: d for d in json.load(handle)}
    operations = [o for o in args.operations.split(",") if o] if args.operations else list(described)
    unknown = [o for o in operations if o not in described]
    if unknown:
        print(f"check-bench-csv: unknown operations {unknown}; known: {list(described)}", file=sys.stderr)
        return 1
    if not backends:
        print("check-bench-csv: no backends given", file=sys.stderr)
        return 1

    with open(args.report, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        rows = list(reader)
    problems = []
    if header[: len(REQUIRED)] != REQUIRED:
        problems.append(f"the header does not start with the required columns: {header[:len(REQUIRED)]}")
    groups = sorted({(r["durability"], r["dialogs"], r["messages_per_dialog"]) for r in rows})
    if not groups:
        problems.append("the report has no rows")
    for durability, dialogs, messages in groups:
        for backend in backends:
            for operation in operations:
                matches = [
                    r for r in rows
                    if (r["durability"], r["dialogs"], r["messages_per_dialog"], r["backend"], r["operation"])
                    == (durability, dialogs, messages, backend, operation)
                ]
                where = f"{backend} {operation} {dialogs}x{messages} {durability}"
                if len(matches) != 1:
                    problems.append(f"{where}: {len(matches)} rows, expected 1")
                    continue
                row = matches[0]
                if row.get("error"):
                    problems.append(f"{where}: error: {row['error']}")
                    continue
                try:
                    throughput = float(row["throughput_per_s"])
                except ValueError:
                    throughput = 0.0
                if not throughput > 0:
                    problems.append(f"{where}: throughput {row['throughput_per_s']!r} is not positive")
                    continue
                reference = row.get("reference", "")
                if reference in backends:
                    problems += check_ratio(row, reference, rows, where)
                description = described[operation]
                if row["unit"] != description["unit"]:
                    problems.append(f"{where}: unit {row['unit']!r}, expected {description['unit']!r}")
                expected = description["expected_units"].get(f"{dialogs}x{messages}")
                if expected is None:
                    problems.append(f"{where}: no expected units for this size in {args.operations_json}; "
                                    f"pass --sizes {dialogs}x{messages} to storage-bench operations")
                elif int(row["units"] or 0) != expected and not (row.get("note") and 0 < int(row["units"] or 0) < expected):
                    problems.append(f"{where}: {row['units']} {row['unit']}, expected "
                                    f"{description['units_formula']} = {expected}")
                if bool(row["p50_us"]) != description["per_call"]:
                    problems.append(f"{where}: p50_us is {row['p50_us']!r}, but per_call is {description['per_call']}")
    for problem in problems:
        print(f"check-bench-csv: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check-bench-csv: {args.report}: {len(backends)} backends x {len(operations)} operations "
          f"x {len(groups)} size(s): all present with a positive throughput")
    return 0


if __name__ == "__main__":
    sys.exit(main())
