#!/usr/bin/env python3
"""How well the paired ratios of storage-bench reports agree between runs, from
the per-round ratios the reports list (column `ratio_paired_rounds`).

    scripts/ratio-agreement.py compare results/run1.csv results/run2.csv [more.csv ...]

For every pair of reports: how many ratios agree within --tolerance (5%), and
each one that does not, with its change and a permutation test of whether its
rounds in the two runs could come from one distribution (p below 0.05: the run
as a whole moved, which an interval over one run's rounds does not cover; about
1 row in 20 falls below 0.05 by chance).

    scripts/ratio-agreement.py simulate results/run1.csv --time-limit 240 --rule harness

Simulates the extra rounds of `make bench` on one report's figures, many times
over: each round's ratio of a row is drawn from that row's rounds in the report
(so the run's own spread, without any shift of a whole run), a round costs the
report's median seconds of the operations it runs (in-place runs multiplied
out; the untimed restores of update and erase-all reckoned at --restore-share
of a run) plus --overhead seconds per worker (start, data, checks), and the
rounds go where the rule sends them until --max-iterations or --time-limit.
Two such runs are compared as `compare` does; the mean number of rows within
the tolerance, the extra seconds spent (mean and largest) and each row's chance
of missing are printed. Rules: `harness` (the runner's: a group's round ends
where the sum of w / n of its unsettled figures per second of the round is
largest), `need` (each figure weighs the share of the rounds it still needs
that one round gives, 1 / (n (w + 1))), `last` (every round of a group goes to
its last unsettled operation). Limits: `fit` (the runner's: a group's round
starts only when it is expected to end within the limit), `start` (the limit is
checked only before a round starts).
"""
import argparse
import csv
import math
import random
import sys

OPERATIONS = ["persist", "read-all", "read-by-id", "query", "update", "persist-single", "erase-by-id", "erase-all"]


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def interval_rank(n, confidence):
    """The k of the median's order-statistic interval [x(k), x(n+1-k)] and its coverage (as the harness's MedianInterval)."""
    cumulative = []
    total = 0.0
    for i in range(n + 1):
        total += math.comb(n, i) / 2**n
        cumulative.append(total)
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * cumulative[k] >= confidence:
        k += 1
    return k, max(0.0, 1 - 2 * cumulative[k - 1])


RANKS = {}


def width(values, precision, confidence=0.95):
    """The interval's relative half-width divided by the precision (10 when too few rounds), as RunConfiguration does."""
    n = len(values)
    if n not in RANKS:
        RANKS[n] = interval_rank(n, confidence)
    k, coverage = RANKS[n]
    if coverage < confidence:
        return 10.0
    s = sorted(values)
    m = median(values)
    return max(m - s[k - 1], s[n - k] - m) / m / precision


def load(path, size):
    rows = {}
    costs = {}
    references = {}
    for row in csv.DictReader(open(path)):
        if f"{row['dialogs']}x{row['messages_per_dialog']}" != size or row.get("error"):
            continue
        backend, operation = row["backend"], row["operation"]
        runs = float(row.get("runs_in_place") or 1)
        seconds = float(row["median_s"])
        restores = (runs - 1) * seconds if operation in ("update", "erase-all") else 0.0
        costs[(backend, operation)] = (seconds * runs, restores)
        if row.get("reference"):
            references[backend] = row["reference"]
        if row.get("ratio_paired_rounds"):
            rows[(backend, operation)] = [float(x) for x in row["ratio_paired_rounds"].split(";")]
    return rows, costs, references


def permutation_p(x, y, rng, draws=2000):
    observed = abs(median(y) - median(x))
    pool = x + y
    hits = 0
    for _ in range(draws):
        rng.shuffle(pool)
        if abs(median(pool[: len(y)]) - median(pool[len(y):])) >= observed - 1e-12:
            hits += 1
    return hits / draws


def compare(args):
    rng = random.Random(args.seed)
    reports = [load(path, args.size)[0] for path in args.reports]
    for a in range(len(reports)):
        for b in range(a + 1, len(reports)):
            keys = sorted(set(reports[a]) & set(reports[b]))
            misses = []
            shifted = 0
            for key in keys:
                x, y = reports[a][key], reports[b][key]
                change = median(y) / median(x) - 1
                p = permutation_p(list(x), list(y), rng)
                shifted += p < 0.05
                if abs(change) > args.tolerance:
                    misses.append(f"  {key[0]} {key[1]}: {change * 100:+.1f}% (rounds {len(x)} and {len(y)}, permutation p {p:.3f})")
            print(f"{args.reports[a]} -> {args.reports[b]}: {len(keys) - len(misses)} of {len(keys)} within "
                  f"±{args.tolerance * 100:g}%; {shifted} rows whose rounds differ between the runs (p < 0.05)")
            for line in misses:
                print(line)


def worth(rule, w, n):
    if rule == "need":
        return 1 / (n * (w + 1))
    return w / max(1, n)


