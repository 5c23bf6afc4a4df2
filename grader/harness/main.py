"""Harness entry point inside the sandbox: `python -I -B /harness/main.py`.

FORMAT.md section 2. stdin carries the job envelope line, then the nonce line. The
parent reads the envelope, forks the runner child, and only then reads the nonce (the
child never holds it). The parent makes itself non-dumpable, never runs untrusted code,
caps everything it reads from the child, and always prints exactly one framed result:

    GRADLAB-RESULT <nonce> <byte length>\\n<JSON capture>
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import select
import signal
import struct
import sys
import termios
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

PROTOCOL = 1
FRAME = "GRADLAB-RESULT"
NONCE_LINE = 33  # 32 hex characters and a newline
MAX_ENVELOPE = 8_000_000
DEFAULT_RESULT_BYTES = 4_000_000
DEFAULT_STDERR_BYTES = 65_536
READ_CHUNK = 65_536
POLL_SECONDS = 0.05
DRAIN_SECONDS = 0.5  # after the child exits, how long its pipes may stay open
PR_SET_DUMPABLE = 4
STDIN_WAIT = 0.001


class BadInput(Exception):
    pass


def _available(fd: int) -> int:
    raw = fcntl.ioctl(fd, termios.FIONREAD, struct.pack("i", 0))
    return struct.unpack("i", raw)[0]


def read_envelope_line(fd: int) -> bytes:
    """Reads line 1 without ever reading a byte of the nonce line.

    Only bytes that have at least NONCE_LINE bytes after them in the pipe are read; the
    nonce line is the stream's last NONCE_LINE bytes, so it stays in the pipe.
    """
    parts: list[bytes] = []
    size = 0
    while True:
        ready = _available(fd) - NONCE_LINE
        if ready <= 0:
            readable, _, _ = select.select([fd], [], [], 1.0)
            if readable and _available(fd) == 0:
                raise BadInput("stdin closed before the job envelope ended")
            time.sleep(STDIN_WAIT)
            continue
        chunk = os.read(fd, min(ready, READ_CHUNK))
        if not chunk:
            raise BadInput("stdin closed before the job envelope ended")
        newline = chunk.find(b"\n")
        if newline >= 0:
            if newline != len(chunk) - 1:
                raise BadInput("unexpected data after the job envelope")
            parts.append(chunk[:-1])
            return b"".join(parts)
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_ENVELOPE:
            raise BadInput("job envelope too large")


def read_nonce(fd: int) -> str:
    data = b""
    while len(data) < NONCE_LINE + 1:
        chunk = os.read(fd, NONCE_LINE + 1 - len(data))
        if not chunk:
            break
        data += chunk
    nonce = data.decode("ascii", "replace").strip()
    if len(nonce) != NONCE_LINE - 1 or any(c not in "0123456789abcdef" for c in nonce):
        raise BadInput("malformed nonce line")
    return nonce


def make_undumpable() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def start_child(envelope: dict[str, Any]) -> tuple[int, int, int]:
    """Forks the runner; returns (pid, output read fd, capture read fd)."""
    out_read, out_write = os.pipe()
    capture_read, capture_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the runner child
        try:
            os.close(out_read)
            os.close(capture_read)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_write, 1)
            os.dup2(out_write, 2)
            keep = capture_write
            for fd in (devnull, out_write):
                if fd not in (0, 1, 2, keep):
                    os.close(fd)
            os.closerange(3, keep)
            os.closerange(keep + 1, 65_536)
            sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            from runner import run_child

            run_child(envelope, keep)
        finally:
            os._exit(0)
    os.close(out_write)
    os.close(capture_write)
    return pid, out_read, capture_read


class Collector:
    """Reads the child's output and capture pipes, keeping at most `caps` bytes each."""

    def __init__(self, caps: dict[int, int]) -> None:
        self.caps = caps
        self.data: dict[int, bytearray] = {fd: bytearray() for fd in caps}
        self.overflow: dict[int, bool] = {fd: False for fd in caps}
        self.open = set(caps)

    def poll(self, timeout: float) -> bool:
        """Reads what is ready; False when nothing arrived within `timeout`."""
        if not self.open:
            return False
        readable, _, _ = select.select(list(self.open), [], [], timeout)
        for fd in readable:
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                self.open.discard(fd)
                os.close(fd)
                continue
            room = self.caps[fd] - len(self.data[fd])
            if len(chunk) > room:
                self.overflow[fd] = True
            self.data[fd] += chunk[: max(room, 0)]
        return bool(readable)


