"""The narrower sandbox: the seccomp policy (grader/sandbox/syscalls.py) enforced inside
both backends, bubblewrap's pid 1, the job's CPU quota, and what the sandbox mounts.

Raw jobs (tests/sandbox/raw_harness) run the probes as the sandbox's main program, through
each backend itself (in Docker, the raw harness bind-mounted over the image's /harness),
in a fresh sandbox and forked by the zygote.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import platform
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import (
    RAW_HARNESS,
    REQUIRE_DOCKER_ENV,
    SHARED_ZYGOTE_JOBS,
    RawRun,
    assert_no_leftovers,
    docker_unavailable_reason,
    gradlab_cgroups,
    job_prefix,
    raw_job,
)

from grader.protocol import Limits, RunStatus, SandboxRequest, SandboxResult
from grader.sandbox import cgroups, syscalls

pytestmark = pytest.mark.sandbox

# x86_64 numbers of the calls the policy denies (Python has no table of them).
X86_64_SYSCALLS = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "add_key": 248,
    "keyctl": 250,
    "request_key": 249,
    "userfaultfd": 323,
    "perf_event_open": 298,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "bpf": 321,
    # denied by Docker's default already, for a process without capabilities
    "unshare": 272,
    "mount": 165,
    "setns": 308,
    "clone3": 435,
}
# Arguments that an allowed call would reject with another errno (EFAULT, EINVAL...).
PROBE = """
import ctypes, errno, json, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
seen = {}
for name, number in NUMBERS.items():
    args = {"unshare": [0x10000000], "ptrace": [16, 1, 0, 0]}.get(name, [0, 0, 0, 0, 0])
    ctypes.set_errno(0)
    result = libc.syscall(number, *[ctypes.c_long(a) for a in args])
    seen[name] = errno.errorcode.get(ctypes.get_errno(), "0") if result == -1 else "succeeded"
for family in ("AF_INET", "AF_INET6", "AF_NETLINK", "AF_UNIX"):
    kind = socket.SOCK_RAW if family == "AF_NETLINK" else socket.SOCK_DGRAM
    try:
        socket.socket(getattr(socket, family), kind).close()
        seen[family] = "succeeded"
    except OSError as error:
        seen[family] = errno.errorcode.get(error.errno, str(error.errno))
