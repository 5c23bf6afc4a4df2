#!/usr/bin/env bash
# Builds the grading sandbox image offline (see docker/sandbox/Dockerfile).
#
#   bash docker/build-sandbox-image.sh            # builds gradlab-sandbox:latest if outdated
#   GRADLAB_DOCKER_BASE=python:3.11-slim bash docker/build-sandbox-image.sh   # with a registry
#   bash docker/build-sandbox-image.sh --cuda     # gradlab-sandbox-cuda:latest for GPU workers
#
# --cuda: torch from PyPI (its Linux wheel is the CUDA build, with the nvidia-* wheels,
# several GB) instead of this machine's CPU wheel; needs PyPI once, then cached.
#
# Cached: the image carries a label with the hash of everything it is made of (the
# Dockerfile, requirements-sandbox.txt, grader/harness/, the base image id, the wheels);
# when an image with that label exists the build is skipped. Prints the image reference.
set -euo pipefail
cd "$(dirname "$0")/.."
source docker/lib.sh

VARIANT=cpu
[ "${1:-}" = --cuda ] && VARIANT=cuda
if [ "$VARIANT" = cuda ]; then
  IMAGE_REPO="${GRADLAB_SANDBOX_REPO:-gradlab-sandbox-cuda}"
  WHEELS=docker/wheels/sandbox-cuda
  # No local find-links (this machine's wheel is torch+cpu) and no pip.conf: PyPI only.
  export PIP_CONFIG_FILE=/dev/null
  unset PIP_FIND_LINKS
else
  IMAGE_REPO="${GRADLAB_SANDBOX_REPO:-gradlab-sandbox}"
  WHEELS=docker/wheels/sandbox
fi

[ -f grader/harness/main.py ] || { log "no harness at grader/harness/main.py"; exit 1; }
docker info >/dev/null 2>&1 || { log "Docker Engine not reachable (scripts/setup-docker.sh)"; exit 1; }
build_lock "$IMAGE_REPO"

ensure_debian_base
download_wheels "$WHEELS" requirements-sandbox.txt
base_id=$(base_image_id)
hash=$(content_hash docker/sandbox/Dockerfile requirements-sandbox.txt grader/harness "$WHEELS/.stamp" |
  { read -r h; echo "$h$base_id" | sha256sum | cut -c1-24; })

existing=$(image_with_label "$IMAGE_REPO" "org.gradlab.content=$hash")
if [ -n "$existing" ]; then
  docker tag "$existing" "$IMAGE_REPO:latest"
  echo "$IMAGE_REPO:latest"
  exit 0
fi

# torch's exact version (e.g. 2.13.0+cpu) from the wheel: checked in the build, kept as a label.
torch_version=$(find "$WHEELS" -name 'torch-*.whl' -printf '%f\n' | head -1 | cut -d- -f2)
[ -n "$torch_version" ] || { log "no torch wheel in $WHEELS"; exit 1; }
build_image "$IMAGE_REPO" "$hash" docker/sandbox/Dockerfile --build-arg "TORCH_VERSION=$torch_version" \
  --build-arg "WHEELS=$WHEELS"
echo "$IMAGE_REPO:latest"
