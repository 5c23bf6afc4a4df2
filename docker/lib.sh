#!/usr/bin/env bash
# Shared steps of the offline image builds (sourced by build-*-image.sh).
#
# No image registry is reachable on our machines, so the base image is a Debian rootfs
# made with debootstrap and imported with `docker import`, and Python packages come from
# a local wheel folder filled with `pip download` (PyPI and /opt/wheels are reachable).
# Where a registry IS reachable, set GRADLAB_DOCKER_BASE=python:3.11-slim and the
# debootstrap step is skipped.
set -euo pipefail

GRADLAB_DEBIAN_BASE="${GRADLAB_DEBIAN_BASE:-gradlab-debian-base:bookworm}"
GRADLAB_DOCKER_BASE="${GRADLAB_DOCKER_BASE:-$GRADLAB_DEBIAN_BASE}"
GRADLAB_BUILD_CACHE="${GRADLAB_BUILD_CACHE:-/var/cache/gradlab/docker}"
# Packages of the base: python3.11 with venv (ensurepip) and CA certificates; nothing else.
DEBIAN_BASE_PACKAGES="python3,python3-venv,ca-certificates"

log() { echo "[gradlab-docker] $*" >&2; }

build_lock() {
  # build_lock <name>: one build of an image at a time on this machine (tests, setup and
  # people may start the same build together); held until the script exits.
  mkdir -p "$GRADLAB_BUILD_CACHE"
  exec 9>"$GRADLAB_BUILD_CACHE/$1.lock"
  flock 9
}

debian_mirror() {
  # The Debian mirror apt itself uses for bookworm's main component, as apt reads its own
  # configuration (one-line .list and deb822 .sources files alike): no guess, no default.
  local uri
  uri=$(apt-get indextargets --no-release-info --format '$(RELEASE) $(COMPONENT) $(REPO_URI)' \
    'Identifier: Packages' 2>/dev/null | awk '$1 == "bookworm" && $2 == "main" { print $3; exit }')
  if [ -z "$uri" ]; then
    log "no Debian bookworm mirror in apt's configuration (apt-get indextargets lists none):" \
      "add one to /etc/apt/sources.list.d/, or set GRADLAB_DOCKER_BASE to a registry image"
    return 1
  fi
  echo "${uri%/}"
}

