#!/usr/bin/env bash
# Two virtual environments:
#   .venv          the platform (Django, Celery, grader, tests and tools) from
#                  requirements/dev.lock; no torch (the platform never imports it).
#                  --platform-only: just this one (make venv, make test-fast).
#   the sandbox runtime, at $GRADLAB_SANDBOX_RUNTIME (default /opt/gradlab/sandbox-env):
#                  Debian's /usr/bin/python3 with torch and numpy only. It lives at a neutral,
#                  world-readable place, never in the checkout (a clone in root's 0700 home
#                  would be unreadable to the unprivileged sandbox user), and it holds
#                  nothing of the platform's (a learner cannot import Django).
set -euo pipefail
cd "$(dirname "$0")/.."
SANDBOX_RUNTIME="${GRADLAB_SANDBOX_RUNTIME:-/opt/gradlab/sandbox-env}"

need_python() {
  if ! command -v python3.11 >/dev/null 2>&1 && ! [ -x /usr/bin/python3.11 ]; then
    echo "Python 3.11 is required (Debian 12: apt-get install python3 python3-venv)" >&2
    exit 1
  fi
}

platform_venv() {
  local lock=requirements/dev.lock stamp=.venv/.lock-installed
  if [ -f "$stamp" ] && cmp -s "$lock" "$stamp"; then return; fi
  [ -x .venv/bin/python ] || python3.11 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q "$(grep -i '^pip-tools==' "$lock")"
  # Exactly the lock: pip-sync also removes what it no longer lists.
  .venv/bin/pip-sync -q "$lock"
  cp "$lock" "$stamp"
}

sandbox_env() {
  local env=$SANDBOX_RUNTIME stamp=$SANDBOX_RUNTIME/.installed
  if [ -f "$stamp" ] && cmp -s requirements-sandbox.txt "$stamp"; then return; fi
  local base=/usr/bin/python3.11
  if ! "$base" -c 'import ensurepip' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
      echo "python3-venv is missing: apt-get install python3-venv" >&2; exit 1
    fi
  fi
  mkdir -p "$(dirname "$env")" || {
    echo "cannot create $(dirname "$env"): run as root, or set GRADLAB_SANDBOX_RUNTIME" >&2; exit 1
  }
  # Built beside the old one and swapped in: a running worker never sees a half-installed env.
  local next="$env.next"
  rm -rf "$next"
  "$base" -m venv "$next"
  "$next/bin/pip" install -q --upgrade pip
  "$next/bin/pip" install -q -r requirements-sandbox.txt
  # The sandbox mounts this read-only: byte-compile now so imports need no writes.
  "$next/bin/python" -m compileall -q -j 0 "$next/lib" >/dev/null 2>&1 || true
  cp requirements-sandbox.txt "$next/.installed"
  # Moved into place below: its bin/ scripts (pip...) keep the build path in their first
  # line, which nothing uses (the sandbox runs bin/python only).
  chmod -R a+rX,go-w "$next"
  chmod a+rx "$(dirname "$env")"
  rm -rf "$env.old"
  [ -e "$env" ] && mv "$env" "$env.old"
  mv "$next" "$env"
  rm -rf "$env.old"
}

need_python
platform_venv
if [ "${1:-}" != "--platform-only" ]; then sandbox_env; fi
