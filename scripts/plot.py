#!/usr/bin/env python3
"""Turns a storage-bench CSV report into PNG charts next to it.

    python3 scripts/plot.py results/latest.csv

Writes, beside the report (REPORT stands for its file name without .csv):
- REPORT-throughput-DxM-DURABILITY.png: throughput per operation per backend,
  grouped bars on a log scale, one chart per size and durability; when the
  report has a ratio_to_raw column with figures, a second panel below shows,
  for each backend that names a reference (its raw engine), its throughput
  divided by that reference's (log scale, a line at 1 = as fast as the raw
  engine);
- REPORT-sweep-DURABILITY.png, when the report holds several sizes: throughput
  against the number of messages (D x M), one line per backend, one panel per
  operation, log-log.
Each median's spread is drawn as an error bar: the 95% confidence interval of
the median (ci_low … ci_high) as a throughput, or min … max for reports made
before those columns; a ratio to the raw engine is the paired ratio
(ratio_paired, the median of the ratios taken round by round) with its own
interval, or for older reports the ratio of the medians with the widest
interval the two rows' intervals allow, as storage-bench compare uses them. Rows with an error have no throughput and are left out
(their backend is marked "error" in the legend). The operations, their order
and their units come from the report (its rows are in workload order; its
`unit` column), the harness's one description of them.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402



def operations_of(rows):
    """The operations in report order (workload order), each with its unit."""
    return {r["operation"]: r["unit"] + "/s" for r in rows}


def read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def throughput(row):
    try:
        value = float(row["throughput_per_s"])
    except (KeyError, ValueError):
        return None
    return value if value > 0 and not row.get("error") else None


def spread(row):
    """(below, above) the median throughput: the 95% interval of the median, or min … max."""
    value = throughput(row)
    if value is None:
        return (0.0, 0.0)
    try:
        units = float(row["units"])
        slow = float(row.get("ci_high") or row["max_s"])
        fast = float(row.get("ci_low") or row["min_s"])
    except (KeyError, ValueError):
        return (0.0, 0.0)
    low = units / slow if slow > 0 else value
    high = units / fast if fast > 0 else value
    return (max(0.0, value - min(low, value)), max(0.0, max(high, value) - value))


def ratio(row):
    """The paired ratio (median of the per-round ratios), or else the ratio of the medians."""
    try:
        value = float(row.get("ratio_paired") or row.get("ratio_to_raw") or "")
    except ValueError:
        return None
    return value if value > 0 else None


def bars(rows, title, path):
    backends = list(dict.fromkeys(r["backend"] for r in rows))  # report order
    units = operations_of(rows)
    operations = list(units)
    width = 0.8 / max(len(backends), 1)
    measured = [b for b in backends if any(r["backend"] == b and ratio(r) is not None for r in rows)]
    size = (max(8, min(14, 1.6 * len(operations))), 9 if measured else 5.5)
    if measured:
        figure, (axes, lower) = plt.subplots(2, 1, figsize=size, gridspec_kw={"height_ratios": [3, 2]})
    else:
        figure, axes = plt.subplots(figsize=size)
    for index, backend in enumerate(backends):
        values, positions, below, above, failed = [], [], [], [], False
        for position, operation in enumerate(operations):
            match = [r for r in rows if r["backend"] == backend and r["operation"] == operation]
            value = throughput(match[0]) if match else None
            if match and value is None:
                failed = True
            if value is not None:
                values.append(value)
                positions.append(position - 0.4 + width * (index + 0.5))
                low, high = spread(match[0])
                below.append(low)
                above.append(high)
        label = backend + (" (error)" if failed else "")
        axes.bar(positions, values, width=width, label=label, yerr=[below, above], capsize=2,
                 error_kw={"elinewidth": 0.8, "alpha": 0.8})
    axes.set_yscale("log")
    axes.set_xticks(range(len(operations)))
    axes.set_xticklabels([f"{op}\n{units[op]}" for op in operations], fontsize=8)
    axes.set_ylabel("throughput (units per second, log scale; bars: 95% interval of the median)")
    axes.set_title(title)
    axes.grid(axis="y", which="major", alpha=0.4)
    axes.legend(fontsize=8)
    if measured:
        ratios(rows, measured, operations, lower)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def ratio_spread(row, raw, value):
    """(below, above) a ratio to the raw engine: the paired ratio's own interval, or else
    the widest the two rows' intervals allow."""
    try:
        low, high = float(row.get("ratio_paired_low") or ""), float(row.get("ratio_paired_high") or "")
        return (max(0.0, value - low), max(0.0, high - value))
    except ValueError:
        pass
    if raw is None or throughput(row) is None or throughput(raw) is None:
        return (0.0, 0.0)
    row_below, row_above = spread(row)
    raw_below, raw_above = spread(raw)
    t, r = throughput(row), throughput(raw)
    low = (t - row_below) / (r + raw_above)
    high = (t + row_above) / max(r - raw_below, 1e-300)
    return (max(0.0, value - low), max(0.0, high - value))


