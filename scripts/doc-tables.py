#!/usr/bin/env python3
"""Regenerates the result tables of the docs from the committed reports.

Every table the docs quote from a benchmark report sits between two marker
comments, and this script writes what is between them:

    <!-- table:ratios -->
    ... generated ...
    <!-- /table -->

    python3 scripts/doc-tables.py           # rewrite the tables in place
    python3 scripts/doc-tables.py --check   # exit 1 when a table is out of date

The tables come from results/baseline.csv (`make bench`, durability full),
results/baseline-smoke.csv (`make bench-smoke`, durability none, with
instruction and allocation counts) and results/lmdb-open-check*.csv
(`scripts/lmdb-open-check.sh`: `storage-bench open` on LMDB) and
results/postgres-bulk.csv (`storage-bench postgres-bulk`) and results/postgres-smoke.csv
(`make bench-postgres`: `storage-bench run --backends postgres,postgres-raw` with make
bench-smoke's SMOKE_ARGS without --instructions and with its own --output) and results/reads-vs-c.csv
(`storage-bench run --operations all,borrowing --instructions`, with the C references) and
results/oversubscribed-reads.csv (`scripts/oversubscribed-reads.sh`) and
results/filestore-readers.csv (`storage-bench load --mix ycsb-c,ycsb-b --backends json,plist,lmdb
--clients 1,2,4`) and results/record-cost.csv
(`scripts/record-cost.sh`) and results/torture.csv (`make
torture`). Renew a baseline, run this script, and
commit both. The files scanned are README.md, docs/*.md and the DocC articles
(Sources/*/*.docc/**/*.md); a marker naming no table here is an error.
"""
import csv
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "results/baseline.csv"
SMOKE = "results/baseline-smoke.csv"
DAO_BACKENDS = ["json", "plist", "sqlite", "lmdb"]
SINGULAR = {"messages": "message", "lookups": "lookup", "queries": "query", "dialogs": "dialog",
            "messages erased": "message erased"}
