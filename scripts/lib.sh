# Shared by the scripts in this folder: paths, privilege helpers, the throwaway PostgreSQL.
# Sourced, not run.

FULLTIME_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FULLTIME_BUILD_DIR="${FULLTIME_BUILD_DIR:-$FULLTIME_ROOT/build}"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Runs a command with root privileges: directly as root, else through sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Runs a PostgreSQL server binary: initdb and postgres refuse to run as root, so as root they
# run as the postgres user.
as_pg_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Starts a throwaway cluster in a new temporary directory, listening on a Unix socket only,
# tuned for tests (no fsync: the tests kill the engine, never PostgreSQL), or with PostgreSQL's
# durable defaults when the first argument is "durable" (benchmarks); either way with the private
# cluster's guard rails (idle_in_transaction_session_timeout, log_lock_waits: docs/config.md,
# "Guard rails at the peak"), so the engine's start-up check finds them. THROWAWAY_PG_EXTRA adds
# server options (e.g. "-c wal_compression=lz4", to compare settings in a benchmark). Sets
# THROWAWAY_PG_DIR and THROWAWAY_PG_URL.
start_throwaway_pg() {
    local tuning="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if [ "${1:-}" = durable ]; then tuning=""; fi
    tuning="$tuning ${THROWAWAY_PG_EXTRA:-}"
    THROWAWAY_PG_DIR="$(mktemp -d /tmp/fulltime-pg.XXXXXX)"
    chmod 755 "$THROWAWAY_PG_DIR"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$THROWAWAY_PG_DIR"; fi
    as_pg_owner "$PG_BIN/initdb" -D "$THROWAWAY_PG_DIR/data" -U fulltime --auth=trust \
        --encoding=UTF8 --locale=C.UTF-8 >"$THROWAWAY_PG_DIR/initdb.log" 2>&1 \
        || { cat "$THROWAWAY_PG_DIR/initdb.log" >&2; die "initdb failed"; }
    as_pg_owner "$PG_BIN/pg_ctl" -D "$THROWAWAY_PG_DIR/data" -l "$THROWAWAY_PG_DIR/server.log" \
        -w -t 60 start -o "-c listen_addresses='' -c unix_socket_directories='$THROWAWAY_PG_DIR' \
        -c max_connections=300 -c shared_buffers=256MB \
        -c idle_in_transaction_session_timeout=60s -c log_lock_waits=on $tuning" >/dev/null \
        || { cat "$THROWAWAY_PG_DIR/server.log" >&2; die "the throwaway PostgreSQL did not start"; }
    THROWAWAY_PG_URL="host=$THROWAWAY_PG_DIR port=5432 user=fulltime dbname=postgres"
    log "throwaway PostgreSQL running in $THROWAWAY_PG_DIR"
}

# Stops the throwaway cluster and removes its directory.
stop_throwaway_pg() {
    if [ -n "${THROWAWAY_PG_DIR:-}" ] && [ -d "$THROWAWAY_PG_DIR/data" ]; then
        as_pg_owner "$PG_BIN/pg_ctl" -D "$THROWAWAY_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$THROWAWAY_PG_DIR"
    fi
}
