# shellcheck shell=bash
# shellcheck disable=SC2034  # THROWAWAY_* are set here for the scripts that source this file
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
# THROWAWAY_PG_DIR, THROWAWAY_PG_URL and THROWAWAY_PG_ADMIN_URL. PostgreSQL 15's defaults
# already make it a primary that standbys can stream from (wal_level replica, 10 WAL senders,
# 10 slots, initdb's pg_hba.conf trusts local replication connections); max_slot_wal_keep_size
# bounds the WAL that the slot of a stopped or forgotten standby holds (1GB, so
# pg_replication_slots.safe_wal_size is a number).
# Its superuser is `postgres`; the engine and the tests connect as `fulltime`, the role
# docs/operations.md ("The database role") asks for: LOGIN and pg_monitor, not a superuser, no
# CREATEDB or REPLICATION. What only an administrator may do (create a database, owned by
# `fulltime`; replication slots, base backups, settings per database) goes through
# THROWAWAY_PG_ADMIN_URL.
start_throwaway_pg() {
    local tuning="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if [ "${1:-}" = durable ]; then tuning=""; fi
    tuning="$tuning ${THROWAWAY_PG_EXTRA:-}"
    THROWAWAY_PG_DIR="$(mktemp -d /tmp/fulltime-pg.XXXXXX)"
    chmod 755 "$THROWAWAY_PG_DIR"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$THROWAWAY_PG_DIR"; fi
    as_pg_owner "$PG_BIN/initdb" -D "$THROWAWAY_PG_DIR/data" -U postgres --auth=trust \
        --encoding=UTF8 --locale=C.UTF-8 >"$THROWAWAY_PG_DIR/initdb.log" 2>&1 \
        || { cat "$THROWAWAY_PG_DIR/initdb.log" >&2; die "initdb failed"; }
    as_pg_owner "$PG_BIN/pg_ctl" -D "$THROWAWAY_PG_DIR/data" -l "$THROWAWAY_PG_DIR/server.log" \
        -w -t 60 start -o "-c listen_addresses='' -c unix_socket_directories='$THROWAWAY_PG_DIR' \
        -c max_connections=300 -c shared_buffers=256MB \
        -c idle_in_transaction_session_timeout=60s -c log_lock_waits=on \
        -c max_slot_wal_keep_size=1GB $tuning" >/dev/null \
        || { cat "$THROWAWAY_PG_DIR/server.log" >&2; die "the throwaway PostgreSQL did not start"; }
    THROWAWAY_PG_ADMIN_URL="host=$THROWAWAY_PG_DIR port=5432 user=postgres dbname=postgres"
    THROWAWAY_PG_URL="host=$THROWAWAY_PG_DIR port=5432 user=fulltime dbname=postgres"
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$THROWAWAY_PG_ADMIN_URL" \
        -c "CREATE ROLE fulltime LOGIN" -c "GRANT pg_monitor TO fulltime" >/dev/null \
        || die "could not create the role fulltime"
    log "throwaway PostgreSQL running in $THROWAWAY_PG_DIR"
}

# Runs a module of the benchmarks' Python package, tools/fulltime_bench (its README.md), with
# Debian's python3 in place of the calling script: fulltime_bench_exec MODULE ARGS...
fulltime_bench_exec() {
    local module="$1"
    shift
    PYTHONPATH="$FULLTIME_ROOT/tools${PYTHONPATH:+:$PYTHONPATH}" \
        exec /usr/bin/python3 -m "fulltime_bench.$module" "$@"
}

# Stops the throwaway cluster and its standbys (immediate mode: nothing in them is kept) and
# removes its directory, the standbys' with it.
stop_throwaway_pg() {
    if [ -n "${THROWAWAY_PG_DIR:-}" ] && [ -d "$THROWAWAY_PG_DIR/data" ]; then
        local standby
        for standby in "$THROWAWAY_PG_DIR"/standby.*/; do
            if [ -f "$standby/data/postmaster.pid" ]; then
                as_pg_owner "$PG_BIN/pg_ctl" -D "$standby/data" -m immediate -w stop \
                    >/dev/null 2>&1 || true
            fi
        done
        as_pg_owner "$PG_BIN/pg_ctl" -D "$THROWAWAY_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$THROWAWAY_PG_DIR"
    fi
}

