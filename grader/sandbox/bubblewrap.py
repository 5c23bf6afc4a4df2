"""The local sandbox backend: one bubblewrap sandbox per job (grader/FORMAT.md section 2).

The process chain of one job, each step exec'ing the next (one pid, one process group):

    sh (joins the job's cgroups, as the worker)       memory + swap, pids and CPU quota
    -> prlimit                                         CPU time, file size, open files, core
    -> setpriv (only when the worker is root)          drop to the unprivileged sandbox user
    -> bwrap                                           fresh namespaces, read-only binds of
                                                       only what python and torch need,
                                                       size-capped /tmp, no env of ours,
                                                       the seccomp filter (syscalls.py)
    -> python sandbox_init.py (pid 1, --as-pid-1)      non-dumpable, reports "started",
                                                       forks the harness, holds no pipe
       -> python -I -B /harness/main.py                reads the job from stdin

Inside, the sandbox sees /runtime (the runtime's virtual environment), /harness (the
harness as published by publish.py), the host files listed by runtime.py at their own
paths, a private /tmp, /proc and /dev: no path of the worker's checkout.

bwrap must not be started by root: its sandbox user would then be root on the host. The
worker drops to `user` (default gradlab-sandbox, made by scripts/setup-sandbox.sh) first;
a worker that is not root runs bwrap as itself.

Killing the job kills the outer bwrap; `--die-with-parent` then kills the sandbox's pid 1
and with it the whole pid namespace. The job's cgroup is swept too and removed afterwards.

Warm sandboxes (`warm=True`): after each job the backend starts the next sandbox right
away (same chain, its own cgroup and limits, fresh namespaces and tmpfs), whose python
imports torch and then waits in the harness for its job on stdin. The next job with the
same limits and device is handed to it (its wall clock starts at the hand-over); any
other job starts cold. A sandbox still serves exactly one job: warm means started early,
never reused. The spare dies with the worker (`--die-with-parent`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from grader.protocol import InfrastructureError, Limits, SandboxRequest, SandboxResult
from grader.sandbox import cgroups, common, publish, runtime, syscalls
from grader.sandbox import zygote as zygotes
from grader.sandbox.config import DEFAULT_RUNTIME_DIR, DEFAULT_USER, PACKAGE_HARNESS
from grader.sandbox.process import Exchange, exchange

log = logging.getLogger(__name__)


# Inside the sandbox.
SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_PATH = f"{runtime.RUNTIME_MOUNT}/bin"
INIT_SOURCE = (Path(__file__).resolve().parent / "sandbox_init.py").read_text(encoding="utf-8")
INIT_COMMAND = ("python", "-I", "-S", "-c", INIT_SOURCE)

# Warm sandboxes (see BubblewrapSandbox): python imports torch first, says so on the
# marker pipe and closes it, then runs the harness, which waits for its job on stdin.
# Once the harness is done, its exit status is final: the interpreter then exits at once
# (tearing down a torch-loaded interpreter takes seconds of the job's wall clock on a
# loaded host, and the harness registers no exit handler).
PRELOAD_CODE = f"""\
import os, runpy, sys
import numpy, torch
os.write(int(sys.argv[1]), b'2')
os.close(int(sys.argv[1]))
sys.argv = [{common.HARNESS_MAIN!r}]
status = 0
try:
    runpy.run_path({common.HARNESS_MAIN!r}, run_name='__main__')
except SystemExit as stop:
    status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
    if not isinstance(stop.code, int | None):
        print(stop.code, file=sys.stderr)
