"""Talk to one sandboxed process: write its stdin, read stdout incrementally under a cap,
keep a capped stderr for diagnostics, all under one wall-clock deadline.

Backend-neutral (the Docker backend can drive `docker run -i` with it): the caller passes
`kill`, which must end the whole process tree, not just the direct child.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Protocol

READ_CHUNK = 65_536
WRITE_CHUNK = 65_536
SELECT_SLICE_S = 0.25
REAP_AFTER_KILL_S = 10.0


class Process(Protocol):
    """What exchange() drives: a subprocess.Popen, or a job forked by the zygote."""

    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def wait(self, timeout: float | None = None) -> int: ...


@dataclass(frozen=True)
class Exchange:
    """What came back from one process."""

    stdout: bytes  # at most the cap
    stderr: bytes  # at most the cap; for infrastructure diagnostics only
    extra: bytes  # whatever arrived on the extra pipe (e.g. a start marker)
    returncode: int | None  # None if it could not be reaped
    timed_out: bool
    stdout_exceeded: bool
    duration_s: float


@dataclass
class _Buffer:
    cap: int
    data: bytearray
    exceeded: bool = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        self.data += chunk[: max(room, 0)]
        self.exceeded = self.exceeded or len(chunk) > room


def exchange(
    process: Process,
    *,
    stdin: bytes,
    timeout_s: float,
    stdout_cap: int,
    stderr_cap: int,
    kill: Callable[[], None],
    extra_fd: int | None = None,
    extra_prefix: bytes = b"",
    started: float | None = None,
) -> Exchange:
    """Feed `stdin` then close it; collect output until the process exits, its stdout
    passes `stdout_cap` or `timeout_s` passes (then `kill()` is called). `extra_fd` (owned
    from here on, closed at the end) is read too, after `extra_prefix` already read from it."""
    start = time.monotonic() if started is None else started
    deadline = start + timeout_s
    out, err, extra = _Buffer(stdout_cap, bytearray()), _Buffer(stderr_cap, bytearray()), None
    if extra_fd is not None:
        extra = _Buffer(4096, bytearray(extra_prefix))
    timed_out = False
    try:
        timed_out = _pump(process, stdin, deadline, out, err, extra_fd, extra)
        if not timed_out and not out.exceeded:
            timed_out = not _wait(process, deadline - time.monotonic())
        if timed_out or out.exceeded:
            kill()
        returncode = _reap(process)
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if extra_fd is not None:
            with contextlib.suppress(OSError):
                os.close(extra_fd)
    return Exchange(
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        extra=bytes(extra.data) if extra else b"",
        returncode=returncode,
        timed_out=timed_out,
        stdout_exceeded=out.exceeded,
        duration_s=time.monotonic() - start,
    )


def _pump(
    process: Process,
    stdin: bytes,
    deadline: float,
    out: _Buffer,
    err: _Buffer,
    extra_fd: int | None,
    extra: _Buffer | None,
) -> bool:
    """Move bytes until every pipe is at EOF. Returns True on timeout; stops early when
    stdout exceeds its cap."""
    assert process.stdin and process.stdout and process.stderr
    sinks: dict[int, _Buffer] = {process.stdout.fileno(): out, process.stderr.fileno(): err}
    if extra_fd is not None and extra is not None:
        sinks[extra_fd] = extra
    pending = memoryview(stdin)
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        stdin_fd = process.stdin.fileno()
        if pending:
            os.set_blocking(stdin_fd, False)
            selector.register(stdin_fd, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            for key, _ in selector.select(min(remaining, SELECT_SLICE_S)):
                if key.fd == stdin_fd:
                    pending = _write_some(stdin_fd, pending)
                    if not pending:
                        selector.unregister(stdin_fd)
                        process.stdin.close()
                    continue
                chunk = _read_some(key.fd)
                if chunk:
                    sinks[key.fd].add(chunk)
                elif chunk is not None:
                    selector.unregister(key.fd)
                if out.exceeded:
                    return False
    return False


def _write_some(fd: int, pending: memoryview) -> memoryview:
    try:
        written = os.write(fd, pending[:WRITE_CHUNK])
    except BlockingIOError:
        return pending
    except (BrokenPipeError, ConnectionResetError):
        return memoryview(b"")  # the process stopped reading: nothing more to give it
    return pending[written:]


def _read_some(fd: int) -> bytes | None:
    """A chunk, b"" at EOF, or None when a wake-up brought nothing to read."""
    try:
        return os.read(fd, READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _wait(process: Process, remaining: float) -> bool:
    try:
        process.wait(timeout=max(remaining, 0.0))
    except subprocess.TimeoutExpired:
        return False
    return True


def _reap(process: Process) -> int | None:
    try:
        return process.wait(timeout=REAP_AFTER_KILL_S)
    except subprocess.TimeoutExpired:
        return None