def ratios(rows, backends, operations, axes):
    """Each backend's throughput over its raw engine's, per operation."""
    width = 0.8 / max(len(backends), 1)
    for index, backend in enumerate(backends):
        values, positions, below, above = [], [], [], []
        reference = next((r.get("reference", "") for r in rows if r["backend"] == backend), "")
        for position, operation in enumerate(operations):
            match = [r for r in rows if r["backend"] == backend and r["operation"] == operation]
            value = ratio(match[0]) if match else None
            if value is not None:
                values.append(value)
                positions.append(position - 0.4 + width * (index + 0.5))
                raw = [r for r in rows if r["backend"] == reference and r["operation"] == operation]
                low, high = ratio_spread(match[0], raw[0] if raw else None, value)
                below.append(low)
                above.append(high)
        bars = axes.bar(positions, values, width=width, label=f"{backend} / {reference}", yerr=[below, above],
                        capsize=2, error_kw={"elinewidth": 0.8, "alpha": 0.8})
        axes.bar_label(bars, labels=[f"{v:.2f}" if v >= 0.1 else f"{v:.2g}" for v in values], fontsize=6)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_yscale("log")
    axes.set_xticks(range(len(operations)))
    axes.set_xticklabels(operations, fontsize=8)
    axes.set_ylabel("ratio to the raw engine\n(throughput / raw throughput)", fontsize=8)
    axes.grid(axis="y", which="major", alpha=0.4)
    axes.legend(fontsize=8)


def sweep(rows, title, path):
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    units = operations_of(rows)
    operations = list(units)
    columns = 4
    lines = (len(operations) + columns - 1) // columns
    figure, axes = plt.subplots(lines, columns, figsize=(4 * columns, 3.4 * lines), squeeze=False)
    for index, operation in enumerate(operations):
        axis = axes[index // columns][index % columns]
        for backend in backends:
            points = []
            for r in rows:
                if r["backend"] == backend and r["operation"] == operation and throughput(r) is not None:
                    points.append((int(r["dialogs"]) * int(r["messages_per_dialog"]), throughput(r), spread(r)))
            points.sort(key=lambda p: p[0])
            if points:
                axis.errorbar([p[0] for p in points], [p[1] for p in points],
                              yerr=[[p[2][0] for p in points], [p[2][1] for p in points]],
                              marker="o", capsize=2, label=backend)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axis.set_title(operation, fontsize=10)
        axis.set_xlabel("messages in the graph (D x M)", fontsize=8)
        axis.set_ylabel(units[operation], fontsize=8)
        axis.grid(which="both", alpha=0.3)
    for index in range(len(operations), lines * columns):
        axes[index // columns][index % columns].axis("off")
    axes[0][0].legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    report = argv[1]
    if not os.path.isfile(report):
        print(f"plot: no report at {report}; run make bench (or make bench-smoke) first", file=sys.stderr)
        return 1
    rows = read(report)
    if not rows:
        print(f"plot: {report} has no rows", file=sys.stderr)
        return 1
    stem = os.path.splitext(report)[0]
    workload = rows[0].get("workload", "")
    written = []
    for durability in dict.fromkeys(r["durability"] for r in rows):
        chosen = [r for r in rows if r["durability"] == durability]
        sizes = list(dict.fromkeys((int(r["dialogs"]), int(r["messages_per_dialog"])) for r in chosen))
        for dialogs, messages in sizes:
            subset = [r for r in chosen if (int(r["dialogs"]), int(r["messages_per_dialog"])) == (dialogs, messages)]
            path = f"{stem}-throughput-{dialogs}x{messages}-{durability}.png"
            title = f"{workload}: {dialogs} dialogs x {messages} messages, durability {durability}"
            bars(subset, title, path)
            written.append(path)
        if len(sizes) > 1:
            path = f"{stem}-sweep-{durability}.png"
            sweep(chosen, f"{workload}: throughput against size, durability {durability}", path)
            written.append(path)
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
