# Sourced by the scripts that need a PostgreSQL server (.ci/run,
# scripts/test.sh, scripts/bench-server.sh, scripts/bench-postgres.sh), from
# the repository's root:
#
#   source scripts/throwaway-postgres.sh
#   throwaway_postgres [NAME]
#
# With NAME, says on stderr, under that name, which server is used. It
# does nothing when DAO_POSTGRES_URL names a server already; otherwise starts
# a throwaway cluster on 127.0.0.1 with `scripts/setup.sh postgres` (which
# installs Debian's postgresql when missing), exports DAO_POSTGRES_DIR and
# DAO_POSTGRES_URL, and stops and removes the cluster when the shell exits.
# Call it plainly (not after `if`, `||` or `&&`), so that `set -e` stops the
# caller when the cluster cannot start.
throwaway_postgres() {
    if [ -n "${DAO_POSTGRES_URL:-}" ]; then
        if [ -n "${1:-}" ]; then echo "$1: using the PostgreSQL server of DAO_POSTGRES_URL" >&2; fi
        return 0
    fi
    DAO_POSTGRES_DIR="$(mktemp -d /tmp/dao-postgres.XXXXXX)"
    export DAO_POSTGRES_DIR
    trap 'bash scripts/setup.sh postgres-stop "$DAO_POSTGRES_DIR"' EXIT
    DAO_POSTGRES_URL="$(bash scripts/setup.sh postgres)"
    export DAO_POSTGRES_URL
    if [ -n "${1:-}" ]; then echo "$1: started PostgreSQL at $DAO_POSTGRES_URL" >&2; fi
}