ensure_debian_base() {
  # Builds the debootstrap base image once; a no-op when the image exists or when
  # GRADLAB_DOCKER_BASE points at a registry image. Locked: builds may run together.
  [ "$GRADLAB_DOCKER_BASE" = "$GRADLAB_DEBIAN_BASE" ] || return 0
  mkdir -p "$GRADLAB_BUILD_CACHE"
  (
    flock 8
    docker image inspect "$GRADLAB_DEBIAN_BASE" >/dev/null 2>&1 && exit 0
    command -v debootstrap >/dev/null || {
      log "debootstrap is missing (apt-get install debootstrap), or set GRADLAB_DOCKER_BASE"
      exit 1
    }
    mirror=$(debian_mirror) || exit 1
    root=$(mktemp -d /var/tmp/gradlab-rootfs.XXXXXX)
    log "debootstrap bookworm into $root from $mirror (about a minute)"
    if ! debootstrap --variant=minbase --include="$DEBIAN_BASE_PACKAGES" bookworm "$root" \
      "$mirror" >"$root.log" 2>&1; then
      tail -20 "$root.log" >&2
      rm -rf "$root" "$root.log"
      exit 1
    fi
    # Trim what a runtime image never needs (apt lists, docs, man pages, locales).
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* \
      "$root"/usr/share/man/* "$root"/usr/share/info/*
    find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' \
      -exec rm -rf {} + 2>/dev/null || true
    tar -C "$root" -c . | docker import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
      - "$GRADLAB_DEBIAN_BASE" >/dev/null
    rm -rf "$root" "$root.log"
    log "imported $GRADLAB_DEBIAN_BASE"
  ) 8>"$GRADLAB_BUILD_CACHE/debian-base.lock"
}

base_image_id() {
  # The id of the base image, pulled first when it is a registry image not yet here.
  if ! docker image inspect "$GRADLAB_DOCKER_BASE" >/dev/null 2>&1; then
    docker pull -q "$GRADLAB_DOCKER_BASE" >/dev/null
  fi
  docker image inspect --format '{{.Id}}' "$GRADLAB_DOCKER_BASE"
}

# Bumped when the way wheels are downloaded changes: invalidates the wheel caches.
WHEELS_FORMAT=3

download_pip() {
  # pip evaluates environment markers with the interpreter it runs on, not the target's
  # (e.g. redis needs async-timeout only below Python 3.11.3, and bookworm has 3.11.2):
  # so download with Debian's own python3.11 where there is one, the base's interpreter.
  local venv="$GRADLAB_BUILD_CACHE/download-venv"
  if [ -x /usr/bin/python3.11 ] && [ "$GRADLAB_DOCKER_BASE" = "$GRADLAB_DEBIAN_BASE" ]; then
    [ -x "$venv/bin/pip" ] || /usr/bin/python3.11 -m venv "$venv" >&2
    echo "$venv/bin/pip"
  else
    echo "${GRADLAB_HOST_PIP:-.venv/bin/pip}"
  fi
}

download_wheels() {
  # download_wheels <dest> <requirements file>: binary wheels (with dependencies) for
  # CPython 3.11 on manylinux x86_64, from PyPI and the local /opt/wheels (PIP_FIND_LINKS).
  # Cached: skipped when <dest> was filled from the same requirements.
  local dest=$1 requirements=$2 stamp
  stamp=$( { echo "format $WHEELS_FORMAT"; cat "$requirements"; } | sha256sum | cut -c1-32)
  [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$stamp" ] && return 0
  log "downloading wheels for $requirements into $dest"
  find "$dest" -mindepth 1 ! -name README.md -delete 2>/dev/null || true
  mkdir -p "$dest"
  local pip
  pip=$(download_pip)
  # The filter drops the noise of a pip.conf naming file:// indexes that do not exist.
  "$pip" download -q --dest "$dest" --only-binary=:all: --python-version 3.11 \
    --implementation cp --abi cp311 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 -r "$requirements" \
    2> >(grep -v -e 'is ignored: it is neither a file nor a directory' >&2)
  echo "$stamp" >"$dest/.stamp"
}

content_hash() {
  # content_hash <file or dir>...: SHA-256 over sorted (path, bytes), stable across machines.
  # Skips what .dockerignore keeps out of the context (__pycache__, *.pyc).
  local f
  for f in "$@"; do
    if [ -d "$f" ]; then
      find "$f" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' | LC_ALL=C sort
    else
      echo "$f"
    fi
  done | while read -r path; do
    printf '%s\0' "$path"
    sha256sum <"$path" | cut -d' ' -f1
  done | sha256sum | cut -c1-32
}

build_image() {
  # build_image <repo> <hash> <dockerfile> <build args...>: docker build from the repo
  # root, tagged <repo>:<hash> and <repo>:latest, labelled with the content hash; then
  # older builds of <repo> are removed. The build output goes to a log file.
  local repo=$1 hash=$2 dockerfile=$3 role
  shift 3
  role=$(basename "$(dirname "$dockerfile")")-image
  local build_log="$GRADLAB_BUILD_CACHE/$role-build.log" start
  mkdir -p "$GRADLAB_BUILD_CACHE"
  log "building $repo:$hash from $GRADLAB_DOCKER_BASE (log: $build_log)"
  start=$(date +%s)
  # The build stage gets its own tag: it is the layer cache of the next build (a harness
  # change must not reinstall torch), and old ones become dangling and are pruned.
  if ! { docker build --force-rm -f "$dockerfile" --build-arg "BASE=$GRADLAB_DOCKER_BASE" \
    --build-arg PIP_OFFLINE=1 "$@" --target build --label "org.gradlab.role=$role-build" \
    -t "$repo-build:latest" . &&
    docker build --force-rm -f "$dockerfile" --build-arg "BASE=$GRADLAB_DOCKER_BASE" \
      --build-arg PIP_OFFLINE=1 "$@" --label "org.gradlab.content=$hash" \
      -t "$repo:$hash" -t "$repo:latest" .; } >"$build_log" 2>&1; then
    tail -30 "$build_log" >&2
    log "build of $repo failed (full log: $build_log)"
    return 1
  fi
  docker image ls --filter "reference=$repo" --format '{{.Repository}}:{{.Tag}}' |
    grep -v -e ":$hash\$" -e ':latest$' | xargs -r docker rmi >/dev/null 2>&1 || true
  docker image prune -f --filter "label=org.gradlab.role=$role" >/dev/null
  docker image prune -f --filter "label=org.gradlab.role=$role-build" >/dev/null
  log "built $repo:$hash in $(($(date +%s) - start)) s," \
    "$(docker image inspect --format '{{.Size}}' "$repo:latest" | awk '{printf "%.0f MB", $1/1e6}')"
}

image_with_label() {
  # image_with_label <repo> <label=value>: id of an image carrying that label, if any.
  docker image ls -q --filter "reference=$1" --filter "label=$2" | head -1
}
