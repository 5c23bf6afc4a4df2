"""The system calls a sandbox may make: one policy for both backends.

The base is Docker's default seccomp profile (profiles/docker-default.json: moby's
github.com/moby/profiles/seccomp v0.2.3 default.json, as vendored in moby/moby at
b985e2313a86), an allowlist whose default action fails a call with EPERM. On top of it,
gradlab denies what a grading job never needs and what has been the way out of
containers before:

    EXTRA_DENIED_SYSCALLS    io_uring, the kernel keyring, userfaultfd, perf events,
                             ptrace and cross-process memory access, bpf
    ALLOWED_SOCKET_FAMILIES  socket() only for AF_UNIX: no new AF_INET, AF_INET6,
                             AF_NETLINK or any other family's socket

`gradlab_profile()` is that policy in Docker's JSON format (the Docker backend passes it
with `security_opt=["seccomp=<json>"]`). `native_rules()` evaluates it the way Docker
does for a process with no capabilities on this machine's architecture and kernel, and
`compile_bpf()` turns those rules into the classic-BPF program bubblewrap loads with
`--seccomp FD`, with libseccomp's own Python bindings (Debian's python3-seccomp, run by
the system python in a child process: the worker's virtual environment does not carry
them). The program is built once per worker process.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import functools
import json
import logging
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.protocol import InfrastructureError

log = logging.getLogger(__name__)
DOCKER_DEFAULT_PROFILE = Path(__file__).resolve().parent / "profiles" / "docker-default.json"

EXTRA_DENIED_SYSCALLS = (
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "add_key",
    "keyctl",
    "request_key",
    "userfaultfd",
    "perf_event_open",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
)
# The zygote (grader/sandbox/zygote_init.py) isolates each job itself: its own filter is
# the policy plus these, and each job then loads the policy alone on top of it.
ZYGOTE_ALLOWED_SYSCALLS = ("unshare", "mount")
AF_UNIX = 1
ALLOWED_SOCKET_FAMILIES = {"AF_UNIX": AF_UNIX}
DENIED_ERRNO = errno.EPERM  # Docker's defaultErrnoRet: what a refused call returns

SYSTEM_PYTHON = "/usr/bin/python3"  # the interpreter Debian's python3-seccomp is built for
COMPILE_TIMEOUT_S = 60
_DOCKER_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "s390x": "s390x", "ppc64le": "ppc64le"}

# Run by SYSTEM_PYTHON: reads {"default_errno", "rules"} on stdin, writes the BPF program.
_COMPILE_CODE = """
import json, sys
import seccomp
spec = json.load(sys.stdin)
ops = {"SCMP_CMP_NE": seccomp.NE, "SCMP_CMP_LT": seccomp.LT, "SCMP_CMP_LE": seccomp.LE,
       "SCMP_CMP_EQ": seccomp.EQ, "SCMP_CMP_GE": seccomp.GE, "SCMP_CMP_GT": seccomp.GT,
       "SCMP_CMP_MASKED_EQ": seccomp.MASKED_EQ}
program = seccomp.SyscallFilter(seccomp.ERRNO(spec["default_errno"]))
unknown = []
for rule in spec["rules"]:
    if rule["errno"] == spec["default_errno"]:
        continue  # denied by the default action (libseccomp refuses a rule that repeats it)
    if seccomp.resolve_syscall(seccomp.Arch.NATIVE, rule["name"]) < 0:
        unknown.append(rule["name"])  # another architecture's, or too new: it stays denied
        continue
    action = seccomp.ALLOW if rule["errno"] is None else seccomp.ERRNO(rule["errno"])
    args = [seccomp.Arg(a["index"], ops[a["op"]], a["value"], a["value_two"])
            for a in rule["args"]]
    program.add_rule(action, rule["name"], *args)
program.export_bpf(sys.stdout)
sys.stderr.write(json.dumps(sorted(set(unknown))))
"""


@dataclass(frozen=True)
class Rule:
    """One libseccomp rule: `name` is allowed when every arg comparison holds, or fails
    with `errno` (None: allowed)."""

    name: str
    errno: int | None
    args: tuple[dict[str, Any], ...] = ()


def docker_default() -> dict[str, Any]:
    """Docker's default profile, as shipped with moby."""
    loaded: dict[str, Any] = json.loads(DOCKER_DEFAULT_PROFILE.read_text(encoding="utf-8"))
    return loaded


@functools.cache
def gradlab_profile() -> dict[str, Any]:
    """Docker's default profile without EXTRA_DENIED_SYSCALLS and with socket() for the
    ALLOWED_SOCKET_FAMILIES only; the denials are listed explicitly too."""
    profile = copy.deepcopy(docker_default())
    kept = []
    for entry in profile["syscalls"]:
        names = [n for n in entry["names"] if n not in EXTRA_DENIED_SYSCALLS]
        if "socket" in names:  # Docker's socket rules allow most families: ours replace them
            names.remove("socket")
        if names:
            kept.append({**entry, "names": names})
    kept.append(
        {
            "names": ["socket"],
            "action": "SCMP_ACT_ALLOW",
            "args": [
                {"index": 0, "value": family, "valueTwo": 0, "op": "SCMP_CMP_EQ"}
                for family in ALLOWED_SOCKET_FAMILIES.values()
            ],
            "comment": "gradlab: new sockets of the allowed families only",
        }
    )
    kept.append(
        {
            "names": list(EXTRA_DENIED_SYSCALLS),
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": DENIED_ERRNO,
            "comment": "gradlab: denied beyond Docker's default",
        }
    )
    profile["syscalls"] = kept
    return profile