BLOCK = re.compile(r"(<!-- table:([a-z0-9-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def load(path):
    with open(os.path.join(ROOT, path), newline="", encoding="utf-8") as handle:
        return [row for row in csv.DictReader(handle) if not row.get("error")]


def ordered(rows, key):
    return list(dict.fromkeys(row[key] for row in rows))


def human(value):
    value = float(f"{value:.3g}")  # round first, so 999.6 k reads 1 M
    for limit, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def mib(value):
    return f"{float(value) / 1048576:.1f} MiB"


def ratio(value):
    value = float(value)
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def caption(path, rows, what):
    """One line naming the report and the run's conditions, all read from it."""
    first = rows[0]
    sizes = ", ".join(f"D={d} × M={m}" for d, m in dict.fromkeys((r["dialogs"], r["messages_per_dialog"]) for r in rows))
    durability = ", ".join(ordered(rows, "durability"))
    iterations = sorted(int(r["iterations"]) for r in rows)
    spread = f"{iterations[0]}" if iterations[0] == iterations[-1] else f"{iterations[0]}–{iterations[-1]}"
    return (f"*{what}. From `{path}`: {sizes}, durability {durability}, {spread} measured iterations a row, "
            f"Swift {first['swift_version']} {first['build']} build, {first['cpu']}.*\n\n")


def table(header, lines, numeric=True):
    out = "| " + " | ".join(header) + " |\n"
    out += "| " + " | ".join("---" if i == 0 or not numeric else "---:" for i in range(len(header))) + " |\n"
    for line in lines:
        out += "| " + " | ".join(line) + " |\n"
    return out


def cells(rows):
    return {(r["operation"], r["backend"]): r for r in rows}


def throughput():
    """README: the median throughput of every backend × operation."""
    rows = load(BASELINE)
    backends, cell = ordered(rows, "backend"), cells(rows)
    lines = []
    for operation in ordered(rows, "operation"):
        unit = next(cell[(operation, b)]["unit"] for b in backends if (operation, b) in cell)
        line = [f"{operation} ({unit}/s)"]
        for backend in backends:
            row = cell.get((operation, backend))
            line.append(human(float(row["throughput_per_s"])) if row else "–")
        lines.append(line)
    return caption(BASELINE, rows, "Median throughput, units per second (`throughput_per_s`)") + \
        table(["operation"] + [f"`{b}`" for b in backends], lines)


def ratios(path=BASELINE):
    """Each DAO backend (and GRDB) divided by its raw engine, round by round, with the 95% interval."""
    rows = load(path)
    cell = cells(rows)
    measured = [b for b in ordered(rows, "backend") if any(r["backend"] == b and r["ratio_paired"] for r in rows)]
    reference = {b: next(r["reference"] for r in rows if r["backend"] == b) for b in measured}
    lines = []
    for operation in ordered(rows, "operation"):
        line = [operation]
        for backend in measured:
            row = cell.get((operation, backend))
            if row is None or not row["ratio_paired"]:
                line.append("–")
            else:
                line.append(f"{ratio(row['ratio_paired'])} ({ratio(row['ratio_paired_low'])}–"
                            f"{ratio(row['ratio_paired_high'])})")
        lines.append(line)
    return caption(path, rows, "Throughput ÷ the raw engine's, the median of the per-round ratios "
                   "(`ratio_paired`) with its 95% interval (`ratio_paired_low`–`ratio_paired_high`)") + \
        table(["operation"] + [f"`{b}` ÷ `{reference[b]}`" for b in measured], lines)


def instructions():
    """Instructions and allocations per counted unit, under callgrind."""
    rows = [r for r in load(SMOKE) if r["instructions"]]
    backends, cell = ordered(rows, "backend"), cells(rows)
    lines = []
    for operation in ordered(rows, "operation"):
        unit = next(cell[(operation, b)]["unit"] for b in backends if (operation, b) in cell)
        line = [f"{operation} (per {SINGULAR.get(unit, unit)})"]
        for backend in backends:
            row = cell.get((operation, backend))
            if row is None:
                line.append("–")
                continue
            units = float(row["units"])
            line.append(f"{human(float(row['instructions']) / units)} / {human(float(row['allocations']) / units)}")
        lines.append(line)
    return caption(SMOKE, rows, "Instructions / allocations per unit in the timed regions only "
                   "(`instructions` and `allocations` ÷ `units`)") + \
        table(["operation"] + [f"`{b}`" for b in backends], lines)


def instruction_ratios():
    """The raw engine's instructions per unit ÷ the backend's (`ratio_instructions`)."""
    rows = [r for r in load(SMOKE) if r["ratio_instructions"]]
    backends, cell = ordered(rows, "backend"), cells(rows)
    reference = {b: next(r["reference"] for r in rows if r["backend"] == b) for b in backends}
    lines = []
    for operation in ordered(rows, "operation"):
        line = [operation]
        for backend in backends:
            row = cell.get((operation, backend))
            line.append(ratio(row["ratio_instructions"]) if row else "–")
        lines.append(line)
    return caption(SMOKE, rows, "The raw engine's instructions per unit ÷ the backend's (`ratio_instructions`; "
                   "1 = as few as the raw engine)") + \
        table(["operation"] + [f"`{reference[b]}` ÷ `{b}`" for b in backends], lines)


def footprint():
    """Bytes on disk after update, the backend's own memory peak, and the decoded graph."""
    rows = load(BASELINE)
    lines = []
    for backend in ordered(rows, "backend"):
        mine = [r for r in rows if r["backend"] == backend]
        update = next(r for r in mine if r["operation"] == "update")
        read_all = next((r for r in mine if r["operation"] == "read-all"), None)
        lines.append([
            f"`{backend}`",
            mib(update["bytes_on_disk"]),
            mib(update["peak_rss_workload_bytes"]),
            mib(read_all["op_peak_rss_bytes"]) if read_all and read_all["op_peak_rss_bytes"] else "–",
            mib(read_all["decoded_bytes"]) if read_all and read_all["decoded_bytes"] else "–",
        ])
    return caption(BASELINE, rows, "Disk and memory: `bytes_on_disk` after update, the worker's rise above the "
                   "workload's data (`peak_rss_workload_bytes`), read-all's rise (`op_peak_rss_bytes`) and "
                   "the decoded graph (`decoded_bytes`)") + \
        table(["backend", "on disk", "memory peak", "read-all's rise", "decoded graph"], lines)


def settings():
    """The settings each backend reported in force."""
    rows = load(BASELINE)
    lines = [[f"`{b}`", f"`{next(r['settings'] for r in rows if r['backend'] == b)}`"]
             for b in ordered(rows, "backend")]
    return caption(BASELINE, rows, "Settings in force, as each store read them back (`settings`)") + \
        table(["backend", "settings"], lines, numeric=False)


OPEN = "results/lmdb-open-check.csv"
# The same measurement with the walk's mapping faulted in page by page (no
# MAP_POPULATE): what the populated mapping is measured against.
OPEN_FAULTED = "results/lmdb-open-check-no-populate.csv"


def seconds(value):
    value = float(value)
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


def open_rows(path=OPEN):
    rows = load(path)
    grouped = {}
    for row in rows:
        key = (row["backend"], int(row["dialogs"]), int(row["messages_per_dialog"]))
        grouped.setdefault(key, {})[row["operation"]] = row
    return rows, grouped


def open_times():
    """`storage-bench open`: each backend's open, cold and warm, per store size."""
    rows, grouped = open_rows()
    lines = []
    for (backend, dialogs, messages), operations in grouped.items():
        cells = [f"`{backend}`", f"{dialogs}×{messages}",
                 f"{int(operations['open-warm']['bytes_on_disk']) / 1e6:.1f} MB"]
        for operation in ("open-cold", "open-warm"):
            row = operations[operation]
            cells.append(f"{seconds(row['median_s'])} ({seconds(row['min_s'])}–{seconds(row['max_s'])})")
        lines.append(cells)
    return caption(OPEN, rows, "Opening a store (`storage-bench open`): the median of the opens, and their range") + \
        table(["backend", "D×M", "data file", "open, cold (min–max)", "open, warm (min–max)"], lines)


def open_walk(path=OPEN, what="The page walk at open"):
    """The page walk's cost: `lmdb` minus `lmdb-metapages`, per GB of data file."""
    rows, grouped = open_rows(path)
    lines = []
    for (backend, dialogs, messages), operations in grouped.items():
        unchecked = grouped.get(("lmdb-metapages", dialogs, messages))
        if backend != "lmdb" or unchecked is None:
            continue
        size = int(operations["open-warm"]["bytes_on_disk"])
        line = [f"{dialogs}×{messages}", f"{size / 1e6:.1f} MB"]
        for operation in ("open-warm", "open-cold"):
            walk = float(operations[operation]["median_s"]) - float(unchecked[operation]["median_s"])
            line += [seconds(walk), f"{walk / (size / 1e9):.2f} s"]
        lines.append(line)
    return caption(path, rows, f"{what}: the median `lmdb` open minus the median "
                   "`lmdb-metapages` open (the walk turned off), and that per GB of data file") + \
        table(["D×M", "data file", "walk, warm", "per GB, warm", "walk, cold", "per GB, cold"], lines)


def open_walk_faulted():
    """The same, measured with the walk's mapping faulted in page by page."""
    return open_walk(OPEN_FAULTED, "The page walk at open, its mapping faulted in page by page (no `MAP_POPULATE`)")


def async_cost():
    """The async form's instructions per call beside the synchronous form's (scripts/async-cost.sh)."""
    rows = load("results/async-cost.csv")
    lines = []
    for backend in ordered(rows, "backend"):
        for operation in ordered(rows, "operation"):
            found = {r["api"]: r for r in rows if r["backend"] == backend and r["operation"] == operation}
            if "sync" not in found or "async" not in found:
                continue
            sync, awaited = (float(found[api]["instructions_per_call"]) for api in ("sync", "async"))
            lines.append([f"{backend} {operation}", human(sync), human(awaited), human(max(0.0, awaited - sync)),
                          f"{float(found['async']['async_over_sync']):.3f}"])
        for r in sorted(rows, key=lambda r: r["api"] != "writer-thread"):
            if r["backend"] == backend and r["operation"] == "hop":
                hop = float(r["instructions_per_call"])
                lines.append([f"{backend} empty hop, {r['api'].replace('-', ' ')}", "", human(hop), human(hop), ""])
    first = rows[0]
    return (f"*Instructions per call, every thread counted, one client. From `results/async-cost.csv`: "
            f"D={first['dialogs']} × M={first['messages_per_dialog']}, {first['calls']} calls a region, "
            f"durability {first['durability']}, Swift {first['swift_version']} release build, {first['cpu']}.*\n\n"
            + table(["call", "synchronous", "async", "added", "async ÷ sync"], lines))


def postgres_bulk():
    """Persisting the graph on a PostgreSQL server beside COPY (storage-bench postgres-bulk)."""
    path = "results/postgres-bulk.csv"
    rows = load(path)
    first = rows[0]
    lines = [[f"`{r['method']}`" if r["method"] != "copy" else "`COPY … FROM STDIN`", f"{float(r['median_s']):.3f}",
              human(float(r["messages_per_s"])), f"{float(r['over_copy_median']):.2f}",
              f"{float(r['over_copy_max']):.2f}"] for r in rows]
    settings = first["settings"].split(" schema=")[0]
    return (f"*From `{path}`: D={first['dialogs']} × M={first['messages_per_dialog']} ({first['messages']} messages), "
            f"{first['rounds']} rounds after a warm-up, durability {first['durability']} ({settings}), "
            f"Swift {first['swift_version']} {first['build']} build, {first['cpu']}.*\n\n"
            + table(["method", "median s", "messages/s", "time ÷ COPY (median)", "time ÷ COPY (worst round)"], lines))


def reads_vs_c():
    """Each read through plain objects and through `forEach` against plain C, by instructions (storage-bench run
    --backends sqlite,sqlite-raw,sqlite-c,lmdb,lmdb-raw,lmdb-c --operations all,borrowing --instructions)."""
    path = "results/reads-vs-c.csv"
    rows = [r for r in load(path) if r["instructions"]]
    sizes = list(dict.fromkeys((r["dialogs"], r["messages_per_dialog"]) for r in rows))
    cell = {(r["operation"], r["backend"], r["dialogs"], r["messages_per_dialog"]): r for r in rows}

    def per_unit(operation, backend, size):
        row = cell.get((operation, backend) + size)
        return float(row["instructions"]) / float(row["units"]) if row else None

    def c_over(c_operation, operation, backend, size):
        c, path_cost = per_unit(c_operation, backend.split("-")[0] + "-c", size), per_unit(operation, backend, size)
        return ratio(c / path_cost) if c and path_cost else "–"

    lines = []
    for size in sizes:
        for operation in ("read-all", "read-by-id", "query"):
            unit = next(r["unit"] for r in rows if r["operation"] == operation)
            line = [f"{operation} {size[0]}×{size[1]}"]
            for engine in ("sqlite", "lmdb"):
                c = per_unit(operation, f"{engine}-c", size)
                line += [human(c) if c else "–", c_over(operation, operation, engine, size),
                         c_over(f"{operation}-borrowing", f"{operation}-borrowing", engine, size),
                         c_over(f"{operation}-borrowing", f"{operation}-view", engine, size),
                         c_over(operation, operation, f"{engine}-raw", size)]
            line[0] += f" (per {SINGULAR.get(unit, unit)})"
            lines.append(line)
    header = ["read"] + [h for engine in ("sqlite", "lmdb") for h in
                         (f"`{engine}-c` per unit", f"`{engine}`", f"`{engine}` `forEach`", f"`{engine}` views",
                          f"`{engine}-raw`")]
    return caption(path, rows, "Instructions per unit in the timed regions of plain C (`sqlite-c`, `lmdb-c`), and "
                   "C's instructions ÷ each path's (1.0: as few as C): the DAO's read into plain objects; the DAO's "
                   "read through `forEach`, and through views (`forEachView`), against C's read with each record "
                   "folded into the same digest in C; the raw Swift reference's read") + table(header, lines)


def record_cost():
    """A record's instructions per record by declaration (scripts/record-cost.sh)."""
    path = "results/record-cost.csv"
    rows = load(path)
    per = {(r["backend"], r["operation"], r["variant"]): float(r["instructions_per_record"]) for r in rows}
    lines = []
    for backend in DAO_BACKENDS:
        for operation in ordered(rows, "operation"):
            if not all((backend, operation, v) in per for v in ("readme", "hand", "macro")):
                continue
            readme, hand, macro = (per[(backend, operation, v)] for v in ("readme", "hand", "macro"))
            lines.append([f"{backend} {operation}", human(readme), human(hand), human(macro), ratio(readme / hand)])
    first = rows[0]
    return (f"*Instructions per record (a warehouse, a shelf and an item each count as one). From `{path}`: "
            f"{first['warehouses']} warehouses × {first['shelves']} shelves × {first['items']} items, "
            f"Swift {first['swift_version']} release build, {first['cpu']}.*\n\n"
            + table(["operation", "Codable only", "hand-written FieldwiseRecord", "@StoredRecord",
                     "Codable ÷ hand-written"], lines))


def torture():
    """What `make torture` saw, per backend (scripts/torture-summary.py)."""
    path = "results/torture.csv"
    rows = load(path)
    damage = [r for r in rows if r["part"] == "damage"]
    lines = []
    for backend in ordered(damage, "backend"):
        mine = [r for r in damage if r["backend"] == backend]
        count = lambda test: sum(int(r["count"]) for r in mine if test(r["outcome"]))
        typed = count(lambda o: o.startswith("error "))
        exact = count(lambda o: o == "exact data")
        wrong = count(lambda o: o == "wrong data")
        crashed = count(lambda o: o.startswith(("crash", "hang")))
        other = count(lambda o: True) - typed - exact - wrong - crashed
        lines.append([f"`{backend}`", mine[0]["files"], str(count(lambda o: True)), str(typed), str(exact),
                      str(wrong), str(crashed), str(other)])
    kills = {}
    for r in rows:
        if r["part"] == "migration-kill":
            kills[r["backend"]] = kills.get(r["backend"], 0) + int(r["count"])
    parts = "; ".join(f"{r['backend']}: {r['count']} tests {r['outcome']}" if r["count"] else
                      f"{r['backend']}: {r['outcome']}" for r in rows if r["part"] == "suite")
    first = rows[0]
    killed = ", ".join(f"{b} {n}" for b, n in kills.items())
    return (f"*Damaged copies by outcome. From `{path}`: `make torture` with seed {first['seed']}, "
            f"{first['timestamp'][:10]}. Parts: {parts}. Relation migrations killed "
            f"and reopened: {killed}.*\n\n"
            + table(["backend", "files", "damaged copies", "typed error", "exact data", "wrong data",
                     "crash or hang", "other"], lines))


def oversubscribed_reads():
    """The read-only mix at 1 to 8 clients on 2 cores, with the locks and pool sizes the adapters chose beside the
    alternatives (storage-bench load --mix ycsb-c, runs interleaved; scripts/oversubscribed-reads.sh)."""
    path = "results/oversubscribed-reads.csv"
    rows = [r for r in load(path) if r["operation"] == "all"]
    clients = sorted({int(r["clients"]) for r in rows})
    for r in rows:
        if r["backend"].endswith("-raw"):
            r["variant"] = "the engine directly"
    rank = {"adapter": 0, "the engine directly": 2}
    groups = sorted(dict.fromkeys((r["backend"].removesuffix("-raw"), r["backend"], r["variant"]) for r in rows),
                    key=lambda g: (g[0], rank.get(g[2], 1)))
    groups = [(backend, variant) for _, backend, variant in groups]
    lines = []
    for backend, variant in groups:
        line = [f"{backend}", variant]
        for count in clients:
            found = [r for r in rows if r["backend"] == backend and r["variant"] == variant
                     and int(r["clients"]) == count]
            if not found:
                line.append("–")
                continue
            ops = sum(float(r["throughput_ops_s"]) for r in found) / len(found)
            p99 = sum(float(r["p99_us"]) for r in found) / len(found)
            line.append(f"{human(ops)} ({p99:.0f} µs)")
        lines.append(line)
    first = rows[0]
    runs = max(sum(1 for r in rows if (r["backend"], r["variant"], r["clients"]) == key)
               for key in {(r["backend"], r["variant"], r["clients"]) for r in rows})
    return (f"*Operations per second (p99 latency) under the read-only mix `ycsb-c`, from `{path}`: "
            f"each cell the mean of {runs} interleaved runs of {float(first['seconds']):.0f} s; "
            f"D={first['dialogs']} × M={first['messages_per_dialog']}, durability {first['durability']}, "
            f"Swift {first['swift_version']} {first['build']} build, {first['cpu']}.*\n\n"
            + table(["backend", "variant"] + [f"{count} client{'s' if count > 1 else ''}" for count in clients], lines,
                    numeric=False))


def filestore_readers():
    """The file stores' reads at 1, 2 and 4 clients, alone (YCSB C) and beside a writer (YCSB B), LMDB beside them
    (storage-bench load --mix ycsb-c,ycsb-b --backends json,plist,lmdb --clients 1,2,4)."""
    path = "results/filestore-readers.csv"
    rows = load(path)
    cell = {(r["backend"], r["mix"], r["clients"], r["operation"]): r for r in rows}
    clients = sorted(set(r["clients"] for r in rows), key=int)
    lines = []
    for backend in ordered(rows, "backend"):
        for count in clients:
            alone, beside = cell.get((backend, "ycsb-c", count, "read")), cell.get((backend, "ycsb-b", count, "read"))
            one = cell.get((backend, "ycsb-c", clients[0], "all"))
            mix_c = cell.get((backend, "ycsb-c", count, "all"))
            if not (alone and beside and one and mix_c):
                continue
            scaling = float(mix_c["throughput_ops_s"]) / float(one["throughput_ops_s"])
            lines.append([f"`{backend}`", count, human(float(mix_c["throughput_ops_s"])), f"{scaling:.2f}",
                          f"{float(alone['p99_us']):.1f}", f"{float(beside['p99_us']):.1f}",
                          ratio(float(beside["p99_us"]) / float(alone["p99_us"]))])
    first = rows[0]
    seconds = sorted(set(f"{float(r['seconds']):.0f}" for r in rows), key=float)
    return (f"*From `{path}`: D={first['dialogs']} × M={first['messages_per_dialog']}, {'–'.join(seconds)} s a run, "
            f"durability {first['durability']}, async calls, a task per client on a thread of its own, "
            f"Swift {first['swift_version']} {first['build']} build, {first['cpu']}.*\n\n"
            + table(["store", "clients", "mix C ops/s", f"÷ {clients[0]} client", "C read p99 µs",
                     "B read p99 µs", "B ÷ C"], lines))


TABLES = {
    "oversubscribed-reads": oversubscribed_reads,
    "filestore-readers": filestore_readers,
    "torture": torture,
    "record-cost": record_cost,
    "reads-vs-c": reads_vs_c,
    "postgres-bulk": postgres_bulk,
    "postgres-ratios": lambda: ratios("results/postgres-smoke.csv"),
    "async-cost": async_cost,
    "throughput": throughput,
    "ratios": ratios,
    "instructions": instructions,
    "instruction-ratios": instruction_ratios,
    "footprint": footprint,
    "settings": settings,
    "lmdb-open": open_times,
    "lmdb-open-walk": open_walk,
    "lmdb-open-walk-faulted": open_walk_faulted,
}


def documents():
    paths = ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    paths += sorted(glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "**", "*.md"), recursive=True))
    return [os.path.relpath(os.path.join(ROOT, p), ROOT) for p in paths]


