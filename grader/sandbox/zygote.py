"""The worker's side of the zygote (`zygote=True`, both backends): one long-lived,
torch-loaded process that forks a freshly isolated sandbox per job
(grader/sandbox/zygote_init.py describes what runs inside). The bubblewrap backend runs
it in a bubblewrap sandbox, the Docker backend in a long-lived container
(docker_zygote.py); from the control socket on, everything here is shared: the protocol,
the slot that replaces a zygote, and the per-job header, cgroups and clean-up.

    worker (root)                                   zygote (sandbox user, bwrap/container)
    makes the job's cgroups, three pipes and a
    socket pair; sends a header (rlimits, /tmp
    size) and four descriptors    -- control -->    forks the keeper; closes its copies
    reads "H" with SCM_CREDENTIALS: the keeper's
    host pid; moves it into the job's cgroups     keeper, meanwhile: new namespaces,
    (while it isolates itself); sends "J"         /tmp, rlimits; after "J" (in the
                                  <-- link -->      job's cgroups): its init, /proc, no
                                                    capabilities, the job filter, then
                                                    the harness on stdin/stdout
    writes stdin, reads stdout and stderr under
    the wall clock (process.exchange), reads "1"
    (set up) and "S" + status; then, in the
    background, awaits the keeper's exit (a
    pidfd), kills whatever is left in the job's
    cgroups, removes them

Nothing of a job passes through the zygote: its input and output go through the job's
own pipes, which the zygote holds only between receiving them and forking. A zygote serves
at most `max_jobs` jobs (GRADLAB_ZYGOTE_JOBS, default 1), and is replaced when it has died,
and when the published harness or the runtime (the bubblewrap runtime, the Docker image)
changes (ZygoteIdentity, ZygoteSlot): as the serving zygote takes its last job, the next
generation is started in the background, so that the next job finds it ready.

Nothing a job writes outlives it: /tmp is its only writable place (its own tmpfs), its
/dev/shm and /dev/mqueue (a Docker container has one) are empty read-only tmpfs, and its
SysV IPC and POSIX message queues are those of its own ipc namespace
(tests/sandbox/test_cross_job_isolation.py, every backend).

Hash secret and address layout: a fork inherits both, so the jobs of one zygote share its
str/bytes hash secret and its address layout (libraries, heap, stack; fresh mappings land
where a sibling job's did). CPython cannot change its hash secret once it has hashed
anything (cached hashes, interned strings and every dict would disagree), and only an exec
re-randomises a layout, which means importing torch again. Hence the default, one job per
zygote generation (max_jobs=1): each job is forked by a freshly exec'd zygote of its own,
started ahead (ZygoteSlot), so that a job with a ready spare pays the fork's latency only,
and each job pays a zygote's start in CPU, off its latency. Measured on the shared 2-core
test host (load 3-4, an empty raw job; docs/measurements.md, "The zygote"): 67 ms per job
forked by a ready spare (Docker 48 ms) against 37 ms (24 ms) forked by a reused zygote
(the spare's start competes with the job for the CPU); a zygote's start 1.6-2.6 s of CPU
(its python's user+sys; Docker: and the Engine's container start), against some 50-80 ms
per forked job; a job arriving while the spare still starts waits for the rest of that
start: back to back on one worker process, 2.8 s per job (Docker 2.3 s) against 37 ms.
The runs of one grading (the learner's runs and the reference runs made for its
seed) carry one share key (SandboxRequest.share, the grading's job id): the generation
that forks the first forks the rest (up to SHARED_JOBS more), so a grading costs one
zygote start, and the keeper prepared ahead goes to it, not to the spare; no job of
another key is forked by it. `make bench BENCH_ARGS="--quick --paths zygote"`, quiet,
3 December: POST -> graded p50 359 ms (200 ms with a zygote shared by 500 jobs), a burst
of 30 at 46 gradings a minute (356), the sandbox job alone back to back 2.1 s (38 ms).
A deployment that chooses throughput sets GRADLAB_ZYGOTE_JOBS higher: the jobs of one
zygote (at most that many) then share its hash secret and layout. Neither value tells a
job anything of another: each job can read its own (hash(), /proc/self/maps), no job can
reach another's memory or the zygote's (own user and pid namespaces, non-dumpable, no
ptrace or process_vm_* in the filter), and the worker, which reads a job's output, is no
fork of the zygote.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from grader.protocol import InfrastructureError, Limits, SandboxRequest
from grader.sandbox import cgroups, common
from grader.sandbox.config import DEFAULT_ZYGOTE_JOBS
from grader.sandbox.process import Exchange, exchange

log = logging.getLogger(__name__)

ZYGOTE_SOURCE = (Path(__file__).resolve().parent / "zygote_init.py").read_text(encoding="utf-8")
ZYGOTE_COMMAND = ("python", "-I", "-B", "-c", ZYGOTE_SOURCE)
READY_TIMEOUT_S = 300.0  # importing torch on a loaded 2-core host can take tens of seconds
HELLO_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
DEFAULT_MAX_JOBS = DEFAULT_ZYGOTE_JOBS
STDERR_TAIL = 2000
KEEPER_EXIT_S = 1.0  # after "S", how long the keeper's own exit is awaited before a kill
# The zygote's own group: its memory (torch loaded) and the keepers it has just forked.
ZYGOTE_LIMITS = cgroups.JobLimits(memory_bytes=2048 * 1024 * 1024, pids=128, cpus=1.0)
_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid
# After a zygote failed to start, jobs run cold for this long before it is tried again.
RETRY_S = 60.0
# Jobs of one share key (SandboxRequest.share) one generation forks beyond `max_jobs`.
SHARED_JOBS = 16
# How long a job awaits a spare still starting: its wait for "R" (READY_TIMEOUT_S) and,
# before it, its start (a container's create, start and connection: seconds).
SPARE_TIMEOUT_S = READY_TIMEOUT_S + 60.0
ATTEMPTS = 2  # a job the zygote failed to start is given to a fresh one, once
PREPARED_JOB_ID = "prepared"  # a prepared sandbox's cgroups, until its job renames them


class ZygoteFailed(InfrastructureError):
    """The zygote could not start a job (before any of the job's data was read): the job
    may be given to a new zygote."""


@dataclass(frozen=True)
class ZygoteIdentity:
    """What a zygote was started from: a job may use it only while these are current."""

    harness: Path  # the published harness folder (its name carries the content hash)
    runtime: tuple[Hashable, ...]  # runtime.fingerprint, or the Docker image's id
    host_uid: int  # who the sandbox runs as on the host


class ZygoteHost(Protocol):
    """What runs the zygote: a bubblewrap chain (ChainHost) or a container."""

    @property
    def pid(self) -> int | None:
        """The host pid of the outermost process (bwrap, or the container's init)."""
        ...

    def running(self) -> bool: ...

    def kill(self) -> None:
        """Kills it and waits for it to end."""
        ...

    def diagnostics(self) -> str:
        """The tail of its stderr."""
        ...


class Zygote:
    """One running zygote and its control socket."""

    def __init__(
        self,
        host: ZygoteHost,
        control: socket.socket,
        group: cgroups.JobCgroup | None,
        identity: ZygoteIdentity,
    ) -> None:
        self.host = host
        self.control = control
        self.group = group
        self.identity = identity
        self.jobs = 0  # jobs given to it (its quota: ZygoteSlot.max_jobs)
        self.share = ""  # its first job's share key: more jobs of that key may follow
        self.in_flight = 0  # of those, the ones whose result is not in yet
        self._lock = threading.Lock()
        self._stopped = False
        self._stop_lock = threading.Lock()

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Returns once the zygote has imported torch; raises InfrastructureError if it
        dies or does not get there in time."""
        readable, _, _ = select.select([self.control], [], [], timeout_s)
        message = self.control.recv(1) if readable else b""
        if message != b"R":
            why = self.stderr_tail() or "no answer in time"
            self.stop()
            raise InfrastructureError(f"the zygote did not start: {why}")

    def alive(self) -> bool:
        """Running and its control socket open (it never writes after "R": anything
        readable is its end closing)."""
        if not self.host.running():
            return False
        try:
            readable, _, _ = select.select([self.control], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def fork(self, header: dict[str, Any], group: cgroups.JobCgroup | None) -> ZygoteJob:
        """Starts one job: its keeper is forked, in `group` and isolating itself, when
        this returns; its harness then waits for the job on stdin. Raises
        InfrastructureError."""
        link, child_link = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        link.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr
        theirs = [child_link.fileno(), pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        try:
            with self._lock:
                socket.send_fds(self.control, [json.dumps(header).encode()], theirs)
        except OSError as error:
            link.close()
            _close(ours)
            raise ZygoteFailed(f"the zygote does not answer: {error}") from error
        finally:
            child_link.close()
            _close([pipes[0][0], pipes[1][1], pipes[2][1]])
        streams = (
            os.fdopen(fd, mode, 0) for fd, mode in zip(ours, ("wb", "rb", "rb"), strict=True)
        )
        job = ZygoteJob(link, *streams)
        try:
            job.pid = _hello(link, self.identity.host_uid)
            job.watch_keeper()
            _join(job.pid, group)
            job.start()
        except BaseException:
            job.kill(group)
            job.close()
            raise
        return job

    def stderr_tail(self) -> str:
        return self.host.diagnostics()[-STDERR_TAIL:]

    def stop(self) -> None:
        """Kills the zygote (once: a spare being cancelled may be stopped twice). A job
        it forked that still runs is in its pid namespace and may end with it: the slot
        stops a worn-out zygote only once the results of its jobs are in."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        with contextlib.suppress(OSError):
            self.control.close()
        self.host.kill()
        if self.group is not None:
            try:
                self.group.remove()
            except OSError as error:
                log.error("cannot remove the zygote's cgroup: %s", error)


class ChainHost:
    """A zygote run by a local process chain (the bubblewrap backend's)."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self.process = process
        self.stderr = stderr

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_TIMEOUT_S)
        with contextlib.suppress(OSError):
            self.stderr.close()

    def diagnostics(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            return self.stderr.read().decode("utf-8", "replace").strip()
        return ""


class ZygoteJob:
    """One job forked by the zygote, driven like a subprocess by process.exchange."""

    def __init__(self, link: socket.socket, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]):
        self.link = link
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.pid: int | None = None  # the keeper's, on the host
        self.returncode: int | None = None
        self.set_up = False  # the job's init reported its sandbox ready
        self._said = b""
        self._pidfd: int | None = None  # the keeper's, readable once it has exited

    def start(self) -> None:
        """Lets the keeper go on (it is in the job's cgroups): it forks the job's init,
        which runs the harness."""
        try:
            self.link.sendall(b"J")
        except OSError as error:
            raise ZygoteFailed(f"the zygote's job ended before it started: {error}") from error

    def waiting(self) -> bool:
        """A job not handed over yet is still there: its keeper has not exited (it
        would once its init, the harness, ended)."""
        if self._pidfd is not None:
            with contextlib.suppress(OSError, ValueError):
                readable, _, _ = select.select([self._pidfd], [], [], 0)
                return not readable
            return False
        try:  # no pidfd: the link at its end ("1" may be there already)
            return self.link.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def watch_keeper(self) -> None:
        """Opens a pidfd of the keeper (its pid is its own until it is reaped: it waits
        for "J"), so that the end of the job can wait for its exit instead of polling."""
        if self.pid is not None and hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self._pidfd = os.pidfd_open(self.pid)

    def keeper_exited(self, timeout_s: float) -> bool:
        """Waits up to `timeout_s` for the keeper to exit (it does once it has said "S");
        False when it has not or cannot be watched."""
        if self._pidfd is None:
            return False
        with contextlib.suppress(OSError, ValueError):
            readable, _, _ = select.select([self._pidfd], [], [], timeout_s)
            return bool(readable)
        return False

    def wait(self, timeout: float | None = None) -> int:
        """The job's exit status (shell encoding); 137 when its keeper was killed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            readable, _, _ = select.select([self.link], [], [], remaining)
            if not readable:
                raise subprocess.TimeoutExpired("zygote job", timeout or 0.0)
            try:
                chunk = self.link.recv(64)
            except OSError:
                chunk = b""
            self._said += chunk
            self._parse(ended=not chunk)
        return self.returncode

    def _parse(self, *, ended: bool) -> None:
        said = self._said
        if said.startswith(b"1"):
            self.set_up, said = True, said[1:]
        if said.startswith(b"S") and len(said) >= 5:
            self.returncode = struct.unpack("!i", said[1:5])[0]
        elif ended:
            self.returncode = 128 + signal.SIGKILL

    def kill(self, group: cgroups.JobCgroup | None) -> None:
        """SIGKILL everything of the job: its cgroup, or (without one) the keeper's
        process group, whose init takes the job's pid namespace with it."""
        if group is not None:
            if not group.kill_all():
                log.error("processes of a finished job survive in its cgroup: %s", group.pids())
            return
        if self.pid is not None and self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(OSError):
            self.link.close()
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None


def start(argv: list[str], fds: tuple[int, ...], control: socket.socket, **parts: Any) -> Zygote:
    """Runs `argv` (the bubblewrap chain ending in ZYGOTE_COMMAND and its fd arguments),
    passing `fds`, from the process's spawning thread; `control` is the worker's end of
    the control socket."""
    stderr = tempfile.TemporaryFile(prefix="gradlab-zygote-")  # noqa: SIM115
    try:
        process = common.in_spawning_thread(lambda: _popen(argv, fds, stderr))
    except OSError as error:
        stderr.close()
        raise InfrastructureError(f"cannot start the zygote ({argv[0]}): {error}") from error
    return Zygote(ChainHost(process, stderr), control, **parts)


def _popen(argv: list[str], fds: tuple[int, ...], stderr: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        pass_fds=fds,
        start_new_session=True,
        env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        cwd="/",
    )


def _hello(link: socket.socket, host_uid: int) -> int:
    """The keeper's host pid, from the credentials the kernel attached to its "H"."""
    link.settimeout(HELLO_TIMEOUT_S)
    try:
        message, ancillary, _, _ = link.recvmsg(1, socket.CMSG_SPACE(_CREDENTIALS.size))
    except OSError as error:
        raise ZygoteFailed(f"the zygote's job did not start: {error}") from error
    finally:
        link.settimeout(None)
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid, uid, _ = _CREDENTIALS.unpack(data[: _CREDENTIALS.size])
            if message == b"H" and uid == host_uid and pid > 0:
                return int(pid)
    raise ZygoteFailed("the zygote's job did not start (no hello with credentials)")


def _join(pid: int, group: cgroups.JobCgroup | None) -> None:
    """Moves the keeper into the job's cgroups (while it isolates itself: it forks the
    job only after "J")."""
    if group is None:
        return
    try:
        for procs in group.join_files():
            procs.write_text(str(pid))
    except OSError as error:  # the keeper died (its set-up failed) or the group is gone
        raise ZygoteFailed(f"cannot move the zygote's job into its cgroup: {error}") from error


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


# --- the slot: one zygote per backend (per worker process), replaced when it must be ------


@dataclass(frozen=True)
class ForkedRun:
    """What one job forked by a zygote gave back."""

    outcome: Exchange
    set_up: bool  # the job's init reported its sandbox ready
    oom_killed: bool


OpenGroup = Callable[[str], "cgroups.JobCgroup | None"]  # a job id -> its cgroup(s)


@dataclass
class _Prepared:
    """A job's sandbox forked ahead of the job (which is not known yet: it will have the
    same limits): its keeper in cgroups of its own, isolated, its harness waiting for the
    job on stdin (as a warm bubblewrap sandbox waits: started early, never reused)."""

    zygote: Zygote
    limits: Limits
    group: cgroups.JobCgroup
    job: ZygoteJob

    def discard(self) -> None:
        self.job.kill(self.group)
        self.job.close()
        _remove_group(self.group)


class _Spare:
    """The next zygote generation, started ahead in a thread of its own by the slot's
    `start` (a fresh exec: a new hash secret, a new address layout) and awaited there
    until ready, so that the job after the serving zygote's last one pays only a fork.
    Cancelling it ends what it has started, at whatever stage: a zygote still importing
    torch is killed (its wait for "R" then ends at once), a ready one is stopped."""

    def __init__(self, identity: ZygoteIdentity, start: Callable[[ZygoteIdentity], Zygote]):
        self.identity = identity
        self.error = ""  # why it did not start, once it has not
        self._lock = threading.Lock()
        self._zygote: Zygote | None = None  # once started, ready or not
        self._ready = False
        self._cancelled = False
        self._claimed = False  # handed to the slot: no longer the spare's to stop
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(start,), name="gradlab-zygote-spare", daemon=True
        )
        self._thread.start()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def wait(self, timeout_s: float) -> Zygote | None:
        """The zygote once it is ready (None: it failed, was cancelled or is not ready
        within `timeout_s`)."""
        self._done.wait(timeout_s)
        with self._lock:
            return self._zygote if self._ready and not self._cancelled else None

    def claim(self, timeout_s: float) -> Zygote | None:
        """As `wait`, and the ready zygote is the caller's from then on."""
        self._done.wait(timeout_s)
        with self._lock:
            if not self._ready or self._cancelled:
                return None
            self._claimed = True
            return self._zygote

    def cancel(self) -> None:
        """Ends the spare, unless claimed; returns once nothing of it is left (its
        thread has ended)."""
        with self._lock:
            if self._claimed:
                return
            self._cancelled = True
            zygote, ready = self._zygote, self._ready
        if ready and zygote is not None:
            zygote.stop()
        elif zygote is not None:
            zygote.host.kill()  # its control socket closes: wait_ready fails, stopping it
        self._thread.join(SPARE_TIMEOUT_S)

    def _run(self, start: Callable[[ZygoteIdentity], Zygote]) -> None:
        try:
            self._start_and_wait(start)
        except Exception as error:  # whatever it was, the job that awaits it logs it
            self.error = str(error) or type(error).__name__
        finally:
            self._done.set()

    def _start_and_wait(self, start: Callable[[ZygoteIdentity], Zygote]) -> None:
        zygote = start(self.identity)
        with self._lock:
            self._zygote = zygote
            cancelled = self._cancelled
        if not cancelled:
            zygote.wait_ready()  # raises, having stopped it, when it does not get there
        with self._lock:
            cancelled = self._cancelled
            self._ready = not cancelled
        if cancelled:
            zygote.stop()
            self.error = "cancelled"


class ZygoteSlot:
    """The zygote of one backend: started by `start`, replaced when dead, after
    `max_jobs` jobs or when the identity a job asks for differs from its own. When none
    can start, `run` answers None for RETRY_S (the backend then runs the job cold).

    Generations, started ahead: as soon as the serving zygote has taken its last job,
    the next one (a spare) is started in the background by the same `start`, so that the
    next job finds a freshly exec'd zygote ready (its own hash secret and address layout)
    and pays only the fork; a job arriving while the spare still starts waits for it
    (READY_TIMEOUT_S, as for a zygote started for it), and one it failed to start leaves
    jobs cold for RETRY_S, as a failed start does. A worn-out zygote is stopped in the
    background once the results of its jobs are in (a job still running would end with
    it). With max_jobs=1 (the default) every job has a zygote generation of its own.

    While a job runs, the slot prepares the next job's sandbox in the background: its
    keeper forked and moved into cgroups of its own (with the same limits: moving a
    process into a cgroup waits for an RCU grace period, some 10 ms), isolated, its init
    and harness forked, the harness waiting for its job on stdin; on the serving zygote,
    or, when that has taken its last job, on the spare once it is ready. The next job
    takes it only when its zygote and limits are the ones it was prepared with (else it
    is discarded); its cgroups are then renamed after the job, and its wall clock starts
    at the hand-over. Where cgroups cannot be renamed (cgroup v2) or there are none,
    every job's sandbox is forked for it."""

    def __init__(self, start: Callable[[ZygoteIdentity], Zygote], max_jobs: int) -> None:
        """`start` (usually a backend's method: held weakly, so that the slot, which the
        backend's finaliser stops, does not keep the backend alive) returns a started
        zygote, which the slot awaits (Zygote.wait_ready) before it serves."""
        self._start: Callable[[], Callable[[ZygoteIdentity], Zygote] | None] = (
            weakref.WeakMethod(start) if inspect.ismethod(start) else lambda: start
        )
        self.max_jobs = max_jobs
        self.generations = 0  # zygotes started so far (ahead or for a job)
        self._current: Zygote | None = None
        self._spare: _Spare | None = None  # the next generation, started ahead
        self._retired: set[Zygote] = set()  # worn out, stopped once their jobs are done
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self._next: _Prepared | None = None
        self._preparing: threading.Thread | None = None
        self._prepares = True  # False once a prepared keeper's cgroups could not be renamed

    def ready(
        self, identity: ZygoteIdentity, *, for_job: bool = True, share: str = ""
    ) -> Zygote | None:
        """The running zygote, replaced when dead, worn out or out of date (by the spare
        when it was started for `identity`); None when none can start. A job given it
        (`for_job`) that is its last starts the next generation. A job of the serving
        zygote's share key (`share`, its first job's) is forked by it past `max_jobs`, up
        to SHARED_JOBS more."""
        with self._lock:
            current = self._current
            if current is not None and not self._serves(current, identity, share):
                self._current = None
                self._retire(current)
                current = None
            if current is None:
                current = self._next_generation(identity)
                if current is None:
                    return None
                self._current = current
            if for_job:
                if current.jobs == 0:
                    current.share = share
                current.jobs += 1
                current.in_flight += 1
                if current.jobs >= self.max_jobs:
                    self._start_spare(identity)
            return current

    def _serves(self, zygote: Zygote, identity: ZygoteIdentity, share: str) -> bool:
        """Whether `zygote` may fork a job of `identity` and `share` key."""
        if not zygote.alive() or zygote.identity != identity:
            return False
        if share and share == zygote.share:
            return zygote.jobs < self._quota(zygote)
        return zygote.jobs < self.max_jobs

    def _quota(self, zygote: Zygote) -> int:
        """The jobs `zygote` may fork: `max_jobs`, and SHARED_JOBS more of its share key."""
        return self.max_jobs + (SHARED_JOBS if zygote.share else 0)

    def _next_generation(self, identity: ZygoteIdentity) -> Zygote | None:
        """The spare, awaited, when it was started for `identity`; else a zygote started
        now. None when neither can serve. Called with the lock held."""
        spare = self._spare  # stays visible to `stop` while it is awaited here
        if spare is not None:
            zygote = spare.claim(SPARE_TIMEOUT_S) if spare.identity == identity else None
            stopping = spare.cancelled  # by `stop`, meanwhile
            self._spare = None
            if zygote is None:
                spare.cancel()  # (it has ended, or is not ready in time, or is out of date)
            if zygote is not None and zygote.alive():
                return zygote
            if zygote is not None:  # it died while it waited for its first job
                zygote.stop()
            elif spare.identity == identity:  # it did not start, or the slot is stopping
                if not stopping:
                    why = spare.error or "not ready in time"
                    log.warning("no zygote (jobs run in cold sandboxes for now): %s", why)
                    self._retry_at = time.monotonic() + RETRY_S
                return None
        if time.monotonic() < self._retry_at:
            return None
        try:
            start = self._starter()
            self.generations += 1
            started = start(identity)
            started.wait_ready()
        except InfrastructureError as error:
            log.warning("no zygote (jobs run in cold sandboxes for now): %s", error)
            self._retry_at = time.monotonic() + RETRY_S
            return None
        return started

    def _start_spare(self, identity: ZygoteIdentity) -> None:
        """Starts the next generation in the background (called with the lock held)."""
        if self._spare is not None:
            return
        try:
            start = self._starter()
        except InfrastructureError:
            return
        self.generations += 1
        self._spare = _Spare(identity, start)

    def _retire(self, zygote: Zygote) -> None:
        """A zygote that serves no more jobs: stopped in the background, at once or, while
        jobs of it run, once their results are in (`_release`). Lock held."""
        if zygote.in_flight:
            self._retired.add(zygote)
        else:
            _in_background(zygote.stop, "gradlab-zygote-stop")

    def _release(self, serving: Zygote) -> None:
        """A job of `serving` has its result: a worn-out zygote whose jobs all have theirs
        is stopped (in the background: a container's removal takes a while)."""
        with self._lock:
            serving.in_flight -= 1
            # (a shared one stays for its key's next job: another key's job retires it)
            if serving is self._current and serving.jobs >= self._quota(serving):
                self._current = None
                self._retired.add(serving)
            done = serving in self._retired and serving.in_flight == 0
            if done:
                self._retired.discard(serving)
        if done:
            _in_background(serving.stop, "gradlab-zygote-stop")

    def _starter(self) -> Callable[[ZygoteIdentity], Zygote]:
        start = self._start()
        if start is None:
            raise InfrastructureError("the sandbox backend of this zygote is gone")
        return start

    def pid(self) -> int | None:
        """The host pid of the running zygote's outermost process, if any."""
        with self._lock:
            current = self._current
        return current.host.pid if current is not None and current.alive() else None

    def spare_pid(self, wait_s: float = 0.0) -> int | None:
        """The host pid of the next generation once it is ready (awaited up to `wait_s`);
        None when none was started, or it is not ready (yet)."""
        spare = self._spare  # (read without the lock: a job may hold it, awaiting the spare)
        zygote = spare.wait(wait_s) if spare is not None else None
        return zygote.host.pid if zygote is not None else None

    def run(
        self, identity: ZygoteIdentity, request: SandboxRequest, open_group: OpenGroup
    ) -> ForkedRun | None:
        """The job, forked by the zygote (by a new one if it fails to start the job);
        None when no zygote can start. `open_group` makes a job's cgroups (None: none)."""
        for attempt in range(ATTEMPTS):
            serving = self.ready(identity, share=request.share)
            if serving is None:
                return None
            try:
                prepared = self._take_prepared(serving, request)
                started = functools.partial(self._prepare, serving, request.limits, open_group)
                return _run_in(serving, request, open_group, prepared, started)
            except ZygoteFailed:
                self._drop(serving)
                if attempt + 1 == ATTEMPTS:
                    raise
            finally:
                self._release(serving)
        return None

    def stop(self) -> None:
        """Stops every zygote of the slot: the serving one, the spare (starting or
        ready), the retired ones; returns once nothing of them, or of their jobs'
        ends, is left."""
        spare = self._spare  # read without the lock: a job may hold it, awaiting this spare
        if spare is not None:
            spare.cancel()
        with self._lock:
            current, self._current = self._current, None
            spare, self._spare = self._spare, None
            retired, self._retired = self._retired, set()
        if spare is not None:
            spare.cancel()
        self._discard_prepared()
        for zygote in [*retired, *([current] if current is not None else [])]:
            zygote.stop()
        await_job_ends()

    def _drop(self, broken: Zygote) -> None:
        with self._lock:
            if self._current is broken:
                self._current = None
            self._retired.discard(broken)
        self._discard_prepared()
        log.warning("the zygote failed; replacing it: %s", broken.stderr_tail())
        broken.stop()

    # --- the next job's keeper, prepared ahead ------------------------------------------

    def _prepare(self, serving: Zygote, limits: Limits, open_group: OpenGroup) -> None:
        """Starts preparing the next job's keeper in the background (on the serving
        zygote, or on the spare when the serving one has taken its last job), unless one
        is ready or under way."""
        with self._lock:
            if not self._prepares or self._next is not None:
                return
            if self._preparing is not None and self._preparing.is_alive():
                return
            # a shared generation's next job is most likely its key's next run: the
            # keeper goes there, and no job of that key awaits the spare's start
            target = serving if serving.jobs < self._quota(serving) else self._spare
            if target is None:
                return
            self._preparing = threading.Thread(
                target=self._prepare_now, args=(target, limits, open_group),
                name="gradlab-zygote-prepare", daemon=True,
            )  # fmt: skip
            self._preparing.start()

    def _prepare_now(self, target: Zygote | _Spare, limits: Limits, open_group: OpenGroup) -> None:
        zygote = target.wait(SPARE_TIMEOUT_S) if isinstance(target, _Spare) else target
        if zygote is None:  # the spare did not start, or was cancelled
            return
        try:
            group = open_group(PREPARED_JOB_ID)
        except InfrastructureError as error:
            log.warning("cannot prepare the next job's cgroups: %s", error)
            return
        if group is None:  # nothing to move ahead of time: keepers are forked per job
            with self._lock:
                self._prepares = False
            return
        try:
            header = job_header(limits, group, zygote.identity.host_uid)
            job = zygote.fork(header, group)
        except (InfrastructureError, OSError) as error:
            _remove_group(group)
            log.info("the next job's sandbox could not be prepared: %s", error)
            return
        prepared = _Prepared(zygote, limits, group, job)
        with self._lock:
            spare = self._spare
            live = self._current is zygote or (spare is not None and spare.wait(0) is zygote)
            fresh = live and self._next is None
            if fresh:
                self._next = prepared
        if not fresh:  # the zygote was replaced or stopped meanwhile
            prepared.discard()

    def _take_prepared(self, serving: Zygote, request: SandboxRequest) -> _Prepared | None:
        """The prepared keeper when it fits `request` (its cgroups renamed after the job);
        else None, and any prepared one is discarded."""
        with self._lock:
            preparing = self._preparing
        if preparing is not None:
            preparing.join(HELLO_TIMEOUT_S)  # a few ms: a keeper forked now takes as long
        with self._lock:
            prepared, self._next = self._next, None
        if prepared is None:
            return None
        usable = prepared.zygote is serving and prepared.limits == request.limits
        if not usable or not serving.alive() or not prepared.job.waiting():
            prepared.discard()
            return None
        try:
            prepared.group = prepared.group.renamed(cgroups.job_name(request.job_id))
        except OSError as error:
            log.info("cgroups cannot be renamed (%s): keepers are forked per job", error)
            with self._lock:
                self._prepares = False
            prepared.discard()
            return None
        return prepared

    def _discard_prepared(self) -> None:
        with self._lock:
            preparing = self._preparing
        if preparing is not None and preparing is not threading.current_thread():
            preparing.join(HELLO_TIMEOUT_S)
        with self._lock:
            prepared, self._next = self._next, None
        if prepared is not None:
            prepared.discard()


def _run_in(
    serving: Zygote,
    request: SandboxRequest,
    open_group: OpenGroup,
    prepared: _Prepared | None,
    started: Callable[[], None],
) -> ForkedRun:
    """Runs the job in the `prepared` sandbox, else in one forked now; `started` is
    called once the job is under way. Once its result is in, the job's end (its keeper's
    exit, what is left in its cgroups killed, the cgroups removed) is seen to in the
    background: every process of the job but its keeper has ended by then (its init did,
    taking its pid namespace with it), and the keeper is exiting."""
    limits = request.limits
    group = prepared.group if prepared is not None else open_group(request.job_id)
    try:
        if prepared is not None:
            job = prepared.job
        else:
            job = serving.fork(job_header(limits, group, serving.identity.host_uid), group)
    except BaseException:
        if group is not None:
            _remove_group(group)
        raise
    try:
        started()
        outcome = exchange(
            job,
            stdin=request.stdin,
            timeout_s=limits.wall_seconds,
            stdout_cap=common.stdout_cap(limits),
            stderr_cap=common.STDERR_CAP_BYTES,
            kill=lambda: job.kill(group),
        )
        oom = group is not None and group.oom_killed()
    except BaseException:
        _end(job, group)
        raise
    _end_in_background(job, group)
    if prepared is not None and _died_with_its_zygote(outcome, serving):
        raise ZygoteFailed(f"the zygote died with the job's prepared sandbox: {outcome.returncode}")
    return ForkedRun(outcome, job.set_up, oom)


_ENDING: set[threading.Thread] = set()  # jobs (and worn-out zygotes) being ended
_ENDING_LOCK = threading.Lock()


def _end_in_background(job: ZygoteJob, group: cgroups.JobCgroup | None) -> None:
    """`_end` in a thread of its own (see `_in_background`)."""
    _in_background(functools.partial(_end, job, group), "gradlab-job-end")


def _in_background(end: Callable[[], None], name: str) -> None:
    """`end` in a thread of its own (not a daemon: the interpreter's exit waits for it,
    so that an exiting worker leaves no cgroup or zygote behind; `await_job_ends` too)."""

    def run() -> None:
        try:
            end()
        finally:
            with _ENDING_LOCK:
                _ENDING.discard(thread)

    thread = threading.Thread(target=run, name=name)
    with _ENDING_LOCK:
        _ENDING.add(thread)
    thread.start()


def await_job_ends(timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Returns once every job ended so far is ended in full (or after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    with _ENDING_LOCK:
        ending = list(_ENDING)
    for thread in ending:
        with contextlib.suppress(RuntimeError):  # not started: its starter was interrupted
            thread.join(max(deadline - time.monotonic(), 0.0))


def _end(job: ZygoteJob, group: cgroups.JobCgroup | None) -> None:
    """Nothing of the job outlives it, even a detached child: its keeper's exit awaited
    (it exits once it has said "S"; the group is then empty at once), whatever is left
    killed, its descriptors closed, its cgroups removed."""
    try:
        if job.returncode is not None:
            job.keeper_exited(KEEPER_EXIT_S)
        job.kill(group)
        job.close()
    finally:
        if group is not None:
            _remove_group(group)


def _died_with_its_zygote(outcome: Exchange, serving: Zygote) -> bool:
    """A prepared sandbox killed (not by its limits) because its zygote died meanwhile:
    its job may run again, in a fresh sandbox."""
    killed = outcome.returncode == 128 + signal.SIGKILL and not outcome.timed_out
    return killed and not outcome.stdout_exceeded and not serving.alive()


def _remove_group(group: cgroups.JobCgroup) -> None:
    try:
        group.remove()
    except OSError as error:
        log.error("cannot remove a job's cgroup: %s", error)


def job_header(limits: Limits, group: cgroups.JobCgroup | None, host_uid: int) -> dict[str, Any]:
    """What the zygote's keeper sets up for one job: rlimits as a cold sandbox has them
    (without a cgroup, memory and processes by RLIMIT_AS and RLIMIT_NPROC too), and the
    size of /tmp."""
    import resource

    cpu = int(limits.cpu_seconds)
    size = limits.file_size_mb * common.MIB
    rlimits = [
        (resource.RLIMIT_CPU, cpu, cpu + common.CPU_HARD_GRACE_S),
        (resource.RLIMIT_FSIZE, size, size),
        (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if group is None:
        address_space = (limits.memory_mb + common.RLIMIT_ADDRESS_SPACE_HEADROOM_MB) * common.MIB
        nproc = common.process_count(host_uid) + limits.pids
        rlimits += [
            (resource.RLIMIT_AS, address_space, address_space),
            (resource.RLIMIT_NPROC, nproc, nproc),
        ]
    return {"rlimits": rlimits, "tmpfs_bytes": limits.tmpfs_mb * common.MIB}