print(json.dumps(seen))
"""
REFUSED = {"EPERM", "ENOSYS"}

needs_x86_64 = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the probe's syscall numbers are x86_64's"
)


def probe_code() -> str:
    return f"NUMBERS = {X86_64_SYSCALLS!r}\n{PROBE}"


@pytest.fixture(
    params=[
        "bubblewrap",
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("docker-zygote", marks=pytest.mark.docker),
    ]
)
def run_raw_in(request: pytest.FixtureRequest, run_raw: RawRun) -> Iterator[RawRun]:
    """Raw jobs in each backend (bubblewrap: cold and zygote, by run_raw's own params)."""
    if request.param == "bubblewrap":
        yield run_raw
        return
    yield from _docker_raw_runner(zygote=request.param == "docker-zygote")


def _docker_raw_runner(*, zygote: bool) -> Iterator[RawRun]:
    reason = docker_unavailable_reason()
    if reason is not None:
        if os.environ.get(REQUIRE_DOCKER_ENV) == "1":
            pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but Docker is unavailable: {reason}")
        pytest.skip(reason)
    from grader.sandbox.docker import DockerSandbox

    # a zygote shared across jobs, as a deployment that chooses throughput runs it
    sandbox = DockerSandbox(harness_dir=RAW_HARNESS, zygote=zygote, zygote_jobs=SHARED_ZYGOTE_JOBS)
    prefix = job_prefix()
    count = iter(range(1000))

    def run(code: str, **limits: object) -> SandboxResult:
        job = SandboxRequest(f"{prefix}-{next(count)}", raw_job(code), Limits().replace(**limits))
        return sandbox.run(job)

    yield run
    sandbox.close()
    assert_no_leftovers(prefix, docker=True)


def json_of(result: SandboxResult) -> dict[str, Any]:
    assert result.status is RunStatus.OK, (result.status, result.message, result.stdout[-500:])
    loaded: dict[str, Any] = json.loads(result.stdout.decode().strip().splitlines()[-1])
    return loaded


# --- the policy, as a value -----------------------------------------------------------


def test_the_extra_denials_are_the_named_list_of_the_issue() -> None:
    assert set(syscalls.EXTRA_DENIED_SYSCALLS) == {
        "io_uring_setup", "io_uring_enter", "io_uring_register", "add_key", "keyctl",
        "request_key", "userfaultfd", "perf_event_open", "ptrace", "process_vm_readv",
        "process_vm_writev", "bpf",
    }  # fmt: skip
    assert syscalls.ALLOWED_SOCKET_FAMILIES == {"AF_UNIX": 1}


def test_the_profile_is_dockers_default_allowlist_without_the_denied_calls() -> None:
    default, ours = syscalls.docker_default(), syscalls.gradlab_profile()
    assert ours["defaultAction"] == default["defaultAction"] == "SCMP_ACT_ERRNO"
    allowed = {n for e in ours["syscalls"] if e["action"] == "SCMP_ACT_ALLOW" for n in e["names"]}
    default_allowed = {
        n for e in default["syscalls"] if e["action"] == "SCMP_ACT_ALLOW" for n in e["names"]
    }
    assert allowed <= default_allowed  # nothing Docker refuses is allowed here
    assert not allowed & set(syscalls.EXTRA_DENIED_SYSCALLS)
    assert default_allowed - allowed == set(syscalls.EXTRA_DENIED_SYSCALLS) & default_allowed


def test_for_a_process_without_capabilities_only_af_unix_sockets_are_allowed() -> None:
    rules = syscalls.native_rules(syscalls.gradlab_profile(), arch="amd64", kernel="6.1.0")
    sockets = [r for r in rules if r.name == "socket"]
    assert [(r.errno, r.args) for r in sockets] == [
        (None, ({"index": 0, "op": "SCMP_CMP_EQ", "value": 1, "value_two": 0},))
    ]
    allowed = {r.name for r in rules if r.errno is None}
    assert not allowed & set(syscalls.EXTRA_DENIED_SYSCALLS)
    assert not allowed & {"mount", "unshare", "setns", "reboot", "init_module", "clone3"}
    assert "read" in allowed and "clone" in allowed


def test_the_bpf_program_compiles_for_this_machine() -> None:
    program = syscalls.compile_bpf()
    assert len(program) % 8 == 0 and len(program) > 8 * 100  # sock_filter: 8 bytes each


# --- enforced inside both backends ------------------------------------------------------


@needs_x86_64
def test_each_denied_system_call_fails_inside_the_sandbox(run_raw_in: RawRun) -> None:
    assert set(syscalls.EXTRA_DENIED_SYSCALLS) <= set(X86_64_SYSCALLS)
    seen = json_of(run_raw_in(probe_code()))
    refused = {name for name, outcome in seen.items() if outcome in REFUSED}
    assert refused == set(X86_64_SYSCALLS) | {"AF_INET", "AF_INET6", "AF_NETLINK"}, seen
    assert seen["AF_UNIX"] == "succeeded"


def test_torch_and_numpy_still_work_under_the_filter(run_raw_in: RawRun) -> None:
    code = """
    import json, numpy, torch
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x ** 2).sum().backward()
    print(json.dumps({"grad": x.grad.tolist(), "numpy": float(numpy.arange(4).sum())}))
    """
    assert json_of(run_raw_in(textwrap.dedent(code))) == {"grad": [2.0, 4.0], "numpy": 6.0}


# --- bubblewrap's pid 1 -----------------------------------------------------------------


def test_pid_1_is_an_init_the_code_can_neither_read_trace_nor_kill(run_raw: RawRun) -> None:
    code = """
    import ctypes, errno, json, os, signal
    seen = {"parent": os.getppid(), "me": os.getpid()}
    for path in ("/proc/1/fd", "/proc/1/environ", "/proc/1/mem", "/proc/1/maps"):
        try:
            os.listdir(path) if path.endswith("fd") else open(path, "rb").read(1)
            seen[path] = "readable"
        except OSError as error:
            seen[path] = errno.errorcode[error.errno]
    seen["owner"] = os.stat("/proc/1/fd").st_uid
    libc = ctypes.CDLL(None, use_errno=True)
    seen["attach"] = libc.ptrace(16, 1, 0, 0) == 0 or errno.errorcode[ctypes.get_errno()]
    os.kill(1, signal.SIGKILL)  # dropped: an init with no handler ignores its namespace
    seen["survived"] = True
    print(json.dumps(seen))
    """
    seen = json_of(run_raw(textwrap.dedent(code)))
    assert seen["parent"] == 1 and seen["me"] != 1  # the harness is a child of pid 1
    for path in ("/proc/1/fd", "/proc/1/environ", "/proc/1/mem", "/proc/1/maps"):
        assert seen[path] == "EACCES", seen
    assert seen["owner"] != 1000  # non-dumpable: its /proc files are not the sandbox user's
    assert seen["attach"] == "EPERM"
    assert seen["survived"] is True


def test_pid_1_holds_none_of_the_jobs_pipes_and_the_job_cgroup_has_one_cpu(
    bubblewrap_raw: Any,
) -> None:
    prefix = job_prefix()
    request = SandboxRequest(f"{prefix}-0", raw_job("import time\ntime.sleep(3)"), Limits())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        job = pool.submit(bubblewrap_raw.run, request)
        seen = _watch_job(prefix, until=job)
        assert job.result().status is RunStatus.OK
    assert seen["init_fds"], "the sandbox's pid 1 was never seen from the host"
    assert set(seen["init_fds"]) == {"/dev/null"}, seen
    if seen["cpu"] is None:
        pytest.skip("no cgroup cpu controller on this host")
    assert seen["cpu"] == (cgroups.CPU_PERIOD_US, cgroups.CPU_PERIOD_US)
    assert_no_leftovers(prefix)


def _watch_job(prefix: str, until: concurrent.futures.Future[Any]) -> dict[str, Any]:
    """From the host while the job runs: the job cgroup's CPU quota, and what the sandbox's
    pid 1 holds open once the harness (its pid 2) runs (before, bwrap itself is pid 1)."""
    seen: dict[str, Any] = {"init_fds": [], "cpu": None}
    while not until.done():
        for folder in (c for c in gradlab_cgroups() if c.name.startswith(prefix)):
            pids = _by_innermost_pid(folder / "cgroup.procs")
            if pids:  # a group is read once the job is in it (its limits are set before)
                seen["cpu"] = seen["cpu"] or _cpu_quota(folder)
            if "1" in pids and "2" in pids:
                seen["init_fds"] = _fds(pids["1"]) or seen["init_fds"]
        time.sleep(0.05)
    return seen


def _cpu_quota(folder: Path) -> tuple[int, int] | None:
    """(quota, period) in microseconds in a v2 group or a v1 cpu group, else None."""
    try:
        if (folder / "cpu.max").exists():
            quota, period = (folder / "cpu.max").read_text().split()
            return int(quota), int(period)
        if (folder / "cpu.cfs_quota_us").exists():
            quota = int((folder / "cpu.cfs_quota_us").read_text())
            return quota, int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        pass
    return None


def _by_innermost_pid(procs: Path) -> dict[str, str]:
    """{pid inside the sandbox's namespace: pid on the host} of the group's processes."""
    found = {}
    for pid in _read(procs).split():
        lines = _read(Path(f"/proc/{pid}/status")).splitlines()
        nspids = next((line.split()[1:] for line in lines if line.startswith("NSpid:")), [])
        if len(nspids) > 1:
            found[nspids[-1]] = pid
    return found


def _fds(pid: str) -> list[str]:
    try:
        return sorted(_link(fd) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return []


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:
        return "?"
