#!/usr/bin/env bash
# The SQL of every context (the services registry, usage, triage, notify, closer and
# provenance, and the gateway) is checked at build time by sqlx's query macros (`sqlx::query!`,
# `query_as!`, `query_scalar!`). A build reads the description of each statement from `.sqlx/` at the workspace root (the Makefile, `.ci/run` and the Dockerfile build
# with `SQLX_OFFLINE=true`), so no build needs a database. This script makes that data from the
# migrations themselves:
#
#   scripts/sqlx-data.sh write   after changing a query or a migration: rewrites .sqlx/
#   scripts/sqlx-data.sh check   (CI) fails when .sqlx/ is not what the migrations and the
#                                queries give today, naming the files that differ
#
# Either way it starts a private PostgreSQL cluster (initdb into a temporary folder, a free port
# on 127.0.0.1; as root it runs as the `postgres` user), so the roles the migrations grant to are
# created there and never on the shared cluster the tests use. It creates each context's schema
# and those roles, applies the context's migrations in order with psql, and type-checks the
# workspace against it with SQLX_OFFLINE_DIR pointing at a fresh folder, which is where sqlx's
# macros write what they described. No sqlx-cli is needed: the macros write the data
# themselves. The cluster is stopped and removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-check}"
case "$mode" in
write | check) ;;
*)
    echo "usage: scripts/sqlx-data.sh write|check" >&2
    exit 2
    ;;
esac

log() { printf '[sqlx-data] %s\n' "$*"; }

bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$bin/initdb" ] || {
    echo "[sqlx-data] no initdb under /usr/lib/postgresql/*/bin: run scripts/services-up.sh" >&2
    exit 1
}
scratch="$(mktemp -d /tmp/baton-sqlx-XXXXXX)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_cluster_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[ "$(id -u)" -ne 0 ] || chown postgres:postgres "$scratch"
stop_cluster() {
    as_cluster_owner "$bin/pg_ctl" -D "$scratch/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap stop_cluster EXIT
as_cluster_owner "$bin/initdb" -D "$scratch/data" -U postgres --auth=trust --no-sync >/dev/null
as_cluster_owner "$bin/pg_ctl" -D "$scratch/data" -w -l "$scratch/log" \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $scratch -c fsync=off" start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres"
# Each context's schema and the folder of its migrations.
contexts=(registry usage triage notify closer provenance gateway)
migrations_of() {
    if [ "$1" = gateway ]; then echo gateway/migrations; else echo "services/$1/migrations"; fi
}

psql_quiet() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

for context in "${contexts[@]}"; do
    migrations="$(migrations_of "$context")"
    for role in $(grep -ohE '\bTO baton_[a-z_]+' "$migrations/"*.sql |
        awk '{print $2}' | sort -u); do
        psql_quiet "$url" -c "CREATE ROLE $role NOLOGIN"
    done
    psql_quiet "$url" -c "CREATE SCHEMA $context"
    for migration in "$migrations/"*.sql; do
        psql_quiet "$url" -1 -f "$migration"
    done
done
log "migrations of ${contexts[*]} applied to a private cluster on port $port"

described="$scratch/described"
mkdir "$described"
# The macros run again only when their crate is compiled again. The whole workspace with every
# target, as `make lint` checks it: a narrower selection resolves other features and would
# compile the dependencies again.
touch services/registry/src/lib.rs services/usage/src/lib.rs services/triage/src/lib.rs \
    services/notify/src/lib.rs services/closer/src/lib.rs \
    services/provenance/src/lib.rs gateway/src/lib.rs services/kit/src/lib.rs
SQLX_OFFLINE=false DATABASE_URL="$url" SQLX_OFFLINE_DIR="$described" \
    cargo check -q --workspace --all-targets
log "$(find "$described" -name 'query-*.json' | wc -l) statements described"

if [ "$mode" = write ]; then
    rm -rf .sqlx
    mkdir .sqlx
    cp "$described"/query-*.json .sqlx/
    log ".sqlx/ rewritten"
elif ! diff -rq "$described" .sqlx >&2; then
    log ".sqlx/ is not what the queries and migrations give: run scripts/sqlx-data.sh write" >&2
    exit 1
else
    log ".sqlx/ matches the queries and the migrations"
fi
