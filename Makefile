# The project's entry points. Each target installs what it needs (scripts/setup.sh).
SWIFT ?= swift

# `make bench`: `storage-bench run` with its defaults, which are this method:
# every backend at the default size of WORKLOAD.md, 6 measured iterations
# after 1 warm-up (6: the fewest that give a 95% interval of a median),
# durability full. It prints a one-screen summary and writes the CSV and the
# HTML report (results/report.html, docs/REPORT.md). Override with BENCH_ARGS, e.g.
#   make bench BENCH_ARGS="--sizes 100x10,1000x100 --backends json,plist --format csv,markdown"
# Backends whose ratios to their raw engine (taken round by round; for a
# backend without one, its medians) are not known within ±3% (95% interval)
# run more rounds, beside their raw engine and only up to the operation
# where a round buys the most interval width for its time, up to 30
# iterations or 360 s more per size (a backend and its raw engine start an
# extra round only when it is expected to end within them). A backend's worker and its raw
# engine's run in step, operation by operation, with Swift's fixed hash
# seed; each read-only operation runs in place 5 to 9 times per iteration
# (more than 5 while its runs add up to less than 0.25 s), as many times
# for a backend as for its raw engine, and the iteration's time is the
# median of its runs. erase-all runs up to 21 times too: before each further
# run the store is put back untimed (what it erased, persisted again in one
# call and checked), while its runs and restores add up to less than 1 s.
# update runs up to 3 times: before each further run the store is put back
# untimed to what it held before update (the dialogs as persist wrote them,
# upserted again in one call and checked), while one more restore and run,
# each reckoned as long as the last run, fit in 4 s with what was spent.
# The defaults spelled out: --backends all --dialogs 1000 --messages-per-dialog 100
# --iterations 6 --max-iterations 30 --time-limit 360 --warmup 1 --durability full
# --read-runs 9 --read-time 0.25 --min-read-runs 5 --erase-runs 21 --erase-time 1
# --update-runs 3 --update-time 4
BENCH_ARGS ?=
# `make bench-smoke`: a tiny size, every backend, about a minute: at least 6
# timed iterations (the fewest that give a 95% interval of the median), up to
# 12 or 10 s more; no syncs, so that the wall times measure the code and not
# the disk; and one iteration per backend under callgrind for the
# instruction and allocation counts (of one run of each operation: the
# in-place runs of the reads, of update and of erase-all, as in make bench,
# are for the wall times only).
SMOKE_ARGS ?= --backends all --dialogs 100 --messages-per-dialog 10 --iterations 6 --max-iterations 12 --time-limit 10 --warmup 1 --durability none --read-runs 9 --read-time 0.25 --min-read-runs 5 --erase-runs 9 --erase-time 1 --update-runs 3 --update-time 1 --instructions --output results/smoke.csv
# `make bench-scale`: the two engines and their raw references at D=1000 and
# D=10,000 (1M messages), M=100, durability full; the table ends with each
# backend's throughput at 10,000 divided by its throughput at 1000. Reads,
# update and erase-all run in place as in `make bench` (the same settings),
# so that both sizes, and this table and `make bench`'s, time the same thing.
SCALE_ARGS ?= --backends sqlite,sqlite-raw,lmdb,lmdb-raw --sizes 1000x100,10000x100 --iterations 3 --warmup 0 --durability full --read-runs 9 --read-time 0.25 --min-read-runs 5 --erase-runs 21 --erase-time 1 --update-runs 3 --update-time 4 --output results/scale.csv
# `make bench-load`: every built-in load mix (YCSB A-F and chat, WORKLOAD.md,
# "Outside the workload: load mixes") on every backend at 1, 2, 4 and 8
# clients, 10 s each after 1 s of warm-up, durability full; writes
# results/load-<date>-<host>.csv and .json.
LOAD_ARGS ?= --mix all --backends all --clients 1,2,4,8 --duration 10 --warmup 1 --durability full
# The short load phase of `make bench`: YCSB A (half reads, half updates: the
# write-heavy concurrent mix) and C (reads only) at 1 and 2 clients, 3 s each
# (results/load-latest.csv); make bench then writes results/report.html with
# the run's operations and the load phase on one page.
BENCH_LOAD_ARGS ?= --mix ycsb-a,ycsb-c --backends all --clients 1,2 --duration 3 --warmup 0.5 --durability full
# `make bench-server`: the PostgreSQL backends beside the embedded engines, on
# a throwaway cluster that `scripts/setup.sh postgres` starts and stops (or on
# the server DAO_POSTGRES_URL names, left running): `storage-bench run` on
# SQLite, LMDB and PostgreSQL with their raw references, by make bench's
# method; the short load phase of make bench on the same backends; and
# `storage-bench postgres-bulk` (persisting 100k messages beside COPY, 5 rounds).
# Every run makes schemas of its own on the server and drops them
# (scripts/bench-server.sh). `make bench` runs the PostgreSQL backends too
# when DAO_POSTGRES_URL is set, and leaves them out otherwise.
# `make bench-postgres`: `postgres` beside `postgres-raw` at make bench-smoke's
# size and settings, without the instruction counts, on the server
# DAO_POSTGRES_URL names or a throwaway cluster it starts and stops
# (scripts/bench-postgres.sh); writes results/postgres-smoke.csv, the
# `postgres-ratios` table of docs/ARCHITECTURE.md (python3 scripts/doc-tables.py).
POSTGRES_SMOKE_ARGS ?= --backends postgres,postgres-raw --dialogs 100 --messages-per-dialog 10 --iterations 6 --max-iterations 12 --time-limit 10 --warmup 1 --durability none --read-runs 9 --read-time 0.25 --min-read-runs 5 --erase-runs 9 --erase-time 1 --update-runs 3 --update-time 1 --output results/postgres-smoke.csv
SERVER_BACKENDS ?= sqlite,sqlite-raw,lmdb,lmdb-raw,postgres,postgres-raw
SERVER_BENCH_ARGS ?= --backends $(SERVER_BACKENDS)
SERVER_LOAD_ARGS ?= --mix ycsb-a,ycsb-c --backends $(SERVER_BACKENDS) --clients 1,2 --duration 3 --warmup 0.5 --durability full
SERVER_BULK_ARGS ?= --dialogs 1000 --messages-per-dialog 100 --rounds 5 --durability full
# `make compare`: the newest report of the default results folder (a `make bench`)
# against the committed baseline; `make compare CURRENT=results/smoke.csv
# BASELINE=results/baseline-smoke.csv` for a smoke run.
BASELINE ?= results/baseline.csv
CURRENT ?= results/latest.csv
THRESHOLD ?= 10%
COMPARE_ARGS ?=
# `make report`: the one-screen summary and the HTML report (REPORT.html beside
# it) of this report, against BASELINE_REPORT when given. `make plot` is the same.
REPORT ?= results/latest.csv
BASELINE_REPORT ?=

