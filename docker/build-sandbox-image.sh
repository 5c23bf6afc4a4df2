#!/usr/bin/env bash
# Builds the grading sandbox image offline (see docker/sandbox/Dockerfile).
#
#   bash docker/build-sandbox-image.sh            # builds gradlab-sandbox:latest if outdated
#   GRADLAB_DOCKER_BASE=python:3.11-slim bash docker/build-sandbox-image.sh   # with a registry
#
# Cached: the image carries a label with the hash of everything it is made of (the
# Dockerfile, requirements-sandbox.txt, grader/harness/, the base image id); when an image
# with that label exists the build is skipped. Prints the image reference on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
source docker/lib.sh

IMAGE_REPO="${GRADLAB_SANDBOX_REPO:-gradlab-sandbox}"
HARNESS_DIR="${GRADLAB_HARNESS_DIR:-grader/harness}"
WHEELS="$GRADLAB_BUILD_CACHE/wheels-sandbox"

[ -f "$HARNESS_DIR/main.py" ] || { log "no harness at $HARNESS_DIR/main.py"; exit 1; }
docker info >/dev/null 2>&1 || { log "Docker Engine not reachable (scripts/setup-docker.sh)"; exit 1; }

ensure_debian_base
base_id=$(base_image_id)
hash=$(content_hash docker/sandbox/Dockerfile requirements-sandbox.txt "$HARNESS_DIR" |
  { read -r h; echo "$h$base_id" | sha256sum | cut -c1-24; })

existing=$(image_with_label "$IMAGE_REPO" "org.gradlab.content=$hash")
if [ -n "$existing" ]; then
  docker tag "$existing" "$IMAGE_REPO:latest"
  echo "$IMAGE_REPO:latest"
  exit 0
fi

download_wheels "$WHEELS" requirements-sandbox.txt

context=$(mktemp -d /var/tmp/gradlab-sandbox-context.XXXXXX)
trap 'rm -rf "$context"' EXIT
cp -l -r "$WHEELS" "$context/wheels" 2>/dev/null || cp -r "$WHEELS" "$context/wheels"
rm -f "$context/wheels/.stamp"
cp requirements-sandbox.txt docker/sandbox/Dockerfile "$context/"
cp -r "$HARNESS_DIR" "$context/harness"
find "$context/harness" \( -name __pycache__ -o -name '*.pyc' \) -prune -exec rm -rf {} +

# torch's exact version (e.g. 2.13.0+cpu) from the wheel: part of the reference-cache key.
torch_version=$(find "$context/wheels" -name 'torch-*.whl' -printf '%f\n' | head -1 | cut -d- -f2)
[ -n "$torch_version" ] || { log "no torch wheel in $WHEELS"; exit 1; }

log "building $IMAGE_REPO:$hash (torch $torch_version) from $GRADLAB_DOCKER_BASE"
start=$(date +%s)
build_log="$GRADLAB_BUILD_CACHE/sandbox-build.log"
if ! docker build --build-arg "BASE=$GRADLAB_DOCKER_BASE" \
  --label "org.gradlab.content=$hash" --label "org.gradlab.role=sandbox-image" \
  --label "org.gradlab.torch=$torch_version" \
  -t "$IMAGE_REPO:$hash" -t "$IMAGE_REPO:latest" "$context" >"$build_log" 2>&1; then
  tail -30 "$build_log" >&2
  log "build failed (full log: $build_log)"
  exit 1
fi
# Older builds of this image are garbage now (the build-stage layers stay as cache).
docker image ls --filter "reference=$IMAGE_REPO" --filter "label=org.gradlab.role=sandbox-image" \
  --format '{{.Repository}}:{{.Tag}}' | grep -v -e ":$hash\$" -e ':latest$' |
  xargs -r docker rmi >/dev/null 2>&1 || true
docker image prune -f --filter "label=org.gradlab.role=sandbox-image" >/dev/null
log "built $IMAGE_REPO:$hash in $(($(date +%s) - start)) s," \
  "$(docker image inspect --format '{{.Size}}' "$IMAGE_REPO:latest" | awk '{printf "%.0f MB", $1/1e6}')"
echo "$IMAGE_REPO:latest"
