#!/usr/bin/env bash
# `make torture`: the crash, damage and differential tests and the two client
# trials with many more cases than `make test` runs (the Makefile's comment
# says how many), each part run to its end even when one before it failed,
# their output kept in results/torture.log, and their outcomes summed up in
# results/torture.csv by scripts/torture-summary.py (docs/CRASHES.md's table
# comes from it). The test build must be current (the Makefile builds it).
#
# STORAGE_TORTURE_SEED=N repeats a run; without it the seed is the clock's
# milliseconds, set here so that every part and the summary use the same one.
set -uo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
export STORAGE_TORTURE_SEED=${STORAGE_TORTURE_SEED:-$(date +%s%3N)}
log=results/torture.log
mkdir -p results
: > "$log"
status=0
part() {
    echo "\$ $*" | tee -a "$log"
    env "$@" 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
echo "torture seed $STORAGE_TORTURE_SEED" | tee -a "$log"
part STORAGE_TORTURE=1 "$SWIFT" test --skip-build --filter CrashTests
part DAO_DIFFERENTIAL_ROUNDS="${DIFFERENTIAL_ROUNDS:-200}" "$SWIFT" test --skip-build --filter DifferentialTests
part WAREHOUSE_TRIAL_ROUNDS="${WAREHOUSE_ROUNDS:-40}" "$SWIFT" test --skip-build --filter 'RoundTripTests/WarehouseDomain/'
part STORAGE_TORTURE=1 "$SWIFT" test --skip-build --filter 'RoundTripTests/LogisticsDomain/|DurabilityTests'
python3 scripts/torture-summary.py "$log" || status=1
exit $status