BENCH = $(SWIFT) run --package-path Benchmarks -c release --skip-build storage-bench

.PHONY: setup setup-instructions setup-browser build test docs torture bench bench-release bench-smoke bench-scale bench-load bench-server bench-postgres compare report plot check-report clean

setup:
	@bash scripts/setup.sh

# valgrind before the build: the harness is built with its headers to count instructions.
setup-instructions:
	@bash scripts/setup.sh instructions

# Debian's chromium, for the HTML report's browser test (make check-report).
setup-browser:
	@bash scripts/setup.sh browser

# The library, then the harness (Benchmarks/Package.swift), without warnings.
build: setup
	@bash scripts/build-checked.sh
	@bash scripts/build-checked.sh --package-path Benchmarks

# The PostgreSQL adapter's tests (the conformance suite on a server, its own
# tests and crash tests) run on the server DAO_POSTGRES_URL names, or on a
# throwaway cluster scripts/test.sh starts and removes; POSTGRES=0 skips them.
# The library's tests, then the harness's (Benchmarks/Package.swift).
test: setup
	@bash scripts/build-checked.sh --build-tests
	@bash scripts/build-checked.sh --package-path Benchmarks --build-tests
	@SWIFT=$(SWIFT) bash scripts/test.sh

# `make docs`: the DocC catalogs of the library (Sources/*/*.docc), built with
# swift-docc-plugin into .build/docs/<target> by scripts/build-docs.sh, which
# fails on a broken link or symbol; then a check that every result table of
# the docs is the one scripts/doc-tables.py makes from results/*.csv.
docs: setup
	@bash scripts/build-docs.sh
	python3 scripts/doc-tables.py --check

