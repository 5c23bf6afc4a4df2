#!/usr/bin/env bash
# Front-end assets and, for the browser tests, Debian's Chromium.
#
#   scripts/setup-browser.sh               assets + Chromium (apt, when root and missing)
#   scripts/setup-browser.sh --assets-only assets only (what `make run` needs)
#
# Assets come from npm (package.json / package-lock.json, exact versions) and are copied
# into platform/web/static/web/vendor/ (git-ignored), which the platform serves itself:
# no CDN at run time. Idempotent: a stamp of the lock file and the copy list makes a
# second run a no-op. Never runs `playwright install`: the tests drive /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

VENDOR=platform/web/static/web/vendor
STAMP="$VENDOR/.stamp"

# source (under node_modules/) -> destination (under $VENDOR/); a folder is copied whole
ASSETS=(
  "codemirror/lib/codemirror.js codemirror/codemirror.js"
  "codemirror/lib/codemirror.css codemirror/codemirror.css"
  "codemirror/mode/python/python.js codemirror/mode/python.js"
  "codemirror/addon/edit/matchbrackets.js codemirror/addon/matchbrackets.js"
  "codemirror/addon/edit/closebrackets.js codemirror/addon/closebrackets.js"
  "codemirror/addon/selection/active-line.js codemirror/addon/active-line.js"
  "codemirror/LICENSE codemirror/LICENSE"
  "chart.js/dist/chart.umd.min.js chart.js/chart.umd.min.js"
  "chart.js/dist/chart.umd.min.js.map chart.js/chart.umd.min.js.map"
  "chart.js/LICENSE.md chart.js/LICENSE.md"
  "katex/dist/katex.min.js katex/katex.min.js"
  "katex/dist/katex.min.css katex/katex.min.css"
  "katex/dist/contrib/auto-render.min.js katex/auto-render.min.js"
  "katex/dist/fonts katex/fonts"
  "katex/LICENSE katex/LICENSE"
)

as_root() { [ "$(id -u)" = 0 ]; }

apt_install() {
  if as_root && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
      || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
  else
    echo "missing: $* (as root: apt-get install $*)" >&2
    exit 1
  fi
}

wanted_stamp() {
  { cat package.json package-lock.json; printf '%s\n' "${ASSETS[@]}"; } | sha256sum | cut -d' ' -f1
}

all_copied() {
  local entry src dst
  for entry in "${ASSETS[@]}"; do
    read -r src dst <<<"$entry"
    [ -e "$VENDOR/$dst" ] || return 1
  done
}

assets() {
  local want
  want=$(wanted_stamp)
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && all_copied; then return; fi
  command -v npm >/dev/null || apt_install npm
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  local entry src dst
  for entry in "${ASSETS[@]}"; do
    read -r src dst <<<"$entry"
    mkdir -p "$(dirname "$VENDOR/$dst")"
    rm -rf "${VENDOR:?}/$dst"
    cp -R "node_modules/$src" "$VENDOR/$dst"
  done
  echo "$want" >"$STAMP"
  echo "front-end assets copied into $VENDOR"
}

chromium() {
  if [ -x /usr/bin/chromium ]; then return; fi
  apt_install chromium fonts-liberation
  echo "installed Debian's chromium"
}

playwright_package() {
  if ! .venv/bin/python -c 'import playwright.sync_api' 2>/dev/null; then
    echo "the Playwright Python package is missing from .venv (make setup installs requirements.lock)" >&2
    exit 1
  fi
}

assets
if [ "${1:-}" != "--assets-only" ]; then
  chromium
  playwright_package
fi
