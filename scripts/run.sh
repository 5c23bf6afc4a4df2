#!/usr/bin/env bash
# Runs the platform in the foreground on embedded defaults (make run calls it after setup):
# migrations, exercises, demo accounts (tokens printed), Redis if none is reachable, a Celery
# worker for learners and one for instructors' jobs, the sweep scheduler (celery beat, restarted whenever it exits), and the web server
# on PORT. Each runs in its own process group; Ctrl-C or SIGTERM (also repeated, also while
# stopping) stops all of them, and so does the death of whatever started this script.
# Honours DATABASE_URL (default: SQLite in var/), REDIS_URL, PORT, HOST.
set -euo pipefail

# A shell cannot trap a signal that was ignored when it started, and whatever a
# non-interactive shell starts in the background (a script's `make run &`, a test suite
# started with `&`, as a CI job may be) starts with SIGINT ignored: Ctrl-C would then stop
# nothing. Such a start runs this script again, once, with SIGINT at its default (GNU env),
# so that the trap below sees it. The pid stays the same (exec).
sigint_ignored() {
  local mask
  mask=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$$/status" 2>/dev/null) || return 1
  [ -n "$mask" ] && (( (16#$mask & 2) != 0 ))
}
if [ -z "${GRADLAB_RUN_SIGINT_RESET:-}" ] && sigint_ignored \
  && env --default-signal=INT true 2>/dev/null; then
  exec env --default-signal=INT GRADLAB_RUN_SIGINT_RESET=1 bash "$0" "$@"
fi
unset GRADLAB_RUN_SIGINT_RESET

cd "$(dirname "$0")/.."

export PYTHONPATH=platform:.
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-config.settings.dev}"
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"
WEB_WORKERS="${WEB_WORKERS:-2}"
WORKER_CONCURRENCY="${WORKER_CONCURRENCY:-2}"
PRIVATE_REDIS_PORT="${PRIVATE_REDIS_PORT:-6390}"
PY=.venv/bin/python
VAR="${GRADLAB_VAR_DIR:-var}"
QUEUES="${GRADLAB_QUEUE_CPU:-grading},${GRADLAB_QUEUE_GPU:-grading-gpu}"
# Instructor jobs (validations, regrades) have a worker of their own: learners never wait
# behind them.
AUTHORING_QUEUE="${GRADLAB_QUEUE_AUTHORING:-authoring}"
# Keep one sandbox per worker process started and torch-imported before its job arrives
# (still one sandbox per job): feedback in about 0.5 s instead of 1.5 s.
export GRADLAB_SANDBOX_WARM="${GRADLAB_SANDBOX_WARM:-1}"
# Each worker process keeps a torch-loaded zygote that forks every CPU job into its own
# freshly isolated sandbox (docs/sandbox.md: "The zygote"); CUDA jobs keep the warm spare.
export GRADLAB_SANDBOX_ZYGOTE="${GRADLAB_SANDBOX_ZYGOTE:-1}"
mkdir -p "$VAR"

log() { echo "run: $*" >&2; }
groups=()  # process-group ids of everything started here

stop_all() {
  # A second Ctrl-C or SIGTERM while stopping must not leave the rest running.
  trap '' INT TERM
  trap - EXIT
  local pgid
  for pgid in "${groups[@]}"; do kill -TERM -- "-$pgid" 2>/dev/null || true; done
  for _ in $(seq 20); do
    local alive=0
    for pgid in "${groups[@]}"; do kill -0 -- "-$pgid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.5
  done
  for pgid in "${groups[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null || true; done
  log "stopped"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

start() {  # start <name> <command...>: in its own process group (stopped as a whole)
  local name=$1; shift
  setsid "$@" &
  groups+=("$!")
  log "started $name (process group $!)"
}

redis_ping() { "$PY" -c 'import sys, redis; redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1).ping()' "$1" >/dev/null 2>&1; }

ensure_redis() {
  local url="${REDIS_URL:-redis://127.0.0.1:6379/0}"
  if redis_ping "$url"; then export REDIS_URL="$url"; return; fi
  log "no Redis at $url: starting a private one on 127.0.0.1:$PRIVATE_REDIS_PORT"
  if ! command -v redis-server >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { log "redis-server is missing: apt-get install redis-server"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
  fi
  mkdir -p "$VAR/redis"
  start redis redis-server --bind 127.0.0.1 --port "$PRIVATE_REDIS_PORT" --dir "$(cd "$VAR/redis" && pwd)" \
    --save '' --appendonly no
  export REDIS_URL="redis://127.0.0.1:$PRIVATE_REDIS_PORT/0"
  for _ in $(seq 50); do redis_ping "$REDIS_URL" && return; sleep 0.2; done
  log "the private Redis did not start"; exit 1
}

wait_for_web() {
  for _ in $(seq 100); do
    "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
      "http://$HOST:$PORT/api/v1/schema/" >/dev/null 2>&1 && return 0
    sleep 0.3
  done
  return 1
}

# Started by something that died (a killed `make`, a closed terminal): stop, never orphan.
start watchdog bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; kill -TERM "$2"' \
  watchdog "$PPID" "$$"
ensure_redis
export CELERY_BROKER_URL="${CELERY_BROKER_URL:-$REDIS_URL}"

# migrate, load exercises/, collect static files (when changed), demo accounts (stdout)
accounts=$("$PY" manage.py prepare)

# No mingle or gossip (as in the Docker image): after a Redis restart, mingle's broadcast
# on the reconnected channel crashed the worker (kombu KeyError in on_readable; found by
# scripts/loadtest-stack.sh), and with it the whole `make run`.
start worker .venv/bin/celery -A config.celery_app worker -Q "$QUEUES" --hostname "grading@%h" \
  --concurrency "$WORKER_CONCURRENCY" --loglevel INFO --without-mingle --without-gossip
start authoring .venv/bin/celery -A config.celery_app worker -Q "$AUTHORING_QUEUE" \
  --hostname "authoring@%h" --concurrency 1 --loglevel INFO --without-mingle --without-gossip
# The scheduler of the recovery sweep, supervised: restarted a second after it exits, so
# that a single process death cannot stop the sweep (/healthz/ready tells when it did).
start beat bash -c 'while :; do "$@"; echo "run: beat exited ($?): restarting" >&2; sleep 1; done' \
  beat .venv/bin/celery -A config.celery_app beat --schedule "$VAR/celerybeat-schedule" \
  --loglevel INFO
# Threaded workers with a read timeout per client (config/gunicorn_conf.py): slow clients
# hold threads, not the site.
start web .venv/bin/gunicorn config.wsgi --config python:config.gunicorn_conf \
  --bind "$HOST:$PORT" --workers "$WEB_WORKERS" --access-logfile - --graceful-timeout 5

if ! wait_for_web; then log "the web server did not answer on http://$HOST:$PORT"; exit 1; fi
learner_token=$(echo "$accounts" | sed -n 's/.*username=demo-learner .*token=\([0-9a-f]*\).*/\1/p')
cat >&2 <<BANNER

gradlab is running on http://$HOST:$PORT/   (API: /api/v1/, docs: /api/v1/docs/)
database: ${DATABASE_URL:-sqlite $VAR/gradlab.sqlite3}   broker: $REDIS_URL
demo accounts (passwords are new on each start; tokens stay):
$(echo "$accounts" | sed 's/^/  /')

try:  curl -H "Authorization: Token $learner_token" http://$HOST:$PORT/api/v1/exercises/
Ctrl-C stops everything.

BANNER

# Foreground until Ctrl-C/SIGTERM, or until one of the services dies.
set +e
wait -n
status=$?
log "a service exited (status $status): stopping the rest"
exit "$status"
