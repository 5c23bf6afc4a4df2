#!/usr/bin/env bash
# The test suite against real services (make test runs the setup steps first).
# Extra arguments go to pytest: scripts/test.sh tests/platform -x -q
# The fast lane (make test-fast): scripts/test.sh -m "not sandbox and not docker and not browser and not worker and not processes and not heavy"
# On SQLite instead of PostgreSQL: scripts/test.sh --sqlite [pytest arguments] (below)
set -uo pipefail
cd "$(dirname "$0")/.."

export PYTHONPATH=platform:.
export DJANGO_SETTINGS_MODULE=config.settings.test
# Where PYTHONDONTWRITEBYTECODE is set (many CI and container images), each test process
# compiled our modules again and pytest rewrote the asserts of every test module and of
# its plugins' packages (hypothesis, schemathesis): the fast lane's collection took 18.5 s
# of CPU per process instead of 5. Their byte code is kept in a cache outside the checkout.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gradlab/pycache}"
fi
# pytest-django creates and drops test_gradlab next to this database.
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/gradlab}"
# --sqlite: make test's second pass, on `make run`'s embedded database (a SQLite file:
# test_gradlab.sqlite3_gwN beside TEST_SQLITE_DATABASE_URL's), without the slow parts
# (their worker processes share the PostgreSQL test database):
#   scripts/test.sh --sqlite -n 2 tests/platform tests/lti tests/integrations tests/reliability
if [ "${1:-}" = "--sqlite" ]; then
  shift
  export DATABASE_URL="${TEST_SQLITE_DATABASE_URL:-sqlite:///$PWD/var/test-sqlite/gradlab.sqlite3}"
  mkdir -p "$(dirname "${DATABASE_URL#sqlite://}")"
  set -- -m "not sandbox and not docker and not browser and not worker and (database or processes)" "$@"
fi
# Database 1: tests never share a queue with a `make run` on database 0.
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/1}"
export CELERY_BROKER_URL="$REDIS_URL"
# Tests that would skip for a missing Docker Engine or Chromium fail instead.
export GRADLAB_REQUIRE_DOCKER=1
export GRADLAB_REQUIRE_BROWSER=1

if [ $# -eq 0 ]; then set -- tests; fi
# The 25 slowest steps are printed at the end: where the suite's time goes.
.venv/bin/pytest --durations=25 "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
