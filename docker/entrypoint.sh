#!/bin/sh
# Container entrypoint: wait for the database, optionally migrate, then exec the command
# (by default `pgrecall serve`), so the server is the process that receives SIGTERM.
#
#   PGRECALL_DATABASE_URL      external PostgreSQL; unset = the embedded one in PGRECALL_HOME
#   PGRECALL_WAIT_TIMEOUT      seconds to wait for an external database (default 60)
#   PGRECALL_MIGRATE_ON_START  true: run `pgrecall migrate upgrade head` first (default false)
#   PGRECALL_AUTH_TOKEN        a bearer token to accept for PGRECALL_OWNER (registered once, by
#                              its hash; a token revoked with `pgrecall token revoke` stays revoked)
#   PGRECALL_PYTHON            interpreter with pgrecall installed (default python3)
set -eu

PYTHON="${PGRECALL_PYTHON:-python3}"

log() {
    echo "pgrecall-entrypoint: $*" >&2
}

# Only an external database can be "not up yet"; pgrecall starts the embedded one itself.
wait_for_database() {
    [ -n "${PGRECALL_DATABASE_URL:-}" ] || return 0
    timeout="${PGRECALL_WAIT_TIMEOUT:-60}"
    started=$(date +%s)
    # psycopg is already installed with pgrecall, so no psql/pg_isready is needed in the image.
    until "$PYTHON" -c 'import os, psycopg; psycopg.connect(os.environ["PGRECALL_DATABASE_URL"], connect_timeout=3).close()' 2>/dev/null; do
        if [ $(($(date +%s) - started)) -ge "$timeout" ]; then
            log "the database at PGRECALL_DATABASE_URL did not accept connections within ${timeout}s"
            # One more try with its error shown, so the log says why (the URL's password is not printed).
            "$PYTHON" -c 'import os, psycopg; psycopg.connect(os.environ["PGRECALL_DATABASE_URL"], connect_timeout=3).close()' || true
            exit 1
        fi
        sleep 1
    done
}

wait_for_database

case "$(echo "${PGRECALL_MIGRATE_ON_START:-false}" | tr '[:upper:]' '[:lower:]')" in
    true | 1 | yes)
        log "migrating: pgrecall migrate upgrade head"
        pgrecall migrate upgrade head
        ;;
    false | 0 | no | "") ;;
    *)
        log "PGRECALL_MIGRATE_ON_START must be true or false, got '${PGRECALL_MIGRATE_ON_START}'"
        exit 2
        ;;
esac

# `serve` on a non-loopback address refuses to start without a token. A deployment passes its
# token in the environment; only its SHA-256 is stored, as `pgrecall token create` does.
register_token() {
    [ -n "${PGRECALL_AUTH_TOKEN:-}" ] || return 0
    # Idempotent: a token already registered (or revoked on purpose) is left as it is.
    pgrecall token create --owner "${PGRECALL_OWNER:-default}" --name PGRECALL_AUTH_TOKEN \
        --from-env PGRECALL_AUTH_TOKEN
}

# Options alone (`docker run IMAGE --port 9000`) amend the default command: given after its
# defaults, they win (the last value of an option counts). Move the healthcheck with
# PGRECALL_HEALTHCHECK_URL when changing the port.
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
    set -- pgrecall serve --transport http --host 0.0.0.0 --port 8765 "$@"
fi

# Only the server needs the token (and `migrate` may run before the tokens table exists).
if [ "$1" = "pgrecall" ] && [ "${2:-}" = "serve" ]; then
    register_token
fi
# The server reads tokens from the database; keep the secret out of its environment.
unset PGRECALL_AUTH_TOKEN

exec "$@"