# `make torture`: the crash and corruption tests (Tests/CrashTests) with many
# more cases than `make test` runs: 150 SIGKILLs per backend and every damage
# of every file. STORAGE_TORTURE_SEED=N repeats a run (the seed is printed first
# and with every failure); STORAGE_TORTURE_BACKENDS=lmdb,sqlite narrows it. Then the
# differential test (Tests/ConformanceTests/DifferentialTests.swift) with 200
# seeded rounds instead of 6; DAO_DIFFERENTIAL_SEED=N starts at another seed.
# Then the client trial's four-level warehouse run against its model
# (Tests/ClientTrialTests/RoundTripTests+Warehouse.swift) with 40 seeded rounds
# instead of 2; WAREHOUSE_TRIAL_SEED=N starts at another seed. Then the
# fifth domain's (logistics) run against its model with 20 seeded rounds
# instead of 1 (RoundTripTests+Logistics.swift; LOGISTICS_TRIAL_SEED=N), and
# the client trial's killed writers (DurabilityTests.swift), the logistics
# writer killed 40 times per backend instead of 4. Every part
# runs to its end; the output is kept in results/torture.log and summed up in
# results/torture.csv (scripts/torture.sh, scripts/torture-summary.py), which
# docs/CRASHES.md's table comes from; it fails on any crash, hang or failed part.
DIFFERENTIAL_ROUNDS ?= 200
WAREHOUSE_ROUNDS ?= 40
torture: setup
	@bash scripts/build-checked.sh --build-tests
	@SWIFT="$(SWIFT)" DIFFERENTIAL_ROUNDS=$(DIFFERENTIAL_ROUNDS) WAREHOUSE_ROUNDS=$(WAREHOUSE_ROUNDS) bash scripts/torture.sh

# Build output goes to standard error, so `make compare` prints only the comparison.
bench-release: setup
	@bash scripts/build-checked.sh --package-path Benchmarks -c release --product storage-bench >&2

bench: bench-release
	@$(BENCH) run $(BENCH_ARGS)
	@$(BENCH) load $(BENCH_LOAD_ARGS)
	@$(BENCH) report results/latest.csv --load results/load-latest.csv --output results/report.html --no-summary

bench-smoke: setup-instructions bench-release
	$(BENCH) run $(SMOKE_ARGS)

bench-scale: bench-release
	$(BENCH) run $(SCALE_ARGS)

bench-load: bench-release
	$(BENCH) load $(LOAD_ARGS)

bench-server: bench-release
	SWIFT="$(SWIFT)" SERVER_BENCH_ARGS="$(SERVER_BENCH_ARGS)" SERVER_LOAD_ARGS="$(SERVER_LOAD_ARGS)" \
		SERVER_BULK_ARGS="$(SERVER_BULK_ARGS)" bash scripts/bench-server.sh

bench-postgres: bench-release
	SWIFT="$(SWIFT)" POSTGRES_SMOKE_ARGS="$(POSTGRES_SMOKE_ARGS)" bash scripts/bench-postgres.sh

compare: bench-release
	@$(BENCH) compare $(BASELINE) $(CURRENT) --threshold $(THRESHOLD) $(COMPARE_ARGS)

report: bench-release
	@$(BENCH) report $(REPORT) $(if $(BASELINE_REPORT),--baseline $(BASELINE_REPORT))

plot: report

# `make check-report`: opens the smoke run's HTML report and a load run's
# (LOAD_REPORT, CI's tiny load run: .ci/run's `storage-bench load ... --output
# results/ci-load.csv`) in headless chromium and fails on a console error, a
# chart without its backends, or a blank page.
LOAD_REPORT ?= results/ci-load
check-report: setup-browser
	python3 scripts/check-report-html.py results/smoke.html --csv results/smoke.csv
	python3 scripts/check-report-html.py $(LOAD_REPORT).html --load-csv $(LOAD_REPORT).csv

clean:
	rm -rf .build Benchmarks/.build
