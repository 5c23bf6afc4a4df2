#!/usr/bin/env bash
# `make test` as a newcomer and CI meet it: a new clone of this checkout's committed HEAD
# in a private (0700) folder, with the project's images, image-build caches, the mypy cache
# and the sandbox runtime removed first, so that setup runs as on a fresh machine. Prints
# the setup and pytest times and the CPU seconds (user + sys of every process it waited
# for; the Docker daemon's containers are not among them).
#
#   bash scripts/rehearse-fresh.sh [LOG]      # LOG: default /tmp/gradlab-rehearsal.log
#   REV=9830d05 bash scripts/rehearse-fresh.sh   # an earlier commit (a "before" figure)
#
# It deletes machine-wide state (docker images gradlab-*, /opt/gradlab/sandbox-env,
# /var/cache/gradlab, ~/.cache/gradlab): run it on a machine that is only for this. Never
# edit this file while it runs (bash reads a script as it goes).
set -euo pipefail
cd "$(dirname "$0")/.."

LOG="${1:-/tmp/gradlab-rehearsal.log}"
REV="${REV:-HEAD}"
HOME_DIR="$(mktemp -d /tmp/gradlab-rehearsal.XXXXXX)"
chmod 0700 "$HOME_DIR"
CLONE="$HOME_DIR/private checkout"

say() { echo "[rehearse] $*" >&2; }
# The host's speed changes by the hour (up to 2x on the reference machine): a fixed amount
# of pure-Python work, timed before and after, tells a slow hour from a slow change.
probe() { /usr/bin/time -f '%e' python3 -c 'sum(i * i for i in range(10**7))' 2>&1; }
# The whole machine's busy CPU time (user, nice, system, irq, softirq, steal) in clock ticks,
# the Docker daemon's containers and every other process included.
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }

say "host-speed probe before: $(probe) s (about 1.1 s on a normal hour of the reference machine)"

say "removing the project's images, build caches, mypy cache and sandbox runtime"
if docker info >/dev/null 2>&1; then
  docker ps -aq --filter "label=gradlab.job" | xargs -r docker rm -f >/dev/null 2>&1 || true
  { docker images --format '{{.Repository}}:{{.Tag}}' | grep '^gradlab-' || true; } |
    xargs -r docker image rm -f >/dev/null
  docker builder prune -af >/dev/null 2>&1 || true
fi
rm -rf /opt/gradlab/sandbox-env /var/cache/gradlab "$HOME/.cache/gradlab"

say "cloning $REV ($(git rev-parse --short "$REV")) into $CLONE"
git clone -q "$PWD" "$CLONE"
git -C "$CLONE" checkout -q --detach "$(git rev-parse "$REV")"

say "running .ci/run (log: $LOG)"
started=$(date +%s)
busy_before=$(busy_ticks)
set +e
(cd "$CLONE" && CI=true /usr/bin/time -f 'rehearsal: %e s wall, %U s user, %S s sys' \
  bash .ci/run) >"$LOG" 2>&1
status=$?
set -e
ended=$(date +%s)
busy_after=$(busy_ticks)

pytest_s=$(grep -Eo '(passed|failed|error)[^=]* in [0-9.]+s' "$LOG" | grep -Eo '[0-9.]+s$' | tr -d s |
  awk '{total += $1} END {printf "%.0f", total}')
grep -E '^=+ .* in [0-9.]+s' "$LOG" | sed 's/^/[rehearse] pytest: /' >&2 || true
grep '^rehearsal:' "$LOG" | sed 's/^/[rehearse] /' >&2 || true
say "whole machine busy: $(( (busy_after - busy_before) / $(getconf CLK_TCK) )) CPU-s of $(( (ended - started) * $(nproc) )) (every process, containers included)"
say "host-speed probe after: $(probe) s"
say "whole .ci/run: $((ended - started)) s; pytest: ${pytest_s:-?} s; setup and lint: $((ended - started - ${pytest_s:-0})) s; exit $status"
rm -rf "$HOME_DIR"
exit "$status"
