"""The local sandbox backend: one bubblewrap sandbox per job (grader/FORMAT.md section 2).

The process chain of one job, each step exec'ing the next (one pid, one process group):

    sh (joins the job's cgroups, as the worker)       memory + swap and pids limits
    -> prlimit                                         CPU time, file size, open files, core
    -> setpriv (only when the worker is root)          drop to the unprivileged sandbox user
    -> bwrap                                           fresh namespaces, read-only binds,
                                                       size-capped /tmp, no env of ours
    -> bash (inside: reports "started", closes that pipe)
    -> python -I -B /harness/main.py                   reads the job from stdin

bwrap must not be started by root: its sandbox user would then be root on the host. The
worker drops to `GRADLAB_SANDBOX_USER` (default gradlab-sandbox, made by
scripts/setup-sandbox.sh) first; a worker that is not root runs bwrap as itself.

Killing the job kills the outer bwrap; `--die-with-parent` then kills the sandbox's pid 1
and with it the whole pid namespace. The job's cgroup is swept too and removed afterwards.

Warm sandboxes (`warm=True` or GRADLAB_SANDBOX_WARM=1): after each job the backend starts
the next sandbox right away (same chain, its own cgroup and limits, fresh namespaces and
tmpfs), whose python imports torch and then waits in the harness for its job on stdin.
The next job with the same limits and device is handed to it (its wall clock starts at
the hand-over); any other job starts cold. A sandbox still serves exactly one job: warm
means started early, never reused. The spare dies with the worker (`--die-with-parent`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import pwd
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.protocol import InfrastructureError, Limits, RunStatus, SandboxRequest, SandboxResult
from grader.sandbox import cgroups
from grader.sandbox.environment import harness_env
from grader.sandbox.process import Exchange, exchange

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RUNTIME_DIR = REPO_ROOT / ".sandbox-env"
DEFAULT_HARNESS_DIR = REPO_ROOT / "grader" / "harness"
DEFAULT_USER = "gradlab-sandbox"
USER_ENV = "GRADLAB_SANDBOX_USER"
RUNTIME_ENV = "GRADLAB_SANDBOX_RUNTIME"
HARNESS_ENV = "GRADLAB_SANDBOX_HARNESS"

# Inside the sandbox.
SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_HOSTNAME = "gradlab-sandbox"
RUNTIME_MOUNT = "/runtime"
HARNESS_MOUNT = "/harness"
HARNESS_COMMAND = ("python", "-I", "-B", f"{HARNESS_MOUNT}/main.py")
SANDBOX_PATH = f"{RUNTIME_MOUNT}/bin:/usr/bin:/bin"

# Limits that grader.protocol.Limits does not carry.
OPEN_FILES = 256
STDERR_CAP_BYTES = 65_536
FRAME_OVERHEAD_BYTES = 256  # "GRADLAB-RESULT <nonce> <length>\n" around the capture
RLIMIT_ADDRESS_SPACE_HEADROOM_MB = 1024  # fallback only: torch maps more than it touches
CPU_HARD_GRACE_S = 1  # SIGXCPU at the soft limit, SIGKILL this much later
MIB = 1024 * 1024

HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_ENV = {"PATH": HOST_PATH, "LANG": "C.UTF-8"}  # nothing of the worker's environment
ROOT_LINKS = ("bin", "lib", "lib64")  # merged-/usr symlinks (or real folders) under /
NVIDIA_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")

# Joins the job's cgroups (as the worker), then execs the rest of the chain.
JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
# Inside the sandbox: tell the worker that bwrap's setup succeeded, close that pipe, go.
START_SCRIPT = 'fd=$1; shift; printf 1 >&"$fd" && exec {fd}>&- && exec "$@"'
# Warm sandboxes (see BubblewrapSandbox): the same, but python imports torch first, says
# so on the pipe and closes it, then runs the harness, which waits for its job on stdin.
WARM_START_SCRIPT = 'fd=$1; shift; printf 1 >&"$fd" && exec "$@" "$fd"'
PRELOAD_CODE = (
    "import os, runpy, sys\n"
    "import numpy, torch\n"
    "os.write(int(sys.argv[1]), b'2')\n"
    "os.close(int(sys.argv[1]))\n"
    f"sys.argv = [{HARNESS_MOUNT + '/main.py'!r}]\n"
    f"runpy.run_path({HARNESS_MOUNT + '/main.py'!r}, run_name='__main__')\n"
)
PRELOAD_COMMAND = ("python", "-I", "-B", "-c", PRELOAD_CODE)
WARM_ENV = "GRADLAB_SANDBOX_WARM"
READY_MARKER = b"12"  # "1" from bash (bwrap's setup worked), "2" from python (torch loaded)


@dataclass(frozen=True)
class HostUser:
    """The unprivileged host account bwrap runs as when the worker is root."""

    name: str
    uid: int
    gid: int


class BubblewrapSandbox:
    """Runs each job in a fresh bubblewrap sandbox. See the module docstring."""

    name = "bubblewrap"

    def __init__(
        self,
        *,
        runtime_dir: str | os.PathLike[str] | None = None,
        harness_dir: str | os.PathLike[str] | None = None,
        user: str | None = None,
        bwrap: str = "bwrap",
        warm: bool | None = None,
    ) -> None:
        self.runtime_dir = Path(runtime_dir or os.environ.get(RUNTIME_ENV) or DEFAULT_RUNTIME_DIR)
        self.harness_dir = Path(harness_dir or os.environ.get(HARNESS_ENV) or DEFAULT_HARNESS_DIR)
        self.user_name = user or os.environ.get(USER_ENV) or DEFAULT_USER
        self.bwrap = bwrap
        self.warm = os.environ.get(WARM_ENV) == "1" if warm is None else warm
        self._warned: set[str] = set()
        self._reaped = False
        self._lock = threading.Lock()
        self._spare: _Started | None = None
        weakref.finalize(self, _discard_spare, self.__dict__)

    # --- the Sandbox interface -----------------------------------------------------------

    def runtime_key(self, device: str) -> str:
        return f"bubblewrap torch-{self.torch_version()} {self._effective_device(device)[0]}"

    def run(self, request: SandboxRequest) -> SandboxResult:
        tools = self._tools()
        device, device_note = self._effective_device(request.device)
        started = self._take_spare(request.limits, device) or self._start(
            tools, request, device, warm=False
        )
        try:
            outcome = self._exchange(started, request)
            oom = started.group is not None and started.group.oom_killed()
        finally:
            if started.group is not None:
                _remove_cgroup(started.group)
            if self.warm:
                self._replace_spare(tools, request, device)
        return self._result(outcome, request.limits, oom, device_note)

    def close(self) -> None:
        """Stops the warm spare sandbox, if any (it would die with the worker anyway)."""
        _discard_spare(self.__dict__)

    # --- starting sandboxes ---------------------------------------------------------------

    def _start(
        self, tools: _Tools, request: SandboxRequest, device: str, *, warm: bool
    ) -> _Started:
        group = self._open_cgroup(request.job_id if not warm else "warm", request.limits)
        marker_read, marker_write = os.pipe()
        try:
            argv = self._command(tools, request.limits, device, group, marker_write, warm=warm)
            process, started = self._spawn(argv, marker_write)
        except BaseException:
            os.close(marker_read)
            if group is not None:
                _remove_cgroup(group)
            raise
        finally:
            os.close(marker_write)  # the chain holds its own copy
        return _Started(process, group, marker_read, started, request.limits, device, warm)

    def _exchange(self, started: _Started, request: SandboxRequest) -> Exchange:
        process, group = started.process, started.group
        try:
            return exchange(  # owns the marker's read end from here on
                process,
                stdin=request.stdin,
                timeout_s=request.limits.wall_seconds,
                stdout_cap=request.limits.result_bytes + FRAME_OVERHEAD_BYTES,
                stderr_cap=STDERR_CAP_BYTES,
                kill=lambda: _kill_tree(process, group),
                extra_fd=started.marker_read,
                extra_prefix=started.marker,
                started=time.monotonic() if started.warm else started.at,  # from hand-over
            )
        finally:
            _kill_tree(process, group)  # nothing outlives its job, even a detached child

    def _take_spare(self, limits: Limits, device: str) -> _Started | None:
        """The warm sandbox started after the previous job, when it fits this one."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        if spare.limits == limits and spare.device == device and spare.alive():
            return spare
        spare.discard()
        return None

    def _replace_spare(self, tools: _Tools, request: SandboxRequest, device: str) -> None:
        try:
            fresh = self._start(tools, request, device, warm=True)
        except InfrastructureError as error:
            log.warning("cannot start a warm sandbox: %s", error)
            return
        with self._lock:
            old, self._spare = self._spare, fresh
        if old is not None:
            old.discard()

    def wait_until_warm(self, timeout_s: float) -> bool:
        """True once the spare sandbox has torch loaded (for benchmarks and tests)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                spare = self._spare
            if spare is None or not spare.alive():
                return False
            if spare.poll_ready():
                return True
            time.sleep(0.01)
        return False

    # --- facts about the runtime ---------------------------------------------------------

    def torch_version(self) -> str:
        """torch's version in the runtime, from its dist-info (torch is not imported)."""
        for metadata in self.runtime_dir.glob(
            "lib/python3*/site-packages/torch-*.dist-info/METADATA"
        ):
            for line in metadata.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
        raise InfrastructureError(f"no torch installed in the sandbox runtime {self.runtime_dir}")

    def host_user(self) -> HostUser | None:
        """Who bwrap runs as: the sandbox user when the worker is root, else the worker."""
        if os.geteuid() != 0:
            return None
        try:
            entry = pwd.getpwnam(self.user_name)
        except KeyError:
            raise InfrastructureError(
                f"the sandbox user {self.user_name!r} does not exist: run scripts/setup-sandbox.sh"
            ) from None
        if entry.pw_uid == 0:
            raise InfrastructureError(f"the sandbox user {self.user_name!r} is root: refusing")
        return HostUser(entry.pw_name, entry.pw_uid, entry.pw_gid)

    def _effective_device(self, device: str) -> tuple[str, str]:
        """("cuda" | "cpu", a note when "cuda" was asked for but cannot be given)."""
        if device != "cuda":
            return "cpu", ""
        if not _nvidia_nodes():
            return "cpu", "no NVIDIA device on this worker: ran on CPU"
        if self.torch_version().endswith("+cpu"):
            return "cpu", "the sandbox runtime's torch is a CPU build: ran on CPU"
        return "cuda", ""

    # --- building and starting the chain -------------------------------------------------

    def _tools(self) -> _Tools:
        for path, what in (
            (self.runtime_dir / "bin" / "python", "runtime python"),
            (self.harness_dir / "main.py", "harness"),
        ):
            if not path.exists():
                raise InfrastructureError(f"the sandbox {what} {path} is missing")
        return _find_tools(self.bwrap)

    def _open_cgroup(self, job_id: str, limits: Limits) -> cgroups.JobCgroup | None:
        if not self._reaped:  # groups a killed worker left behind
            self._reaped = True
            with contextlib.suppress(OSError):
                for folder in cgroups.reap_stale():
                    log.warning("removed a stale job cgroup: %s", folder)
        try:
            return cgroups.open_job_cgroup(
                cgroups.job_name(job_id), memory_bytes=limits.memory_mb * MIB, pids=limits.pids
            )
        except cgroups.CgroupUnavailable as why:
            self._warn_once(
                f"no per-job cgroup ({why}): memory is limited by RLIMIT_AS, processes by "
                "RLIMIT_NPROC (approximate), and OOM is not reported as such"
            )
            return None

    def _command(
        self,
        tools: _Tools,
        limits: Limits,
        device: str,
        group: cgroups.JobCgroup | None,
        marker_fd: int,
        *,
        warm: bool = False,
    ) -> list[str]:
        argv: list[str] = []
        user = self.host_user()
        if group is not None:
            argv += ["/bin/sh", "-c", JOIN_SCRIPT, "gradlab-join"]
            argv += [str(f) for f in group.join_files()] + ["--"]
        argv += [tools.prlimit, *_rlimits(limits, user, fallback=group is None), "--"]
        if user is not None:
            argv += [tools.setpriv, f"--reuid={user.uid}", f"--regid={user.gid}"]
            argv += ["--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"]
        argv += [tools.bwrap, *self._bwrap_args(tools, limits, device)]
        script, command = START_SCRIPT, list(HARNESS_COMMAND)
        if warm:
            script, command = WARM_START_SCRIPT, list(PRELOAD_COMMAND)
        argv += ["--", "/bin/bash", "-c", script, "gradlab-start", str(marker_fd)]
        return argv + command

    def _bwrap_args(self, tools: _Tools, limits: Limits, device: str) -> list[str]:
        args = ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
        if tools.disable_userns:
            args.append("--disable-userns")
        args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
        args += ["--hostname", SANDBOX_HOSTNAME, "--clearenv"]
        for key, value in _sandbox_env(device).items():
            args += ["--setenv", key, value]
        args += ["--ro-bind", "/usr", "/usr", *_root_links()]
        args += ["--ro-bind", str(self.runtime_dir.resolve()), RUNTIME_MOUNT]
        args += ["--ro-bind", str(self.harness_dir.resolve()), HARNESS_MOUNT]
        if tools.tmpfs_size:
            args += ["--size", str(limits.tmpfs_mb * MIB)]
        if tools.perms:
            args += ["--perms", "1777"]
        args += ["--tmpfs", "/tmp"]
        args += ["--proc", "/proc", "--dev", "/dev"]
        if device == "cuda":
            for node in _nvidia_nodes():
                args += ["--dev-bind", node, node]
        # The root and /dev (with its /dev/shm) are tmpfs bwrap made for us: read-only, so
        # the size-capped /tmp is the only writable place.
        args += ["--remount-ro", "/dev", "--remount-ro", "/"]
        return [*args, "--chdir", "/tmp"]

    def _spawn(self, argv: list[str], marker_fd: int) -> tuple[subprocess.Popen[bytes], float]:
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(marker_fd,),
                start_new_session=True,
                env=HOST_ENV,
                cwd="/",
            )
        except OSError as error:
            raise InfrastructureError(f"cannot start the sandbox ({argv[0]}): {error}") from error
        return process, started

    # --- the outcome ---------------------------------------------------------------------

    def _result(
        self, outcome: Exchange, limits: Limits, oom: bool, device_note: str
    ) -> SandboxResult:
        stderr = outcome.stderr.decode("utf-8", "replace").strip()
        if not outcome.extra:
            raise InfrastructureError(
                f"bubblewrap could not set up the sandbox (exit {outcome.returncode}): "
                f"{stderr[-2000:] or 'no message'}"
            )
        if outcome.returncode is None:
            raise InfrastructureError("the sandbox did not exit after being killed")
        if stderr:
            log.debug("sandbox stderr: %s", stderr[-2000:])
        status, message = _classify(outcome, limits, oom)
        if device_note:
            log.warning("%s", device_note)
            message = f"{message} ({device_note})" if message else device_note
        killed = outcome.timed_out or outcome.stdout_exceeded
        return SandboxResult(
            status=status,
            stdout=outcome.stdout,
            exit_code=None if killed else outcome.returncode,
            duration_s=outcome.duration_s,
            message=message,
        )

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)


