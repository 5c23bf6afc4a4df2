#!/usr/bin/env bash
# PostgreSQL (127.0.0.1:5432, user postgres without password, database gradlab) and Redis
# (127.0.0.1:6379) reachable for the test suite. Installs them with apt when missing (as
# root), starts them when installed but down. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_HOST=127.0.0.1
PG_PORT=5432
REDIS_PORT=6379
WAIT_SECONDS=30

log() { echo "setup-services: $*" >&2; }
is_root() { [ "$(id -u)" = 0 ]; }

apt_install() {
  is_root && command -v apt-get >/dev/null 2>&1 || { log "install $* (needs root and apt-get)"; exit 1; }
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
    || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
}

wait_for() {  # wait_for <description> <command...>
  local what=$1; shift
  for _ in $(seq "$WAIT_SECONDS"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  log "$what did not come up within ${WAIT_SECONDS}s"; exit 1
}

# -- PostgreSQL ----------------------------------------------------------------------------
pg_up() { pg_isready -q -h "$PG_HOST" -p "$PG_PORT"; }
pg_trusts_postgres() { psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -w -d postgres -Atc 'select 1'; }

pg_start() {
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    local version cluster
    while read -r version cluster _; do
      pg_ctlcluster "$version" "$cluster" start 2>/dev/null || true
    done < <(pg_lsclusters -h 2>/dev/null)
  fi
  pg_up || service postgresql start >/dev/null 2>&1 || true
}

pg_trust_local_postgres() {
  # Tests connect as postgres without a password: trust it on the loopback address only.
  local hba
  hba=$(su postgres -c "psql -Atc 'show hba_file'")
  if ! grep -q '^host all postgres 127.0.0.1/32 trust' "$hba"; then
    log "trusting user postgres on 127.0.0.1 in $hba"
    sed -i '1i host all postgres 127.0.0.1/32 trust' "$hba"
    su postgres -c "psql -Atc 'select pg_reload_conf()'" >/dev/null
  fi
}

setup_postgres() {
  command -v pg_isready >/dev/null 2>&1 || apt_install postgresql postgresql-client
  pg_up || { log "starting PostgreSQL"; pg_start; }
  wait_for "PostgreSQL on $PG_HOST:$PG_PORT" pg_up
  pg_trusts_postgres >/dev/null 2>&1 || { is_root && pg_trust_local_postgres; }
  wait_for "PostgreSQL login as postgres" pg_trusts_postgres
  if [ -z "$(psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -w -d postgres -Atc \
      "select 1 from pg_database where datname = 'gradlab'")" ]; then
    psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -w -d postgres -qc 'create database gradlab'
  fi
  log "PostgreSQL ready on $PG_HOST:$PG_PORT"
}

# -- Redis ---------------------------------------------------------------------------------
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; }

setup_redis() {
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  if ! redis_up; then
    log "starting Redis"
    service redis-server start >/dev/null 2>&1 || true
    redis_up || redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" \
      --dir /tmp --save '' --appendonly no >/dev/null
  fi
  wait_for "Redis on 127.0.0.1:$REDIS_PORT" redis_up
  log "Redis ready on 127.0.0.1:$REDIS_PORT"
}

setup_postgres
setup_redis