sys.stdout.flush()
sys.stderr.flush()
os._exit(status)
"""
READY_MARKER = b"12"  # "1" from pid 1 (bwrap's setup worked), "2" from python (torch loaded)

HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_ENV = {"PATH": HOST_PATH, "LANG": "C.UTF-8"}  # nothing of the worker's environment
NVIDIA_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")

# Joins the job's cgroups (as the worker), then execs the rest of the chain.
JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


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
        runtime_dir: str | os.PathLike[str] = DEFAULT_RUNTIME_DIR,
        harness_dir: str | os.PathLike[str] = PACKAGE_HARNESS,
        publish_root: str | os.PathLike[str] | None = None,
        user: str = DEFAULT_USER,
        bwrap: str = "bwrap",
        warm: bool = False,
        cgroup_parent: str | None = None,
        zygote: bool = False,
        zygote_jobs: int = zygotes.DEFAULT_MAX_JOBS,
    ) -> None:
        """`runtime_dir`: the virtual environment with torch and numpy (world-readable);
        `harness_dir`: the harness's source, published under `publish_root` (default
        publish.DEFAULT_PUBLISH_ROOT) before each job; `user`: the host account a root
        worker drops to; `warm`: keep a torch-loaded spare sandbox; `cgroup_parent`: the
        cgroup below which job groups are made (default: below the worker's own);
        `zygote`: CPU jobs are forked by a torch-loaded zygote (zygote.py), replaced
        after `zygote_jobs` jobs."""
        self.runtime_dir = Path(runtime_dir)
        self.harness_dir = Path(harness_dir)
        self.publish_root = Path(publish_root) if publish_root else None
        self.user_name = user
        self.bwrap = bwrap
        self.warm = warm
        self.cgroup_parent = cgroup_parent
        self._warned: set[str] = set()
        self._reaped = False
        self._lock = threading.Lock()
        self._spare: _Started | None = None
        self.zygote = zygote
        self.zygote_jobs = zygote_jobs
        self._zygotes = zygotes.ZygoteSlot(self._start_zygote, zygote_jobs)
        weakref.finalize(self, _discard_spare, self.__dict__)

    # --- the Sandbox interface -----------------------------------------------------------

    def runtime_key(self, device: str) -> str:
        return f"bubblewrap torch-{self.torch_version()} {self._effective_device(device)[0]}"

    def run(self, request: SandboxRequest) -> SandboxResult:
        tools = self._tools()
        device, device_note = self._effective_device(request.device)
        if self.zygote and device == "cpu":
            forked = self._run_forked(tools, request, device_note)
            if forked is not None:
                return forked
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
        """Stops the warm spare sandbox and the zygote, if any (they would die with the
        worker anyway)."""
        _discard_spare(self.__dict__)

    # --- the zygote -----------------------------------------------------------------------

    def prepare(self) -> None:
        """Starts the zygote now (zygote mode), so that the first job need not wait for
        torch's import; a worker process calls it in the background when it starts."""
        if self.zygote:
            self._ready_zygote(self._tools(), for_job=False)

    def zygote_pid(self) -> int | None:
        """The host pid of the running zygote's chain (its outer bwrap), if any."""
        return self._zygotes.pid()

    @property
    def zygote_slot(self) -> zygotes.ZygoteSlot:
        """The slot of its zygote generations (what tests and diagnostics read of it)."""
        return self._zygotes

    def _ready_zygote(self, tools: _Tools, *, for_job: bool = True) -> zygotes.Zygote | None:
        return self._zygotes.ready(self._zygote_identity(tools), for_job=for_job)

    def _zygote_identity(self, tools: _Tools) -> zygotes.ZygoteIdentity:
        return zygotes.ZygoteIdentity(
            tools.harness, runtime.fingerprint(self.runtime_dir), self._host_uid()
        )

    def _start_zygote(self, identity: zygotes.ZygoteIdentity) -> zygotes.Zygote:
        tools = self._tools()
        group = self._open_named_cgroup(cgroups.job_name("zygote"), zygotes.ZYGOTE_LIMITS)
        control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        job_filter, zygote_filter = -1, -1
        try:
            job_filter = _seccomp_program()
            zygote_filter = _seccomp_program(syscalls.ZYGOTE_ALLOWED_SYSCALLS)
            argv = self._zygote_command(tools, group, theirs.fileno(), job_filter, zygote_filter)
            fds = (theirs.fileno(), job_filter, zygote_filter)
            started = zygotes.start(argv, fds, control, group=group, identity=identity)
        except BaseException:
            control.close()
            if group is not None:
                _remove_cgroup(group)
            raise
        finally:
            theirs.close()
            for fd in (job_filter, zygote_filter):
                if fd >= 0:
                    os.close(fd)
        return started  # importing torch: the slot awaits its "R" (Zygote.wait_ready)

    def _zygote_command(
        self,
        tools: _Tools,
        group: cgroups.JobCgroup | None,
        control_fd: int,
        job_filter: int,
        zygote_filter: int,
    ) -> list[str]:
        """The cold chain with the zygote as its program: no CPU time or file size limit
        of its own (each job sets its own), user namespaces allowed, the zygote filter."""
        argv: list[str] = []
        user = self.host_user()
        if group is not None:
            argv += ["/bin/sh", "-c", JOIN_SCRIPT, "gradlab-join"]
            argv += [str(f) for f in group.join_files()] + ["--"]
        argv += [tools.prlimit, "--core=0", "--"]
        if user is not None:
            argv += [tools.setpriv, f"--reuid={user.uid}", f"--regid={user.gid}"]
            argv += ["--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"]
        bwrap_args = self._bwrap_args(tools, Limits(), "cpu", allow_userns=True)
        argv += [tools.bwrap, *bwrap_args, "--seccomp", str(zygote_filter), "--"]
        return [*argv, *zygotes.ZYGOTE_COMMAND, str(control_fd), str(job_filter)]

    def _run_forked(
        self, tools: _Tools, request: SandboxRequest, device_note: str
    ) -> SandboxResult | None:
        """The job, forked by the zygote; None when no zygote can start (the job then
        runs cold)."""
        forked = self._zygotes.run(
            self._zygote_identity(tools),
            request,
            lambda job_id: self._open_cgroup(job_id, request.limits),
        )
        if forked is None:
            return None
        outcome = dataclasses.replace(forked.outcome, extra=READY_MARKER if forked.set_up else b"")
        return self._result(outcome, request.limits, forked.oom_killed, device_note)

    def _host_uid(self) -> int:
        user = self.host_user()
        return user.uid if user is not None else os.getuid()

    # --- starting sandboxes ---------------------------------------------------------------

    def _start(
        self, tools: _Tools, request: SandboxRequest, device: str, *, warm: bool
    ) -> _Started:
        seccomp_fd = _seccomp_program()
        try:
            group = self._open_cgroup(request.job_id if not warm else "warm", request.limits)
        except BaseException:
            os.close(seccomp_fd)
            raise
        marker_read, marker_write = os.pipe()
        try:
            argv = self._command(
                tools, request.limits, device, group, (marker_write, seccomp_fd), warm=warm
            )
            process, started = self._spawn(argv, (marker_write, seccomp_fd))
        except BaseException:
            os.close(marker_read)
            if group is not None:
                _remove_cgroup(group)
            raise
        finally:
            os.close(marker_write)  # the chain holds its own copies
            os.close(seccomp_fd)
        return _Started(process, group, marker_read, started, request.limits, device, warm)

    def _exchange(self, started: _Started, request: SandboxRequest) -> Exchange:
        process, group = started.process, started.group
        try:
            return exchange(  # owns the marker's read end from here on
                process,
                stdin=request.stdin,
                timeout_s=request.limits.wall_seconds,
                stdout_cap=common.stdout_cap(request.limits),
                stderr_cap=common.STDERR_CAP_BYTES,
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
        """The host tools, the runtime's view and the harness as published now (a changed
        harness is published anew and picked up by the next sandbox)."""
        python = self.runtime_dir / "bin" / "python"
        if not python.exists():
            raise InfrastructureError(
                f"the sandbox runtime python {python} is missing: run scripts/setup-python.sh"
            )
        found = _find_tools(self.bwrap)
        view = runtime.runtime_view(self.runtime_dir)
        harness = publish.publish(self.harness_dir, self.publish_root)
        return _Tools(**dataclasses.asdict(found), view=view, harness=harness)

    def _open_cgroup(self, job_id: str, limits: Limits) -> cgroups.JobCgroup | None:
        job_limits = cgroups.JobLimits(
            memory_bytes=limits.memory_mb * common.MIB, pids=limits.pids, cpus=limits.cpus
        )
        return self._open_named_cgroup(cgroups.job_name(job_id), job_limits)

    def _open_named_cgroup(
        self, name: str, job_limits: cgroups.JobLimits
    ) -> cgroups.JobCgroup | None:
        if not self._reaped:  # groups a killed worker left behind
            self._reaped = True
            with contextlib.suppress(OSError):
                for folder in cgroups.reap_stale(parent=self.cgroup_parent):
                    log.warning("removed a stale job cgroup: %s", folder)
        try:
            return cgroups.open_job_cgroup(name, job_limits, parent=self.cgroup_parent)
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
        fds: tuple[int, int],
        *,
        warm: bool = False,
    ) -> list[str]:
        """The whole chain; `fds`: the marker pipe's write end, the seccomp program."""
        marker_fd, seccomp_fd = fds
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
        argv += ["--seccomp", str(seccomp_fd), "--"]
        argv += [*INIT_COMMAND, str(marker_fd), "warm" if warm else "cold"]
        if warm:
            return [*argv, "python", "-I", "-B", "-c", PRELOAD_CODE, str(marker_fd)]
        return [*argv, *common.HARNESS_COMMAND]

    def _bwrap_args(
        self, tools: _Tools, limits: Limits, device: str, *, allow_userns: bool = False
    ) -> list[str]:
        """`allow_userns`: only for the zygote, which makes each job's namespaces."""
        args = ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
        args.append("--as-pid-1")  # pid 1 is sandbox_init.py, not bwrap's own init
        if tools.disable_userns and not allow_userns:
            args.append("--disable-userns")
        args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
        args += ["--hostname", common.SANDBOX_HOSTNAME, "--clearenv"]
        for key, value in _sandbox_env(device).items():
            args += ["--setenv", key, value]
        args += tools.view.bwrap_args()
        args += ["--ro-bind", str(tools.harness), common.HARNESS_MOUNT]
        if tools.tmpfs_size:
            args += ["--size", str(limits.tmpfs_mb * common.MIB)]
        if tools.perms:
            args += ["--perms", "1777"]
        args += ["--tmpfs", common.SANDBOX_WORKDIR]
        args += ["--proc", "/proc", "--dev", "/dev"]
        if device == "cuda":
            for node in _nvidia_nodes():
                args += ["--dev-bind", node, node]
            for library in runtime.nvidia_libraries(tools.view):
                args += library.bwrap_args()
        # The root and /dev (with its /dev/shm) are tmpfs bwrap made for us: read-only, so
        # the size-capped /tmp is the only writable place.
        args += ["--remount-ro", "/dev", "--remount-ro", "/"]
        return [*args, "--chdir", common.SANDBOX_WORKDIR]

    def _spawn(
        self, argv: list[str], fds: tuple[int, ...]
    ) -> tuple[subprocess.Popen[bytes], float]:
        started = time.monotonic()

        def popen() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=fds,
                start_new_session=True,
                env=HOST_ENV,
                cwd="/",
            )

        try:  # a warm spare outlives the job (and the thread) that started it
            process = common.in_spawning_thread(popen)
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
        ending = common.Ending(
            exit_code=outcome.returncode,
            timed_out=outcome.timed_out,
            stdout_exceeded=outcome.stdout_exceeded,
            oom_killed=oom,
        )
        status, message = common.classify(ending, limits)
        if device_note:
            log.warning("%s", device_note)
            message = f"{message} ({device_note})" if message else device_note
        return SandboxResult(
            status=status,
            stdout=outcome.stdout,
            exit_code=None if ending.killed else outcome.returncode,
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
    """Stops the warm spare and the zygote held in a backend's `state`."""
    spare = state.get("_spare")
    state["_spare"] = None
    if isinstance(spare, _Started):
        spare.discard()
    slot = state.get("_zygotes")
    if isinstance(slot, zygotes.ZygoteSlot):
        slot.stop()


@dataclass(frozen=True)
class _HostTools:
    bwrap: str
    setpriv: str
    prlimit: str
    disable_userns: bool
    tmpfs_size: bool
    perms: bool


@dataclass(frozen=True)
class _Tools(_HostTools):
    """The host's tools, what the sandbox sees of the runtime, the published harness."""

    view: runtime.RuntimeView
    harness: Path


def _seccomp_program(also_allowed: tuple[str, ...] = ()) -> int:
    """A descriptor of the compiled filter, at offset 0, for bwrap's --seccomp."""
    program = syscalls.compile_bpf(also_allowed=also_allowed)
    fd = os.memfd_create("gradlab-seccomp")
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


@functools.lru_cache(maxsize=8)
def _find_tools(bwrap: str) -> _HostTools:
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
    return _HostTools(
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
        f"--cpu={cpu}:{cpu + common.CPU_HARD_GRACE_S}",
        f"--fsize={limits.file_size_mb * common.MIB}",
        f"--nofile={limits.open_files}",
        "--core=0",
    ]
    if fallback:
        address_space = (limits.memory_mb + common.RLIMIT_ADDRESS_SPACE_HEADROOM_MB) * common.MIB
        uid = user.uid if user is not None else os.getuid()
        args += [f"--as={address_space}", f"--nproc={common.process_count(uid) + limits.pids}"]
    return args


def _sandbox_env(device: str) -> dict[str, str]:
    return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", **common.harness_env(device)}


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
