# The project's entry points. Each target installs what it needs (scripts/setup.sh).
SWIFT ?= swift
BENCH_ARGS ?=

.PHONY: setup build test bench bench-smoke compare plot clean

setup:
	@bash scripts/setup.sh

build: setup
	@bash scripts/build-checked.sh

test: setup
	@bash scripts/build-checked.sh --build-tests
	$(SWIFT) test --skip-build

bench: setup
	@bash scripts/build-checked.sh -c release --product storage-bench
	$(SWIFT) run -c release --skip-build storage-bench $(BENCH_ARGS)

clean:
	rm -rf .build