# Starts a streaming hot standby of the running throwaway cluster in THROWAWAY_PG_DIR, in a new
# directory inside it (so that stop_throwaway_pg stops and removes it too) with its own Unix
# socket there. It is a base backup (pg_basebackup -R) with the primary's command-line settings
# (a hot standby needs max_connections and its kin at least the primary's), hot_standby on,
# max_standby_streaming_delay 1s (a query that holds replay back is cancelled soon, so tests see
# recovery conflicts), hot_standby_feedback off, and its position reported to the primary every
# second; all of it in its postgresql.conf, so a plain `pg_ctl start` starts it again. Options:
#   --slot            stream through a physical replication slot named after the standby, so
#                     pg_replication_slots shows its wal_status and safe_wal_size
#   --set NAME=VALUE  one more server setting (e.g. hot_standby_feedback=on); repeatable
# Returns once it accepts read-only connections. Sets THROWAWAY_STANDBY_DIR,
# THROWAWAY_STANDBY_URL (the engine's role), THROWAWAY_STANDBY_ADMIN_URL (the superuser: pausing
# replay needs it) and THROWAWAY_STANDBY_NAME (its application_name on the primary, in
# pg_stat_replication, and its slot's name).
start_throwaway_standby() {
    local slot="" settings=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --slot) slot=yes ;;
            --set) settings+=("${2:?--set needs NAME=VALUE}"); shift ;;
            *) die "start_throwaway_standby: unknown option $1" ;;
        esac
        shift
    done
    if [ -z "${THROWAWAY_PG_DIR:-}" ] || [ ! -f "$THROWAWAY_PG_DIR/data/postmaster.pid" ]; then
        die "start_throwaway_standby: no throwaway PostgreSQL runs in '${THROWAWAY_PG_DIR:-}'"
    fi
    local primary="host=$THROWAWAY_PG_DIR port=5432 user=postgres"
    local id
    id="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
    THROWAWAY_STANDBY_NAME="standby_$id"
    THROWAWAY_STANDBY_DIR="$THROWAWAY_PG_DIR/standby.$id"
    local dir="$THROWAWAY_STANDBY_DIR"
    mkdir -m 755 "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    # No fsync of the copy (-N): like the primary, a throwaway standby is never crash-safe.
    local backup=(-D "$dir/data" -R -X stream -N -c fast
                  -d "$primary application_name=$THROWAWAY_STANDBY_NAME")
    if [ -n "$slot" ]; then
        backup+=(-C -S "$THROWAWAY_STANDBY_NAME")
        echo "$THROWAWAY_STANDBY_NAME" >"$dir/slot"
    fi
    as_pg_owner "$PG_BIN/pg_basebackup" "${backup[@]}" >"$dir/basebackup.log" 2>&1 \
        || { cat "$dir/basebackup.log" >&2; die "pg_basebackup failed"; }
    # The primary's settings from its command line (start_throwaway_pg's), but where it listens.
    local mirrored
    mirrored="$("$PG_BIN/psql" -X -q -A -t -d "$primary dbname=postgres" -c "
        SELECT format('%s = ''%s''', name, replace(setting, '''', ''''''))
        FROM pg_settings
        WHERE (source = 'command line'
               AND name NOT IN ('listen_addresses', 'unix_socket_directories', 'port'))
           OR name IN ('max_connections', 'max_worker_processes', 'max_wal_senders',
                       'max_prepared_transactions', 'max_locks_per_transaction')
        ORDER BY name")" || die "could not read the primary's settings"
    local setting
    {
        echo
        echo "# The primary's command-line settings (start_throwaway_standby, scripts/lib.sh)."
        echo "$mirrored"
        echo "# The standby's own."
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        echo "port = 5432"
        echo "hot_standby = on"
        echo "max_standby_streaming_delay = 1s"
        echo "max_standby_archive_delay = 1s"
        echo "hot_standby_feedback = off"
        echo "wal_receiver_status_interval = 1s"
        for setting in "${settings[@]}"; do
            echo "${setting%%=*} = '${setting#*=}'"
        done
    } >>"$dir/data/postgresql.conf"
    # pg_ctl -w returns once the standby is consistent and admits read-only sessions.
    as_pg_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
        || { cat "$dir/server.log" >&2; die "the throwaway standby did not start"; }
    THROWAWAY_STANDBY_URL="host=$dir port=5432 user=fulltime dbname=postgres"
    THROWAWAY_STANDBY_ADMIN_URL="host=$dir port=5432 user=postgres dbname=postgres"
    local recovering
    recovering="$("$PG_BIN/psql" -X -A -t -d "$THROWAWAY_STANDBY_ADMIN_URL" \
                  -c 'SELECT pg_is_in_recovery()')" || true
    [ "$recovering" = t ] || die "the throwaway standby in $dir is not in recovery"
    log "throwaway standby $THROWAWAY_STANDBY_NAME running in $dir"
}

# Stops the standby in THROWAWAY_STANDBY_DIR (fast mode), drops its slot if it has one and the
# primary still runs, and removes its directory.
stop_throwaway_standby() {
    local dir="${THROWAWAY_STANDBY_DIR:-}"
    if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
        return 0
    fi
    as_pg_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    local primary_dir
    primary_dir="$(dirname "$dir")"
    if [ -f "$dir/slot" ] && [ -f "$primary_dir/data/postmaster.pid" ]; then
        # The primary's WAL sender ends a moment after the standby, and an active slot cannot
        # be dropped: try again while it is active, for at most 10 s.
        local primary="host=$primary_dir port=5432 user=postgres dbname=postgres"
        local name tries=100
        name="$(cat "$dir/slot")"
        while [ "$("$PG_BIN/psql" -X -A -t -d "$primary" -c "
                    SELECT CASE WHEN active THEN 'active'
                                ELSE pg_drop_replication_slot(slot_name)::text END
                    FROM pg_replication_slots WHERE slot_name = '$name'")" = active ]; do
            tries=$((tries - 1))
            if [ "$tries" -eq 0 ]; then
                log "slot $name is still active after 10 s: left on the primary"
                break
            fi
            sleep 0.1
        done
    fi
    rm -rf "$dir"
}
