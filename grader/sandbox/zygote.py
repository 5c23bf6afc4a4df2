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
own pipes, which the zygote holds only between receiving them and forking. The zygote is
replaced when it has died, after `max_jobs` jobs, and when the published harness or the
runtime (the bubblewrap runtime, the Docker image) changes (ZygoteIdentity, ZygoteSlot).

Nothing a job writes outlives it: /tmp is its only writable place (its own tmpfs), its
/dev/shm and /dev/mqueue (a Docker container has one) are empty read-only tmpfs, and its
SysV IPC and POSIX message queues are those of its own ipc namespace
(tests/sandbox/test_cross_job_isolation.py, every backend).

Hash secret and address layout: a fork inherits both, so every job of one zygote has the
zygote's str/bytes hash secret and its address layout (libraries, heap, stack; fresh
mappings land where a sibling job's did), shared by at most `max_jobs` jobs. CPython cannot
change its hash secret once it has hashed anything (cached hashes, interned strings and
every dict would disagree), and only an exec re-randomises a layout, which means importing
torch again: a cold sandbox's cost. Measured on the 2-core test host, loaded (an empty
job, the real harness): median 9.9 s per job cold, 0.26 s forked by the zygote; a zygote's
start (what a fresh zygote generation per job, started ahead in the background, would
cost each job in CPU, its latency hidden) 7-8 s, against 50-80 ms per forked empty raw job.
Neither value tells a job anything of another: each job can read its own (hash(),
/proc/self/maps), no job can reach another's memory or the zygote's (own user and pid
namespaces, non-dumpable, no ptrace or process_vm_* in the filter), and the worker, which
reads a job's output, is no fork of the zygote. A deployment that wants both fresh per
job runs without the zygote.
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
        self.jobs = 0
        self._lock = threading.Lock()

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
        """Kills the zygote (jobs it forked live in their own cgroups and go on)."""
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


class ZygoteSlot:
    """The zygote of one backend: started by `start`, replaced when dead, after
    `max_jobs` jobs or when the identity a job asks for differs from its own. When none
    can start, `run` answers None for RETRY_S (the backend then runs the job cold).

    While a job runs, the slot prepares the next job's sandbox in the background: its
    keeper forked and moved into cgroups of its own (with the same limits: moving a
    process into a cgroup waits for an RCU grace period, some 10 ms), isolated, its init
    and harness forked, the harness waiting for its job on stdin. The next job takes it
    only when its zygote and limits are the ones it was prepared with (else it is
    discarded); its cgroups are then renamed after the job, and its wall clock starts at
    the hand-over. Where cgroups cannot be renamed (cgroup v2) or there are none, every
    job's sandbox is forked for it."""

    def __init__(self, start: Callable[[ZygoteIdentity], Zygote], max_jobs: int) -> None:
        """`start` is usually a backend's method: held weakly, so that the slot (which
        the backend's finaliser stops) does not keep the backend alive."""
        self._start: Callable[[], Callable[[ZygoteIdentity], Zygote] | None] = (
            weakref.WeakMethod(start) if inspect.ismethod(start) else lambda: start
        )
        self.max_jobs = max_jobs
        self._current: Zygote | None = None
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self._next: _Prepared | None = None
        self._preparing: threading.Thread | None = None
        self._prepares = True  # False once a prepared keeper's cgroups could not be renamed

    def ready(self, identity: ZygoteIdentity, *, for_job: bool = True) -> Zygote | None:
        """The running zygote, replaced when dead, worn out or out of date; None when none
        can start."""
        with self._lock:
            current = self._current
            if current is not None and (
                not current.alive() or current.jobs >= self.max_jobs or current.identity != identity
            ):
                self._current = None
                current.stop()
                current = None
            if current is None:
                if time.monotonic() < self._retry_at:
                    return None
                try:
                    current = self._starter()(identity)
                except InfrastructureError as error:
                    log.warning("no zygote (jobs run in cold sandboxes for now): %s", error)
                    self._retry_at = time.monotonic() + RETRY_S
                    return None
                self._current = current
            current.jobs += for_job
            return current

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

    def run(
        self, identity: ZygoteIdentity, request: SandboxRequest, open_group: OpenGroup
    ) -> ForkedRun | None:
        """The job, forked by the zygote (by a new one if it fails to start the job);
        None when no zygote can start. `open_group` makes a job's cgroups (None: none)."""
        for attempt in range(ATTEMPTS):
            serving = self.ready(identity)
            if serving is None:
                return None
            prepared = self._take_prepared(serving, request)
            started = functools.partial(self._prepare, serving, request.limits, open_group)
            try:
                return _run_in(serving, request, open_group, prepared, started)
            except ZygoteFailed:
                self._drop(serving)
                if attempt + 1 == ATTEMPTS:
                    raise
        return None

    def stop(self) -> None:
        with self._lock:
            current, self._current = self._current, None
        self._discard_prepared()
        if current is not None:
            current.stop()
        await_job_ends()

    def _drop(self, broken: Zygote) -> None:
        with self._lock:
            if self._current is broken:
                self._current = None
        self._discard_prepared()
        log.warning("the zygote failed; replacing it: %s", broken.stderr_tail())
        broken.stop()

    # --- the next job's keeper, prepared ahead ------------------------------------------

    def _prepare(self, serving: Zygote, limits: Limits, open_group: OpenGroup) -> None:
        """Starts preparing the next job's keeper in the background, unless one is ready
        or under way."""
        with self._lock:
            if not self._prepares or self._next is not None or serving.jobs >= self.max_jobs:
                return  # (a worn-out zygote is replaced before the next job)
            if self._preparing is not None and self._preparing.is_alive():
                return
            self._preparing = threading.Thread(
                target=self._prepare_now, args=(serving, limits, open_group),
                name="gradlab-zygote-prepare", daemon=True,
            )  # fmt: skip
            self._preparing.start()

    def _prepare_now(self, serving: Zygote, limits: Limits, open_group: OpenGroup) -> None:
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
            header = job_header(limits, group, serving.identity.host_uid)
            job = serving.fork(header, group)
        except (InfrastructureError, OSError) as error:
            _remove_group(group)
            log.info("the next job's sandbox could not be prepared: %s", error)
            return
        prepared = _Prepared(serving, limits, group, job)
        with self._lock:
            fresh = self._current is serving and self._next is None
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


_ENDING: set[threading.Thread] = set()  # jobs being ended in the background
_ENDING_LOCK = threading.Lock()


def _end_in_background(job: ZygoteJob, group: cgroups.JobCgroup | None) -> None:
    """`_end` in a thread of its own (not a daemon: the interpreter's exit waits for it,
    so that an exiting worker leaves no cgroup behind; `await_job_ends` too)."""

    def end() -> None:
        try:
            _end(job, group)
        finally:
            with _ENDING_LOCK:
                _ENDING.discard(thread)

    thread = threading.Thread(target=end, name="gradlab-job-end")
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