@dataclass
class _Started:
    """A sandbox whose chain is running: for a job now, or warm, waiting for the next."""

    process: subprocess.Popen[bytes]
    group: cgroups.JobCgroup | None
    marker_read: int
    at: float
    limits: Limits
    device: str
    warm: bool = False
    marker: bytes = b""  # what was read from the marker pipe before the job came

    def alive(self) -> bool:
        return self.process.poll() is None

    def poll_ready(self) -> bool:
        os.set_blocking(self.marker_read, False)
        with contextlib.suppress(BlockingIOError):
            self.marker += os.read(self.marker_read, 16)
        return self.marker.startswith(READY_MARKER)

    def discard(self) -> None:
        _kill_tree(self.process, self.group)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(OSError):
            os.close(self.marker_read)
        if self.group is not None:
            _remove_cgroup(self.group)


def _discard_spare(state: dict[str, object]) -> None:
    spare = state.get("_spare")
    state["_spare"] = None
    if isinstance(spare, _Started):
        spare.discard()


@dataclass(frozen=True)
class _Tools:
    bwrap: str
    setpriv: str
    prlimit: str
    disable_userns: bool
    tmpfs_size: bool
    perms: bool


@functools.lru_cache(maxsize=8)
def _find_tools(bwrap: str) -> _Tools:
    found = {}
    for name in (bwrap, "setpriv", "prlimit"):
        path = shutil.which(name, path=HOST_PATH)
        if path is None:
            raise InfrastructureError(
                f"{name} is not installed: run scripts/setup-sandbox.sh "
                "(apt-get install bubblewrap util-linux)"
            )
        found[name] = path
    try:
        usage = subprocess.run(
            [found[bwrap], "--help"], capture_output=True, text=True, timeout=10, env=HOST_ENV
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise InfrastructureError(f"cannot run {found[bwrap]}: {error}") from error
    if "--size" not in usage:
        log.warning("bwrap lacks --size (bubblewrap < 0.7): /tmp is capped by memory only")
    return _Tools(
        bwrap=found[bwrap],
        setpriv=found["setpriv"],
        prlimit=found["prlimit"],
        disable_userns="--disable-userns" in usage,
        tmpfs_size="--size" in usage,
        perms="--perms" in usage,
    )


def _rlimits(limits: Limits, user: HostUser | None, *, fallback: bool) -> list[str]:
    cpu = int(limits.cpu_seconds)
    args = [
        f"--cpu={cpu}:{cpu + CPU_HARD_GRACE_S}",
        f"--fsize={limits.file_size_mb * MIB}",
        f"--nofile={OPEN_FILES}",
        "--core=0",
    ]
    if fallback:
        address_space = (limits.memory_mb + RLIMIT_ADDRESS_SPACE_HEADROOM_MB) * MIB
        uid = user.uid if user is not None else os.getuid()
        args += [f"--as={address_space}", f"--nproc={_process_count(uid) + limits.pids}"]
    return args


def _process_count(uid: int) -> int:
    """RLIMIT_NPROC counts every process of the real uid on the host."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def _sandbox_env(device: str) -> dict[str, str]:
    return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", **harness_env(device)}


def _root_links() -> Iterator[str]:
    for name in ROOT_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            yield from ("--symlink", os.readlink(host), f"/{name}")
        elif host.is_dir():
            yield from ("--ro-bind", str(host), f"/{name}")


def _nvidia_nodes() -> list[str]:
    numbered = sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))
    named = [f"/dev/{n}" for n in NVIDIA_DEVICES if Path(f"/dev/{n}").exists()]
    return numbered + named if numbered else []


def _kill_tree(process: subprocess.Popen[bytes], group: cgroups.JobCgroup | None) -> None:
    """SIGKILL the chain's process group (the outer bwrap: its pid namespace dies with it)
    and everything in the job's cgroup."""
    if process.returncode is None:  # once reaped, its pid may belong to someone else
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    if group is not None and not group.kill_all():
        log.error("processes of a finished job survive in its cgroup: %s", group.pids())


def _remove_cgroup(group: cgroups.JobCgroup) -> None:
    try:
        group.remove()
    except OSError as error:
        log.error("cannot remove a job's cgroup: %s", error)


def _classify(outcome: Exchange, limits: Limits, oom: bool) -> tuple[RunStatus, str]:
    code = outcome.returncode
    if outcome.stdout_exceeded:
        return RunStatus.OUTPUT_LIMIT, f"output limit of {limits.result_bytes} bytes exceeded"
    if outcome.timed_out:
        return RunStatus.TIMEOUT, f"time limit of {limits.wall_seconds:g} s exceeded"
    if oom:
        return RunStatus.MEMORY, f"memory limit of {limits.memory_mb} MB exceeded"
    if code is not None and _signal_of(code) == signal.SIGXCPU:
        return RunStatus.TIMEOUT, f"CPU time limit of {limits.cpu_seconds} s exceeded"
    if code == 0:
        return RunStatus.OK, ""
    sig = _signal_of(code) if code is not None else None
    if sig is not None:
        return RunStatus.CRASHED, f"the sandboxed program was killed by {sig.name}"
    return RunStatus.CRASHED, f"the sandboxed program exited with status {code}"


def _signal_of(code: int) -> signal.Signals | None:
    """bwrap reports a child killed by signal N as exit status 128 + N."""
    number = -code if code < 0 else code - 128 if code > 128 else None
    if number is None:
        return None
    try:
        return signal.Signals(number)
    except ValueError:
        return None
