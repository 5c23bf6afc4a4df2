#!/usr/bin/env bash
# The load test at the issue's scale against a whole private stack (scripts/run.sh on its
# own PostgreSQL database, a private redis-server this script can restart, a free port):
# COUNT submissions in a burst, KILLS SIGKILLs of busy pool processes, one broker restart
# (no persistence: queued messages are lost, the sweep must resend them), POLLERS status
# pollers. Prints loadtest.py's figures; exits 1 unless lost and graded twice are 0.
# Loopback only. Heavy: run it alone (flock /tmp/heavy-tests.lock on a shared machine).
#   bash scripts/loadtest-stack.sh            # 300 submissions, 20 kills, 50 pollers
#   COUNT=30 KILLS=3 POLLERS=5 bash scripts/loadtest-stack.sh
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${COUNT:-300}"
KILLS="${KILLS:-20}"
POLLERS="${POLLERS:-50}"
RESTART_AFTER="${RESTART_AFTER:-20}"
TIMEOUT="${TIMEOUT:-1500}"
PORT="${PORT:-8765}"
REDIS_PORT="${REDIS_PORT:-6391}"
DB="${LOADTEST_DB:-gradlab_loadtest}"
PG="${LOADTEST_PG:-postgres://postgres@127.0.0.1:5432}"
VAR="$(mktemp -d /tmp/gradlab-loadtest.XXXXXX)"
PY=.venv/bin/python
export PYTHONPATH=platform:.

redis_start() {
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir "$VAR" --daemonize yes --pidfile "$VAR/redis.pid" --logfile "$VAR/redis.log"
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
}
redis_stop() { redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true; }
stack_pid=""
cleanup() {
  [ -n "$stack_pid" ] && kill -TERM "$stack_pid" 2>/dev/null && wait "$stack_pid" 2>/dev/null
  redis_stop
}
trap cleanup EXIT

psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
redis_start
export DATABASE_URL="$PG/$DB" REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" PORT
export GRADLAB_VAR_DIR="$VAR" GRADLAB_RATE_LIMIT_COUNT=$((COUNT + 10)) WEB_WORKERS="${WEB_WORKERS:-3}"
setsid bash scripts/run.sh >"$VAR/stack.log" 2>&1 &
stack_pid=$!
for _ in $(seq 240); do grep -q "demo-learner" "$VAR/stack.log" && curl -fs "http://127.0.0.1:$PORT/healthz/live" >/dev/null && break; sleep 0.5; done
token=$(sed -n 's/.*username=demo-learner .*token=\([0-9a-f]*\).*/\1/p' "$VAR/stack.log" | head -1)
worker=$(pgrep -P "$stack_pid" -f "celery -A config.celery_app worker" | head -1 || true)
[ -n "$token" ] && [ -n "$worker" ] || { echo "the stack did not start:"; tail -40 "$VAR/stack.log"; exit 1; }
echo "stack up: web :$PORT, worker $worker, broker :$REDIS_PORT, logs $VAR/stack.log" >&2

"$PY" scripts/loadtest.py --url "http://127.0.0.1:$PORT" --token "$token" --count "$COUNT" \
  --kills "$KILLS" --pollers "$POLLERS" --timeout "$TIMEOUT" --worker-pid "$worker" \
  --worker-log "$VAR/stack.log" --restart-after "$RESTART_AFTER" \
  --restart-command "redis-cli -p $REDIS_PORT shutdown nosave >/dev/null 2>&1; sleep 2; redis-server --bind 127.0.0.1 --port $REDIS_PORT --save '' --appendonly no --dir $VAR --daemonize yes --pidfile $VAR/redis.pid --logfile $VAR/redis.log"
