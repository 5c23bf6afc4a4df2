#!/usr/bin/env bash
# Two virtual environments:
#   .venv          the platform (Django, Celery, grader, tests) from requirements.lock
#   .sandbox-env   the sandbox runtime: Debian's /usr/bin/python3 with torch and numpy only.
#                  It lives outside /root-only paths so the unprivileged sandbox user can run it,
#                  and it holds nothing of the platform's (a learner cannot import Django).
set -euo pipefail
cd "$(dirname "$0")/.."

need_python() {
  if ! command -v python3.11 >/dev/null 2>&1 && ! [ -x /usr/bin/python3.11 ]; then
    echo "Python 3.11 is required (Debian 12: apt-get install python3 python3-venv)" >&2
    exit 1
  fi
}

platform_venv() {
  local stamp=.venv/.lock-installed
  if [ -f "$stamp" ] && cmp -s requirements.lock "$stamp"; then return; fi
  [ -x .venv/bin/python ] || python3.11 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements.lock
  cp requirements.lock "$stamp"
}

sandbox_env() {
  local stamp=.sandbox-env/.installed
  if [ -f "$stamp" ] && cmp -s requirements-sandbox.txt "$stamp"; then return; fi
  local base=/usr/bin/python3.11
  if ! "$base" -c 'import ensurepip' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
      echo "python3-venv is missing: apt-get install python3-venv" >&2; exit 1
    fi
  fi
  rm -rf .sandbox-env
  "$base" -m venv .sandbox-env
  .sandbox-env/bin/pip install -q --upgrade pip
  .sandbox-env/bin/pip install -q -r requirements-sandbox.txt
  # The sandbox mounts this read-only: byte-compile now so imports need no writes.
  .sandbox-env/bin/python -m compileall -q -j 0 .sandbox-env/lib >/dev/null 2>&1 || true
  chmod -R a+rX .sandbox-env
  cp requirements-sandbox.txt "$stamp"
}

need_python
platform_venv
sandbox_env
