#!/usr/bin/env python3
"""Checks a `storage-bench load` report: every backend ran every mix at every
client count without an error, with operations and a positive throughput and
the peak memory of its own worker process, and every backend with a reference
in the run has its ratios.

usage: check-load-csv.py REPORT.csv --backends a,b,c --mixes m1,m2 --clients 1,2
"""
import argparse
import csv
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("--backends", required=True)
    parser.add_argument("--mixes", required=True)
    parser.add_argument("--clients", required=True)
    args = parser.parse_args()
    backends = args.backends.split(",")
    mixes = args.mixes.split(",")
    clients = args.clients.split(",")
    with open(args.report, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    problems = []
    for mix in mixes:
        for backend in backends:
            for count in clients:
                found = [r for r in rows if r["backend"] == backend and r["mix"] == mix and r["clients"] == count]
                total = [r for r in found if r["operation"] == "all"]
                where = f"{backend} {mix} at {count} clients"
                if len(total) != 1:
                    problems.append(f"{where}: {len(total)} 'all' rows")
                    continue
                row = total[0]
                if int(row["errors"]) != 0:
                    problems.append(f"{where}: {row['errors']} errors ({row['error']})")
                if int(row["operations"]) <= 0 or float(row["throughput_ops_s"]) <= 0:
                    problems.append(f"{where}: no operations")
                if len(found) < 2:
                    problems.append(f"{where}: no row per operation type")
                if row["reference"] in backends and not row["throughput_ratio_to_raw"]:
                    problems.append(f"{where}: no ratio to {row['reference']}")
                # Each backend x mix ran in a worker process of its own, which
                # reports its peak memory (and the ratio to its reference's).
                if not row.get("peak_rss_mib") or float(row["peak_rss_mib"]) <= 0:
                    problems.append(f"{where}: no peak memory of its own process")
                elif row["reference"] in backends and not row.get("peak_rss_ratio_to_raw"):
                    problems.append(f"{where}: no peak memory ratio to {row['reference']}")
                # The DAO backends observe the chat mix's hot dialogs: at least
                # each observer's first results arrive.
                if mix == "chat" and not backend.endswith("-raw") and backend != "grdb":
                    if not row["observer_snapshots"] or int(row["observer_snapshots"]) < 1:
                        problems.append(f"{where}: no observer snapshots")
    for problem in problems:
        print(f"check-load-csv: {problem}", file=sys.stderr)
    if not problems:
        print(f"check-load-csv: {len(backends)} backends x {len(mixes)} mixes x {len(clients)} client counts ran")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
