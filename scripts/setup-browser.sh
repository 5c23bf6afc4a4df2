#!/usr/bin/env bash
# Front-end assets and, for the browser tests, Debian's Chromium.
#
#   scripts/setup-browser.sh               assets + Chromium (apt, when root and missing)
#   scripts/setup-browser.sh --assets-only assets only (what `make run` needs)
#
# Assets come from npm (package.json / package-lock.json, exact versions, `npm ci
# --ignore-scripts`: no package's install script runs). The editors (CodeMirror 6:
# frontend/editor.js, Python, for the learner's page; frontend/authoring-editor.js,
# Python, Markdown and TOML, for the authoring pages) are bundled by esbuild
# (`npm run build:editor`); Chart.js and KaTeX are copied as published. All of it lands in platform/web/static/web/vendor/ (git-ignored,
# rebuilt whole), which the platform serves itself: no CDN at run time. Idempotent: a
# stamp of the lock file, the editors' sources and the copy list makes a second run a
# no-op. Never runs `playwright install`: the tests drive /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

VENDOR=platform/web/static/web/vendor
STAMP="$VENDOR/.stamp"
EDITOR_SOURCES=(frontend/*.js)
# under $VENDOR/, written by `npm run build:editor`
EDITOR_BUNDLES=(codemirror/editor.js codemirror/authoring-editor.js)

# source (under node_modules/) -> destination (under $VENDOR/); a folder is copied whole
ASSETS=(
  "chart.js/dist/chart.umd.min.js chart.js/chart.umd.min.js"
  "chart.js/dist/chart.umd.min.js.map chart.js/chart.umd.min.js.map"
  "chart.js/LICENSE.md chart.js/LICENSE.md"
  "katex/dist/katex.min.js katex/katex.min.js"
  "katex/dist/katex.min.css katex/katex.min.css"
  "katex/dist/contrib/auto-render.min.js katex/auto-render.min.js"
  "katex/dist/fonts katex/fonts"
  "katex/LICENSE katex/LICENSE"
)
# the packages bundled into the editor (patterns under node_modules/): their licences ship
# beside it
EDITOR_PACKAGES="@codemirror/* @lezer/* crelt style-mod w3c-keyname @marijn/find-cluster-break"

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
  { cat package.json package-lock.json "${EDITOR_SOURCES[@]}"; printf '%s\n' "${ASSETS[@]}"; } \
    | sha256sum | cut -d' ' -f1
}

all_copied() {
  local entry src dst bundle
  for bundle in "${EDITOR_BUNDLES[@]}"; do
    [ -s "$VENDOR/$bundle" ] || return 1
  done
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
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
  rm -rf "${VENDOR:?}"
  mkdir -p "$VENDOR"
  build_editor
  local entry src dst
  for entry in "${ASSETS[@]}"; do
    read -r src dst <<<"$entry"
    mkdir -p "$(dirname "$VENDOR/$dst")"
    cp -R "node_modules/$src" "$VENDOR/$dst"
  done
  echo "$want" >"$STAMP"
  echo "front-end assets built and copied into $VENDOR"
}

build_editor() {
  npm run --silent build:editor
  local licences
  licences="$PWD/$VENDOR/$(dirname "${EDITOR_BUNDLES[0]}")/LICENSES.txt"
  (
    cd node_modules
    # shellcheck disable=SC2086  # the patterns are meant to expand here
    for package in $EDITOR_PACKAGES; do
      printf '== %s ==\n\n' "$package"
      cat "$package/LICENSE"
      printf '\n'
    done
  ) >"$licences"
}

chromium() {
  if [ -x /usr/bin/chromium ]; then return; fi
  apt_install chromium fonts-liberation
  echo "installed Debian's chromium"
}

playwright_package() {
  if ! .venv/bin/python -c 'import playwright.sync_api' 2>/dev/null; then
    echo "the Playwright Python package is missing from .venv (make venv installs requirements/dev.lock)" >&2
    exit 1
  fi
}

assets
if [ "${1:-}" != "--assets-only" ]; then
  chromium
  playwright_package
fi
