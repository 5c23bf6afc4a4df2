#!/usr/bin/env bash
# Builds the platform image (web + workers) offline (see docker/platform/Dockerfile).
#
#   bash docker/build-platform-image.sh      # builds gradlab-platform:latest if outdated
#
# The wheels come from `pip download` of requirements.lock minus what the platform never
# imports (torch and its dependencies, numpy, test and lint tools). Cached like the
# sandbox image: skipped when an image labelled with the same content hash exists.
# Prints the image reference on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
source docker/lib.sh

IMAGE_REPO="${GRADLAB_PLATFORM_REPO:-gradlab-platform}"
WHEELS="$GRADLAB_BUILD_CACHE/wheels-platform"
VENDOR=platform/web/static/web/vendor
# Not in the platform image: the sandbox runtime (torch and what only torch needs, numpy)
# and development tools. The worker never imports torch: the harness runs in the sandbox.
EXCLUDED='^(torch|numpy|sympy|mpmath|networkx|fsspec|filelock|jinja2|markupsafe|setuptools|playwright|greenlet|pyee|mypy|mypy-extensions|mypy_extensions|ruff|pytest|pytest-django|iniconfig|pluggy|pathspec)=='
APP_PATHS=(manage.py platform grader exercises)

docker info >/dev/null 2>&1 || { log "Docker Engine not reachable (scripts/setup-docker.sh)"; exit 1; }
if [ ! -f "$VENDOR/.stamp" ]; then
  log "front-end assets missing: running scripts/setup-browser.sh --assets-only"
  bash scripts/setup-browser.sh --assets-only >&2
fi

context=$(mktemp -d /var/tmp/gradlab-platform-context.XXXXXX)
trap 'rm -rf "$context"' EXIT
grep -v -i -E "$EXCLUDED" requirements.lock | grep -v -E '^\s*(#|$)' >"$context/requirements.txt"
# The app: tracked and not-ignored files only (no venvs, caches, local databases), plus
# the git-ignored front-end assets that setup-browser.sh fetched.
mkdir -p "$context/app"
{
  git ls-files -co --exclude-standard -- "${APP_PATHS[@]}"
  find "$VENDOR" -type f ! -name .stamp
} | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done |
  tar -c -T - | tar -C "$context/app" -x
cp docker/platform/entrypoint.sh "$context/app/docker-entrypoint.sh"
cp docker/platform/Dockerfile "$context/Dockerfile"

ensure_debian_base
base_id=$(base_image_id)
hash=$(
  cd "$context"
  content_hash Dockerfile requirements.txt app | { read -r h; echo "$h$base_id" | sha256sum | cut -c1-24; }
)
existing=$(image_with_label "$IMAGE_REPO" "org.gradlab.content=$hash")
if [ -n "$existing" ]; then
  docker tag "$existing" "$IMAGE_REPO:latest"
  echo "$IMAGE_REPO:latest"
  exit 0
fi

download_wheels "$WHEELS" "$context/requirements.txt"
cp -l -r "$WHEELS" "$context/wheels" 2>/dev/null || cp -r "$WHEELS" "$context/wheels"
rm -f "$context/wheels/.stamp"

log "building $IMAGE_REPO:$hash from $GRADLAB_DOCKER_BASE"
start=$(date +%s)
build_log="$GRADLAB_BUILD_CACHE/platform-build.log"
if ! docker build --build-arg "BASE=$GRADLAB_DOCKER_BASE" \
  --label "org.gradlab.content=$hash" --label "org.gradlab.role=platform-image" \
  -t "$IMAGE_REPO:$hash" -t "$IMAGE_REPO:latest" "$context" >"$build_log" 2>&1; then
  tail -30 "$build_log" >&2
  log "build failed (full log: $build_log)"
  exit 1
fi
docker image ls --filter "reference=$IMAGE_REPO" --filter "label=org.gradlab.role=platform-image" \
  --format '{{.Repository}}:{{.Tag}}' | grep -v -e ":$hash\$" -e ':latest$' |
  xargs -r docker rmi >/dev/null 2>&1 || true
docker image prune -f --filter "label=org.gradlab.role=platform-image" >/dev/null
log "built $IMAGE_REPO:$hash in $(($(date +%s) - start)) s," \
  "$(docker image inspect --format '{{.Size}}' "$IMAGE_REPO:latest" | awk '{printf "%.0f MB", $1/1e6}')"
echo "$IMAGE_REPO:latest"
