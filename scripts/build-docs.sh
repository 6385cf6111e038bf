#!/usr/bin/env bash
# Builds the DocC documentation of the library (Sources/*/*.docc) with
# swift-docc-plugin into .build/docs/<target>, and fails on a broken link or
# symbol reference: DAOCore with --warnings-as-errors; the adapters through
# scripts/check-docs.py, which fails on every diagnostic but one kind, a
# reference in an adapter's Swift source to a DAOCore type (``StorageError``),
# which DocC cannot resolve when it builds one module's documentation.
#
#   bash scripts/build-docs.sh [TARGET...]   # default: every catalog
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(DAOCore SQLiteStorage LMDBStorage FileStorage PostgresStorage)
mkdir -p .build/docs
diagnostics=()
for target in "${targets[@]}"; do
  flags=()
  [ "$target" = DAOCore ] && flags+=(--warnings-as-errors)
  rm -f ".build/docs/$target-diagnostics.json"
  echo "docs: $target" >&2
  swift package --allow-writing-to-directory .build/docs generate-documentation \
    --target "$target" --output-path ".build/docs/$target" \
    --diagnostics-file ".build/docs/$target-diagnostics.json" "${flags[@]}"
  diagnostics+=(".build/docs/$target-diagnostics.json")
done
python3 scripts/check-docs.py "${diagnostics[@]}"
