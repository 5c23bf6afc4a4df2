#!/usr/bin/env bash
# The local sandbox backend's prerequisites (grader/sandbox/bubblewrap.py):
#   - bubblewrap (bwrap), and util-linux's setpriv/prlimit;
#   - libseccomp's Python bindings (python3-seccomp, for the system python), with which the
#     worker compiles the sandbox's seccomp filter (grader/sandbox/syscalls.py);
#   - the unprivileged host user the worker drops to before it starts bwrap (started by
#     root, bwrap would map the sandbox's user to root on the host);
#   - a smoke test: bwrap can create its namespaces as that user and run the sandbox runtime.
# Idempotent. Installs and creates only when run as root; otherwise says what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SANDBOX_USER="${GRADLAB_SANDBOX_USER:-gradlab-sandbox}"
RUNTIME="${GRADLAB_SANDBOX_RUNTIME:-/opt/gradlab/sandbox-env}"
is_root() { [ "$(id -u)" = 0 ]; }
missing=()

need_command() {  # need_command <binary> <debian package>
  command -v "$1" >/dev/null 2>&1 && return
  if is_root && command -v apt-get >/dev/null 2>&1; then
    echo "setup-sandbox: installing $2" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null \
      || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }
  fi
  command -v "$1" >/dev/null 2>&1 || missing+=("$1 (Debian package $2)")
}

need_seccomp() {
  /usr/bin/python3 -c 'import seccomp' 2>/dev/null && return
  if is_root && command -v apt-get >/dev/null 2>&1; then
    echo "setup-sandbox: installing python3-seccomp" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-seccomp >/dev/null \
      || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-seccomp >/dev/null; }
  fi
  /usr/bin/python3 -c 'import seccomp' 2>/dev/null || missing+=("libseccomp's Python bindings (Debian package python3-seccomp)")
}

need_user() {
  id -u "$SANDBOX_USER" >/dev/null 2>&1 && return
  if is_root; then
    echo "setup-sandbox: creating system user $SANDBOX_USER" >&2
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$SANDBOX_USER"
  else
    echo "setup-sandbox: the worker runs as $(id -un), not root: bwrap will run as that user" \
         "(create $SANDBOX_USER as root to let a root worker drop to it)" >&2
  fi
}

smoke_test() {
  local python="$RUNTIME/bin/python"
  [ -x "$python" ] || { missing+=("the sandbox runtime $RUNTIME (run scripts/setup-python.sh)"); return; }
  local drop=()
  if is_root; then
    drop=(setpriv --reuid="$SANDBOX_USER" --regid="$SANDBOX_USER" --clear-groups --)
  fi
  local out
  if ! out=$("${drop[@]}" bwrap --unshare-all --unshare-user --die-with-parent --new-session \
      --clearenv --setenv PATH /runtime/bin:/usr/bin --ro-bind /usr /usr \
      --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
      --ro-bind "$RUNTIME" /runtime --tmpfs /tmp --proc /proc --dev /dev --uid 1000 --gid 1000 \
      -- python -I -B -c 'import os, numpy; print(os.getuid())' 2>&1); then
    echo "setup-sandbox: bwrap cannot start a sandbox here:" >&2
    echo "$out" | sed 's/^/  /' >&2
    echo "  (needs unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1," \
         "user.max_user_namespaces > 0, and no AppArmor/SELinux rule denying them;" \
         "the runtime must be readable by $SANDBOX_USER)" >&2
    exit 1
  fi
  [ "$out" = 1000 ] || { echo "setup-sandbox: unexpected smoke-test output: $out" >&2; exit 1; }
}

need_command bwrap bubblewrap
need_command setpriv util-linux
need_command prlimit util-linux
need_seccomp
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-sandbox: missing: ${missing[*]}; install them as root (apt-get install bubblewrap util-linux python3-seccomp)" >&2
  exit 1
fi
need_user
smoke_test
if [ "${#missing[@]}" -gt 0 ]; then echo "setup-sandbox: missing: ${missing[*]}" >&2; exit 1; fi
echo "setup-sandbox: bubblewrap $(bwrap --version | awk '{print $2}') ready (sandbox user: $(is_root && echo "$SANDBOX_USER" || id -un))"
