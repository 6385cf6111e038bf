#!/usr/bin/env bash
# Installs what the project needs on a Debian or Ubuntu machine, only when it is
# missing: the C libraries behind the SQLite and LMDB adapters (and pkg-config to
# find them). `scripts/setup.sh instructions` installs valgrind (whose headers
# the harness is built with, to count instructions under callgrind) and
# binutils (objcopy); `scripts/setup.sh browser` installs Debian's chromium,
# which scripts/check-report-html.py opens the HTML report in, headless.
# `scripts/setup.sh postgres` starts a throwaway PostgreSQL cluster and prints
# its URL; `scripts/setup.sh postgres-stop DIR` stops it (scripts/postgres.sh).
set -euo pipefail

case "${1:-}" in
  postgres|postgres-stop) exec bash "$(dirname "$0")/postgres.sh" "$@" ;;
esac

need=()
packages=(libsqlite3-dev liblmdb-dev pkg-config)
[ "${1:-}" = "instructions" ] && packages+=(valgrind binutils)
[ "${1:-}" = "browser" ] && packages+=(chromium)
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done

if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: please install ${need[*]} (no apt-get on this machine)" >&2
    exit 1
  fi
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "setup: no 'swift' on PATH; install Swift 6 (https://www.swift.org/install) or add its bin folder to PATH" >&2
  exit 1
fi