def profile_json(profile: dict[str, Any] | None = None) -> str:
    """gradlab_profile() (or `profile`) as Docker's `security_opt` wants it."""
    chosen = gradlab_profile() if profile is None else profile
    return json.dumps(chosen, separators=(",", ":"), sort_keys=True)


@functools.cache
def zygote_profile() -> dict[str, Any]:
    """The Docker zygote container's profile: gradlab_profile() with the
    ZYGOTE_ALLOWED_SYSCALLS allowed unconditionally, as compile_bpf(also_allowed=...)
    makes it for the bubblewrap zygote. Each job loads the job filter on top."""
    profile = copy.deepcopy(gradlab_profile())
    kept = []
    for entry in profile["syscalls"]:
        names = [n for n in entry["names"] if n not in ZYGOTE_ALLOWED_SYSCALLS]
        if names:
            kept.append({**entry, "names": names})
    kept.append(
        {
            "names": list(ZYGOTE_ALLOWED_SYSCALLS),
            "action": "SCMP_ACT_ALLOW",
            "comment": "gradlab zygote: makes each job's namespaces and mounts",
        }
    )
    profile["syscalls"] = kept
    return profile


def native_rules(
    profile: dict[str, Any], *, arch: str | None = None, kernel: str | None = None
) -> list[Rule]:
    """The profile's rules that apply to a process with no capabilities on `arch` (Docker's
    name, e.g. "amd64") and `kernel` (a release such as "6.1.0"), as Docker decides."""
    arch = arch or _DOCKER_ARCH.get(platform.machine(), platform.machine())
    running = _kernel_version(kernel or platform.release())
    default_errno = int(profile.get("defaultErrnoRet", DENIED_ERRNO))
    rules = []
    for entry in profile["syscalls"]:
        if not _applies(entry, arch, running):
            continue
        action = entry["action"]
        if action == "SCMP_ACT_ALLOW":
            outcome: int | None = None
        elif action == "SCMP_ACT_ERRNO":
            outcome = int(entry.get("errnoRet", default_errno))
        else:
            raise ValueError(f"unsupported seccomp action {action!r} in the profile")
        args = tuple(
            {
                "index": a["index"],
                "op": a["op"],
                "value": a["value"],
                "value_two": a.get("valueTwo", 0),
            }
            for a in entry.get("args") or ()
        )
        rules += [Rule(name, outcome, args) for name in entry["names"]]
    return rules


def _applies(entry: dict[str, Any], arch: str, kernel: tuple[int, ...]) -> bool:
    """Docker's includes/excludes, for a process that holds no capability at all."""
    includes, excludes = entry.get("includes") or {}, entry.get("excludes") or {}
    if includes.get("caps"):
        return False  # allowed only to holders of a capability
    if includes.get("arches") and arch not in includes["arches"]:
        return False
    if includes.get("minKernel") and kernel < _kernel_version(includes["minKernel"]):
        return False
    return not (excludes.get("arches") and arch in excludes["arches"])


def _kernel_version(release: str) -> tuple[int, ...]:
    match = re.match(r"(\d+)\.(\d+)", release)
    return (int(match[1]), int(match[2])) if match else (0, 0)


@functools.cache
def compile_bpf(python: str = SYSTEM_PYTHON, *, also_allowed: tuple[str, ...] = ()) -> bytes:
    """gradlab_profile() as a classic-BPF program for this machine (see the module
    docstring), with the calls named in `also_allowed` allowed unconditionally (the
    zygote's filter: ZYGOTE_ALLOWED_SYSCALLS). Raises InfrastructureError when
    libseccomp's bindings are missing."""
    rules = [rule for rule in native_rules(gradlab_profile()) if rule.name not in also_allowed]
    rules += [Rule(name, None) for name in also_allowed]
    spec = {
        "default_errno": int(gradlab_profile().get("defaultErrnoRet", DENIED_ERRNO)),
        "rules": [rule.__dict__ for rule in rules],
    }
    if shutil.which(python) is None:
        raise InfrastructureError(f"{python} is missing: run scripts/setup-sandbox.sh")
    try:
        done = subprocess.run(
            [python, "-I", "-c", _COMPILE_CODE],
            input=json.dumps(spec).encode(),
            capture_output=True,
            timeout=COMPILE_TIMEOUT_S,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise InfrastructureError(f"cannot compile the seccomp filter: {error}") from error
    if done.returncode != 0 or not done.stdout:
        raise InfrastructureError(
            "cannot compile the seccomp filter (scripts/setup-sandbox.sh installs libseccomp's "
            f"bindings, python3-seccomp): {done.stderr.decode(errors='replace')[-1000:]}"
        )
    with contextlib.suppress(ValueError):
        unknown = json.loads(done.stderr.decode() or "[]")
        if unknown:
            log.debug(
                "seccomp: not calls of this machine (or newer than libseccomp), denied: %s",
                unknown,
            )
    return done.stdout