def main(argv):
    check = "--check" in argv[1:]
    unknown = [a for a in argv[1:] if a != "--check"]
    if unknown:
        print(f"doc-tables: unknown argument {unknown[0]}; usage: doc-tables.py [--check]", file=sys.stderr)
        return 64
    generated, stale, errors = {}, [], []
    for path in documents():
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            text = handle.read()

        def fill(match):
            name = match.group(2)
            if name not in TABLES:
                errors.append(f"{path}: no table named {name!r} (known: {', '.join(TABLES)})")
                return match.group(0)
            if name not in generated:
                generated[name] = TABLES[name]()
            return match.group(1) + "\n" + generated[name] + "\n" + match.group(4)

        new = BLOCK.sub(fill, text)
        opened, closed = text.count("<!-- table:"), text.count("<!-- /table -->")
        if opened != closed or opened != len(BLOCK.findall(text)):
            errors.append(f"{path}: {opened} table markers opened, {closed} closed")
        if new != text:
            stale.append(path)
            if not check:
                with open(os.path.join(ROOT, path), "w", encoding="utf-8") as handle:
                    handle.write(new)
    for error in errors:
        print(f"doc-tables: {error}", file=sys.stderr)
    if check and stale:
        for path in stale:
            print(f"doc-tables: {path} has a table that differs from the results files; "
                  "run python3 scripts/doc-tables.py", file=sys.stderr)
        return 1
    if not check:
        for path in stale:
            print(f"doc-tables: rewrote {path}")
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
