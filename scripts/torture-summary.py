#!/usr/bin/env python3
"""Turns the output of `make torture` into results/torture.csv.

    python3 scripts/torture-summary.py results/torture.log [--output results/torture.csv]

`make torture` (scripts/torture.sh) runs its four parts (the crash and damage
tests, the differential test, the warehouse trial, the logistics trial) with
their output kept in results/torture.log, then calls this script. A row of the CSV is one
part's outcome:

- `damage`: per backend, the damaged copies of its files that ended in each
  outcome (`error corrupt` and other typed errors, `exact data` for status 0,
  `wrong data` for status 20, `crash` for a signal, `hang`), from the damage
  test's summary lines;
- `migration-kill`: per backend, the relation migrations killed and how each
  store opened afterwards (`ok old`, `ok new`, `ran to its end`);
- `suite`: per part, the tests run and whether they passed.

The seed of the run (`STORAGE_TORTURE_SEED`, which scripts/torture.sh sets),
the commit and the date go in every row. A part without its summary (cut
short, or never run) is written as `not finished`, and the script then exits
1, as it does on any crash, hang or failed part. `scripts/doc-tables.py` makes docs/CRASHES.md's table from it.
"""
import argparse
import csv
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each part is the `swift test` command whose filter names it (scripts/torture.sh
# echoes each command before it runs); its summary is the next "Test run" line.
PARTS = [("crash and damage", "CrashTests"), ("differential", "DifferentialTests"),
         ("warehouse trial", "RoundTripTests/WarehouseDomain/"), ("logistics trial", "RoundTripTests/LogisticsDomain/")]
DAMAGE = re.compile(r"^(\w+): (\d+) damaged copies of (\d+) files: \[(.*)\]$")
MIGRATION = re.compile(r"^relation migrations killed on (\w+): \[(.*)\]$")
PAIR = re.compile(r'\(key: "([^"]*)", value: (\d+)\)')
RUN = re.compile(r"^\S+ Test run with (\d+) tests? in (\d+) suites? (passed|failed)")
SEED = re.compile(r"torture seed (\d+)")


def outcome(key):
    """The damage test's outcome key, in words."""
    if key == "status 0":
        return "exact data"
    if key == "status 20":
        return "wrong data"
    if key.startswith("signal"):
        return "crash (" + key + ")"
    if key == "hung":
        return "hang"
    return key


def commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def summarize(lines):
    rows, runs, seed, current = [], {}, "", None
    for line in lines:
        line = line.rstrip("\n")
        if not seed and (found := SEED.search(line)):
            seed = found.group(1)
        for name, command in PARTS:
            if command in line and " test " in line and "--filter" in line and not line.startswith(("◇", "✔", "✘", "↳")):
                current = name
        if found := DAMAGE.match(line):
            backend, _, files, pairs = found.groups()
            for key, count in PAIR.findall(pairs):
                rows.append({"part": "damage", "backend": backend, "files": files, "outcome": outcome(key),
                             "count": count})
        elif found := MIGRATION.match(line):
            backend, pairs = found.groups()
            for key, count in PAIR.findall(pairs):
                rows.append({"part": "migration-kill", "backend": backend, "files": "", "outcome": key,
                             "count": count})
        elif (found := RUN.match(line)) and current:
            runs[current] = found
    # A part whose swift-testing summary is missing was cut short (or never
    # ran): it is recorded as not finished, and the run does not count as clean.
    for name, _ in PARTS:
        run = runs.get(name)
        rows.append({"part": "suite", "backend": name, "files": "",
                     "outcome": run.group(3) if run else "not finished", "count": run.group(1) if run else ""})
    if not any(r["part"] == "damage" for r in rows):
        raise SystemExit("torture-summary: no damage summary in the log")
    return rows, seed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--output", default=os.path.join(ROOT, "results", "torture.csv"))
    parser.add_argument("--seed", help="the run's seed, when no failure line printed it")
    args = parser.parse_args()
    with open(args.log, encoding="utf-8", errors="replace") as handle:
        rows, seed = summarize(handle)
    seed = args.seed or seed or os.environ.get("STORAGE_TORTURE_SEED", "")
    stamp = {"seed": seed, "git_commit": commit(),
             "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    with open(args.output, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["part", "backend", "files", "outcome", "count", "seed",
                                                    "git_commit", "timestamp"])
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, **stamp})
    crashes = [r for r in rows if r["part"] == "damage" and r["outcome"].startswith(("crash", "hang"))]
    failed = [r["backend"] for r in rows if r["part"] == "suite" and r["outcome"] != "passed"]
    print(f"torture-summary: {len(rows)} rows in {os.path.relpath(args.output, ROOT)}; "
          f"{sum(int(r['count']) for r in crashes)} crashes or hangs; parts not passed: {', '.join(failed) or 'none'}")
    return 1 if crashes or failed else 0


if __name__ == "__main__":
    sys.exit(main())
