#!/usr/bin/env bash
# Brings up what `make run`, `make test` and `.ci/run` need: PostgreSQL on 127.0.0.1:5432 and
# RabbitMQ on 127.0.0.1:5672. Idempotent: when both already accept connections it does nothing.
#
# For each service, in order:
#   1. accepting connections already -> nothing to do;
#   2. installed but stopped -> start it (PostgreSQL: `pg_ctlcluster --skip-systemctl-redirect
#      <version> main start` for every cluster; RabbitMQ: `rabbitmq-server -detached`, then
#      `rabbitmqctl await_startup`);
#   3. missing, on Debian or Ubuntu -> `apt-get install` it (as root, or through sudo), then 2.
#      A PostgreSQL cluster this script installed is set up the way the suite logs in: loopback
#      connections trusted (`host all all 127.0.0.1/32 trust`, and ::1), never on another
#      address; an existing cluster's authentication is never changed;
#   4. otherwise -> one line saying exactly what to install, and exit 1.
# Then it waits (at most 120 s each) until both accept connections, and checks that the
# `postgres` role logs in over TCP without a password; a failure is one line saying what to do.
set -euo pipefail

log() { printf '[services] %s\n' "$*"; }
fail() { printf '[services] %s\n' "$*" >&2; exit 1; }

PG_PORT=5432
AMQP_PORT=5672

accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        return 127
    fi
}

debian_like() {
    [ -r /etc/os-release ] && grep -Eqi '^(ID|ID_LIKE)=.*(debian|ubuntu)' /etc/os-release &&
        command -v apt-get >/dev/null 2>&1
}

apt_install() {
    log "installing $* with apt-get"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null ||
        fail "apt-get update failed: run as root or install sudo, then: apt-get install -y $*"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null ||
        fail "apt-get install failed: install these yourself: $*"
}

wait_for() { # port name
    for _ in $(seq 1 120); do
        accepts "$1" && return 0
        sleep 1
    done
    fail "$2 did not accept connections on 127.0.0.1:$1 within 120 s"
}

pg_installed() { command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; }

trust_loopback() { # cluster config folder
    local hba="$1/pg_hba.conf"
    grep -q '^# baton: loopback trust' "$hba" 2>/dev/null && return 0
    log "trusting loopback connections in $hba (a cluster this script installed)"
    as_root sh -c "tmp=\$(mktemp) && { printf '%s\n' '# baton: loopback trust (scripts/services-up.sh)' \
        'host all all 127.0.0.1/32 trust' 'host all all ::1/128 trust'; cat '$hba'; } > \"\$tmp\" \
        && cat \"\$tmp\" > '$hba' && rm -f \"\$tmp\""
}

postgres_up() {
    if accepts "$PG_PORT"; then
        return 0
    fi
    local installed_now=0
    if ! pg_installed; then
        debian_like || fail "PostgreSQL is missing: install PostgreSQL (server) listening on 127.0.0.1:$PG_PORT with a passwordless 'postgres' superuser over TCP"
        apt_install postgresql
        installed_now=1
    fi
    local version
    for version in $(ls /etc/postgresql); do
        if [ "$installed_now" -eq 1 ]; then
            trust_loopback "/etc/postgresql/$version/main"
        fi
        log "starting PostgreSQL $version"
        as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start 2>/dev/null || true
        if [ "$installed_now" -eq 1 ]; then
            # apt may have started it before the trust lines were written.
            as_root pg_ctlcluster --skip-systemctl-redirect "$version" main reload 2>/dev/null || true
        fi
    done
    wait_for "$PG_PORT" PostgreSQL
}

rabbitmq_up() {
    if accepts "$AMQP_PORT"; then
        return 0
    fi
    if ! command -v rabbitmq-server >/dev/null 2>&1 && ! [ -x /usr/sbin/rabbitmq-server ]; then
        debian_like || fail "RabbitMQ is missing: install rabbitmq-server listening on 127.0.0.1:$AMQP_PORT (user guest/guest)"
        apt_install rabbitmq-server
    fi
    export PATH="$PATH:/usr/sbin"
    if ! as_root rabbitmqctl -q status >/dev/null 2>&1; then
        log "starting RabbitMQ"
        as_root rabbitmq-server -detached >/dev/null 2>&1 || true
        as_root timeout 120 rabbitmqctl -q await_startup >/dev/null 2>&1 ||
            fail "RabbitMQ did not start: see 'rabbitmqctl status'"
    fi
    wait_for "$AMQP_PORT" RabbitMQ
}

postgres_login() {
    command -v psql >/dev/null 2>&1 || return 0
    psql -w -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1 ||
        fail "PostgreSQL on 127.0.0.1:$PG_PORT refuses user 'postgres' without a password: add 'host all all 127.0.0.1/32 trust' to pg_hba.conf and reload, or set BATON_DATABASE_URL and BATON_TEST_DATABASE_URL"
}

postgres_up
rabbitmq_up
postgres_login
log "PostgreSQL on 127.0.0.1:$PG_PORT and RabbitMQ on 127.0.0.1:$AMQP_PORT accept connections"
