#!/usr/bin/env bash
# Docker Engine and the offline-built images that the Docker tests and docker-compose.yml
# need. Idempotent and cached: a second run on the same machine takes a second or two.
#
#   bash scripts/setup-docker.sh            # engine + sandbox image + platform image
#   bash scripts/setup-docker.sh --engine   # only make sure the engine runs
#
# As root on Debian it installs docker.io (and docker-compose) when missing and starts
# dockerd in the background when it is not running (logs: /var/log/gradlab-dockerd.log).
# Elsewhere it says what is missing and stops.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKERD_LOG=/var/log/gradlab-dockerd.log
ENGINE_WAIT_S=60

say() { echo "[setup-docker] $*" >&2; }
die() {
  say "$*"
  exit 1
}

is_root_debian() { [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null; }

install_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  is_root_debian || die "missing: ${missing[*]}. Install them (Debian: apt-get install" \
    "${missing[*]}) or run this script as root on Debian."
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
}

cgroup_driver() {
  # cgroup v1 without systemd as init (containers, CI runners): cgroupfs.
  if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && [ -d /run/systemd/system ]; then
    echo systemd
  else
    echo cgroupfs
  fi
}

start_engine() {
  docker info >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ]; then
    die "the Docker Engine is not reachable and this is not root: start it" \
      "(sudo systemctl start docker) or add yourself to the docker group."
  fi
  if [ -d /run/systemd/system ] && systemctl start docker 2>/dev/null && docker info >/dev/null 2>&1; then
    return 0
  fi
  say "starting dockerd (log: $DOCKERD_LOG)"
  nohup dockerd --exec-opt "native.cgroupdriver=$(cgroup_driver)" >>"$DOCKERD_LOG" 2>&1 &
  local waited=0
  until docker info >/dev/null 2>&1; do
    sleep 1
    waited=$((waited + 1))
    if [ $waited -ge $ENGINE_WAIT_S ]; then
      tail -20 "$DOCKERD_LOG" >&2
      die "dockerd did not answer within ${ENGINE_WAIT_S} s (log: $DOCKERD_LOG)"
    fi
  done
}

install_packages
start_engine
[ "${1:-}" = --engine ] && exit 0
bash docker/build-sandbox-image.sh >/dev/null
bash docker/build-platform-image.sh >/dev/null
say "ready: $(docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' |
  grep -E '^gradlab-(sandbox|platform):latest' | tr '\n' ' ')"