def wait_child(pid: int, collector: Collector) -> int:
    """Reads until the child has exited and its pipes are closed (or stay idle)."""
    status: int | None = None
    while status is None:
        collector.poll(POLL_SECONDS)
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
    deadline = time.monotonic() + DRAIN_SECONDS
    while collector.open and time.monotonic() < deadline:
        collector.poll(POLL_SECONDS)
    return status


def termination(status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return {"reason": "signal", "code": number, "message": f"killed by signal {number}"}
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return {"reason": "exit", "code": code, "message": f"exited with status {code}"}


def fallback(envelope: dict[str, Any], why: dict[str, Any]) -> dict[str, Any]:
    """The capture when the child produced none: says how the child ended."""
    return {
        "protocol": PROTOCOL,
        "kind": envelope.get("kind", "script"),
        "variables": {},
        "backward_calls": [],
        "optimizer_steps": 0,
        "stdout": "",
        "stdout_truncated": False,
        "exception": None,
        "duration_s": 0.0,
        "terminated": why,
        **({"defined": {}, "cases": []} if envelope.get("kind") == "function" else {}),
    }


def build_capture(
    envelope: dict[str, Any], raw: bytes, overflow: bool, status: int, result_cap: int
) -> dict[str, Any]:
    ended = termination(status)
    if overflow:
        why = {**ended, "reason": "result-too-large", "message": "result too large"}
        return fallback(envelope, why)
    try:
        capture = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        capture = None
    if not isinstance(capture, dict) or "protocol" not in capture:
        if isinstance(capture, dict) and "harness_error" in capture:
            error = capture["harness_error"]
            return fallback(envelope, {**ended, "reason": "harness-error", "error": error})
        return fallback(envelope, ended)
    capture["terminated"] = None
    return capture


def serve(stdin_fd: int, stdout_fd: int) -> int:
    try:
        envelope = json.loads(read_envelope_line(stdin_fd).decode("utf-8"))
        if not isinstance(envelope, dict) or envelope.get("protocol") != PROTOCOL:
            raise BadInput("unsupported job envelope")
    except (BadInput, UnicodeDecodeError, ValueError) as error:
        os.write(2, f"gradlab harness: bad job: {error}\n".encode())
        return 2
    limits = envelope.get("limits", {})
    result_cap = int(limits.get("result_bytes", DEFAULT_RESULT_BYTES))
    stderr_cap = int(limits.get("stdout_bytes", DEFAULT_STDERR_BYTES))
    import torch  # noqa: F401  (imported once here, shared by the child through fork)

    make_undumpable()
    pid, out_fd, capture_fd = start_child(envelope)
    try:
        nonce = read_nonce(stdin_fd)
    except BadInput as error:
        os.kill(pid, signal.SIGKILL)
        os.write(2, f"gradlab harness: bad job: {error}\n".encode())
        return 2
    collector = Collector({out_fd: stderr_cap, capture_fd: result_cap})
    status = wait_child(pid, collector)
    capture = build_capture(
        envelope,
        bytes(collector.data[capture_fd]),
        collector.overflow[capture_fd],
        status,
        result_cap,
    )
    capture["stderr"] = collector.data[out_fd].decode("utf-8", "replace")
    capture["stderr_truncated"] = collector.overflow[out_fd]
    body = json.dumps(capture, separators=(",", ":")).encode("utf-8")
    if len(body) > result_cap:
        why = {"reason": "result-too-large", "code": 0, "message": "result too large"}
        body = json.dumps(fallback(envelope, why)).encode("utf-8")
    header = f"{FRAME} {nonce} {len(body)}\n".encode("ascii")
    view = memoryview(header + body)
    while view:
        view = view[os.write(stdout_fd, view) :]
    return 0


if __name__ == "__main__":
    sys.exit(serve(0, 1))