def simulate_run(rows, costs, groups, args, rng):
    data = {key: [rng.choice(rounds) for _ in range(args.iterations)] for key, rounds in rows.items()}

    def cost(members, end):
        total = 0.0
        for backend in members:
            total += args.overhead
            for operation in OPERATIONS[: end + 1]:
                seconds, restores = costs.get((backend, operation), (0.0, 0.0))
                total += seconds + args.restore_share * restores
        return total

    spent = 0.0
    rounds = args.iterations
    while rounds < args.max_iterations and spent < args.time_limit:
        ran = 0
        for members in groups:
            measured = [b for b in members if any((b, o) in rows for o in OPERATIONS)]
            widths = {}
            counts = {}
            for backend in measured:
                for operation in OPERATIONS:
                    if (backend, operation) not in data:
                        continue
                    w = width(data[(backend, operation)], args.precision)
                    if w > 1:
                        widths[operation] = max(widths.get(operation, 0), w)
                        counts[operation] = min(counts.get(operation, 10**9), len(data[(backend, operation)]))
            if not widths:
                continue
            if args.rule == "last":
                end = max(OPERATIONS.index(o) for o in widths)
            else:
                best = None
                value = 0.0
                seconds = 0.0
                for index, operation in enumerate(OPERATIONS):
                    seconds += sum(costs.get((b, operation), (0.0, 0.0))[0] + costs.get((b, operation), (0.0, 0.0))[1] * args.restore_share for b in members)
                    if operation not in widths:
                        continue
                    value += worth(args.rule, widths[operation], counts[operation])
                    score = value / seconds if seconds > 0 else math.inf
                    if best is None or score >= best[1]:
                        best = (index, score)
                end = best[0]
            expected = cost(members, end)
            if args.limit == "fit" and spent + expected > args.time_limit:
                continue
            spent += expected
            ran += 1
            for backend in measured:
                for operation in OPERATIONS[: end + 1]:
                    if (backend, operation) in data:
                        data[(backend, operation)].append(rng.choice(rows[(backend, operation)]))
        if ran == 0:
            break
        rounds += 1
    return data, spent


def simulate(args):
    rng = random.Random(args.seed)
    rows, costs, references = load(args.report, args.size)
    groups = []
    for reference in dict.fromkeys(references.values()):
        groups.append([b for b, r in references.items() if r == reference] + [reference])
    agree = []
    spent = []
    misses = {}
    watched = [tuple(name.split(":", 1)) for name in args.rows]
    rounds = {key: [] for key in watched}
    widths = {key: [] for key in watched}
    for _ in range(args.pairs):
        first, s1 = simulate_run(rows, costs, groups, args, rng)
        second, s2 = simulate_run(rows, costs, groups, args, rng)
        spent += [s1, s2]
        for key in watched:
            for run in (first, second):
                rounds[key].append(len(run[key]))
                widths[key].append(width(run[key], 1.0))
        count = 0
        for key in first:
            if abs(median(second[key]) / median(first[key]) - 1) <= args.tolerance:
                count += 1
            else:
                misses[key] = misses.get(key, 0) + 1
        agree.append(count)
    mean = sum(agree) / len(agree)
    spread = (sum((a - mean) ** 2 for a in agree) / (len(agree) - 1)) ** 0.5 if len(agree) > 1 else 0.0
    print(f"{args.report} rule {args.rule}, limit {args.limit} {args.time_limit:g} s, max {args.max_iterations}: "
          f"{mean:.2f} of {len(rows)} within ±{args.tolerance * 100:g}% (sd {spread:.2f} over {args.pairs} pairs, "
          f"standard error {spread / len(agree) ** 0.5:.2f}); extra rounds {sum(spent) / len(spent):.0f} s on average, "
          f"{max(spent):.0f} s at most")
    for key in watched:
        print(f"  {key[0]} {key[1]}: {sum(rounds[key]) / len(rounds[key]):.1f} rounds on average, "
              f"median half-width ±{median(widths[key]) * 100:.1f}%, misses in {misses.get(key, 0) / args.pairs:.0%} of pairs")
    for key, count in sorted(misses.items(), key=lambda item: -item[1]):
        if key in watched:
            continue
        if count / args.pairs >= args.show:
            print(f"  {key[0]} {key[1]}: misses in {count / args.pairs:.0%} of pairs")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare")
    c.add_argument("reports", nargs="+")
    s = sub.add_parser("simulate")
    s.add_argument("report")
    s.add_argument("--rule", choices=["harness", "need", "last"], default="harness")
    s.add_argument("--limit", choices=["fit", "start"], default="fit")
    s.add_argument("--time-limit", type=float, default=360)
    s.add_argument("--max-iterations", type=int, default=30)
    s.add_argument("--iterations", type=int, default=6)
    s.add_argument("--precision", type=float, default=0.03)
    s.add_argument("--overhead", type=float, default=1.5, help="seconds per worker and iteration besides its operations")
    s.add_argument("--restore-share", type=float, default=0.6, help="an untimed restore's seconds as a share of a run")
    s.add_argument("--pairs", type=int, default=200)
    s.add_argument("--show", type=float, default=0.1, help="list rows that miss in at least this share of pairs")
    s.add_argument("--rows", nargs="*", default=[], help="rows (backend:operation) whose rounds and half-width to print")
    for p in (c, s):
        p.add_argument("--size", default="1000x100")
        p.add_argument("--tolerance", type=float, default=0.05)
        p.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.command == "compare":
        if len(args.reports) < 2:
            parser.error("compare needs two reports or more")
        compare(args)
    else:
        simulate(args)


if __name__ == "__main__":
    sys.exit(main())
