#!/usr/bin/env bash
# Builds the platform image (web + workers) offline (see docker/platform/Dockerfile).
#
#   bash docker/build-platform-image.sh      # builds gradlab-platform:latest if outdated
#
# The wheels come from `pip download` of requirements/prod.lock (production's list: no torch,
# numpy, test or lint tools; docker/platform/not-in-image.txt still filters them out).
# Cached like the sandbox image: skipped when an image labelled with the
# same content hash exists. Prints the image reference on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
source docker/lib.sh

IMAGE_REPO="${GRADLAB_PLATFORM_REPO:-gradlab-platform}"
WHEELS=docker/wheels/platform
VENDOR=platform/web/static/web/vendor

docker info >/dev/null 2>&1 || { log "Docker Engine not reachable (scripts/setup-docker.sh)"; exit 1; }
build_lock "$IMAGE_REPO"
if [ ! -f "$VENDOR/.stamp" ]; then
  log "front-end assets missing: running scripts/setup-browser.sh --assets-only"
  bash scripts/setup-browser.sh --assets-only >&2
fi

ensure_debian_base
requirements=$(mktemp /var/tmp/gradlab-platform-requirements.XXXXXX)
trap 'rm -f "$requirements"' EXIT
grep -v -i -E -f docker/platform/not-in-image.txt requirements/prod.lock >"$requirements"
download_wheels "$WHEELS" "$requirements"
base_id=$(base_image_id)
hash=$(content_hash docker/platform requirements/prod.lock manage.py platform grader exercises \
  "$WHEELS/.stamp" | { read -r h; echo "$h$base_id" | sha256sum | cut -c1-24; })

existing=$(image_with_label "$IMAGE_REPO" "org.gradlab.content=$hash")
if [ -n "$existing" ]; then
  docker tag "$existing" "$IMAGE_REPO:latest"
  echo "$IMAGE_REPO:latest"
  exit 0
fi
build_image "$IMAGE_REPO" "$hash" docker/platform/Dockerfile
echo "$IMAGE_REPO:latest"
