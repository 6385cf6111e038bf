#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the PostgreSQL adapter's tests.
#
#   scripts/setup.sh postgres              starts one, prints its URL on stdout
#   scripts/setup.sh postgres-stop DIR     stops the cluster in DIR and removes DIR
#
# Start installs Debian's postgresql when its binaries are missing, runs
# initdb into a fresh temporary directory (DAO_POSTGRES_DIR to choose it) as
# an unprivileged user (the `postgres` user when run as root), with UTF-8
# and the C locale, trust authentication on the local socket and on
# 127.0.0.1 only, and starts the server on a free port (DAO_POSTGRES_PORT to
# choose it). It prints `postgres://dao@127.0.0.1:PORT/dao`; the cluster's
# directory is on stderr and in the URL's companion file DIR/url, and
# DIR/ctl restarts or stops it (`DIR/ctl restart -m immediate`), which the
# crash tests use. Typical use:
#
#   export DAO_POSTGRES_URL=$(bash scripts/setup.sh postgres)
#   make test
#   bash scripts/setup.sh postgres-stop "$(dirname ...)"   # the directory it printed
set -euo pipefail

find_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  return 1
}

run_as() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

start() {
  local bin
  if ! bin=$(find_bin); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing postgresql" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
    bin=$(find_bin)
  fi
  local dir=${DAO_POSTGRES_DIR:-}
  if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/dao-postgres.XXXXXX)
  else
    mkdir -p "$dir"
  fi
  local port=${DAO_POSTGRES_PORT:-$(free_port)}
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  chmod 700 "$dir"
  run_as "$bin/initdb" -D "$dir/data" -U dao --auth=trust --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  run_as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300" start >&2 || {
    cat "$dir/server.log" >&2
    exit 1
  }
  run_as "$bin/psql" -h 127.0.0.1 -p "$port" -U dao -d postgres -q -c "CREATE DATABASE dao" >&2
  local url="postgres://dao@127.0.0.1:$port/dao"
  echo "$url" >"$dir/url"
  cat >"$dir/ctl" <<CTL
#!/usr/bin/env bash
# Runs pg_ctl on this cluster as its owner: \`$dir/ctl restart -m immediate\`.
if [ "\$(id -u)" -eq 0 ]; then
  exec runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300" "\$@"
fi
exec "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300" "\$@"
CTL
  chmod 755 "$dir/ctl"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/url" "$dir/ctl"
  echo "setup: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') running in $dir on 127.0.0.1:$port" >&2
  echo "$url"
}

stop() {
  local dir=${1:?usage: scripts/setup.sh postgres-stop DIR}
  [ -d "$dir/data" ] || { echo "setup: no cluster in $dir" >&2; exit 1; }
  local bin
  bin=$(find_bin)
  run_as "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
  rm -rf "$dir"
}

case "${1:-}" in
  postgres) start ;;
  postgres-stop) stop "${2:-}" ;;
  *) echo "usage: scripts/postgres.sh postgres | postgres-stop DIR" >&2; exit 64 ;;
esac
