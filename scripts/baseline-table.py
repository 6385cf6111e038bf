#!/usr/bin/env python3
"""Prints a storage-bench report as Markdown tables:
median throughput per operation and backend, the 95% interval of the median
relative to it (or, for reports without one, the relative standard deviation
of the iterations), p50 latency for the per-lookup operations, instructions per
unit when counted, and how many calls were timed where fewer than all were;
then, when the report has them, the paired ratios to the raw engine with their
95% intervals.

    python3 scripts/baseline-table.py results/baseline.csv

The operations, their order and their units come from the report itself (its
rows are in workload order), so the table follows the harness's one description.
"""
import csv
import sys


def human(value):
    value = float(f"{value:.3g}")  # round first, so 999.6 k reads 1 M, not 1e+03 k
    for limit, suffix in ((1e6, " M"), (1e3, " k")):
        if value >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def latency(us):
    if us >= 1e6:
        return f"{us / 1e6:.2g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def main(path):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if not row.get("error")]
    backends = list(dict.fromkeys(row["backend"] for row in rows))
    cell = {(row["operation"], row["backend"]): row for row in rows}
    print("| operation | unit | " + " | ".join(backends) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in backends) + " |")
    for operation in dict.fromkeys(row["operation"] for row in rows):
        unit = next((cell[(operation, b)]["unit"] for b in backends if (operation, b) in cell), "")
        cells = []
        for backend in backends:
            row = cell.get((operation, backend))
            if row is None:
                cells.append("–")
                continue
            text = f"{human(float(row['throughput_per_s']))}/s"
            if row["p50_us"]:
                text += f" (p50 {latency(float(row['p50_us']))})"
            median = float(row["median_s"])
            if row.get("ci_low") and row.get("ci_high") and median > 0:
                low, high = float(row["ci_low"]), float(row["ci_high"])
                text += f" ({100 * (low / median - 1):+.0f}…{100 * (high / median - 1):+.0f}%)"
            else:
                mean, stddev = float(row["mean_s"]), float(row["stddev_s"])
                if mean > 0:
                    text += f" ±{100 * stddev / mean:.0f}%"
            if row.get("instructions"):
                text += f", {human(float(row['instructions']) / float(row['units']))} instr"
            if "timed" in row.get("note", ""):
                text += f", {row['units']} timed"
            cells.append(text)
        print(f"| {operation} | {unit} | " + " | ".join(cells) + " |")
    ratios(rows, backends)


def ratio(value):
    """Two decimals, or two significant digits below 0.1 (as the terminal shows them)."""
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def ratios(rows, backends):
    """The paired ratios to the raw engine, with their 95% intervals, when the report has them."""
    measured = [b for b in backends if any(r["backend"] == b and r.get("ratio_paired") for r in rows)]
    if not measured:
        return
    reference = {b: next(r["reference"] for r in rows if r["backend"] == b) for b in measured}
    print()
    print("| operation | " + " | ".join(f"{b} ÷ {reference[b]}" for b in measured) + " |")
    print("| --- | " + " | ".join("---" for _ in measured) + " |")
    for operation in dict.fromkeys(row["operation"] for row in rows):
        cells = []
        for backend in measured:
            row = next((r for r in rows if r["backend"] == backend and r["operation"] == operation), None)
            if row is None or not row.get("ratio_paired"):
                cells.append("–")
                continue
            low, value, high = (float(row[c]) for c in ("ratio_paired_low", "ratio_paired", "ratio_paired_high"))
            cells.append(f"{ratio(value)}× ({ratio(low)}–{ratio(high)})")
        print(f"| {operation} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: baseline-table.py REPORT.csv")
    main(sys.argv[1])
