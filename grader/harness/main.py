"""Harness entry point inside the sandbox: `python -I -B /harness/main.py`.

FORMAT.md sections 2 and 7. stdin carries a header line with the envelope line's length,
the envelope line, the cases line and the nonce line. The parent reads the header and
exactly the envelope line, forks the runner child (runner.py), and only then reads the
cases and the nonce: the child's copy of the parent's memory never held either. It makes
itself non-dumpable, never runs, imports or reads job code, serves the child over the
protocol channel (channel.py; the rules of the conversation: conversation.py), hands out
hidden cases one at a time, reads the child's printed output from its descriptor and
tells the cases' apart by the messages between them, caps everything it reads, builds the
capture itself from what it validated, and always prints exactly one framed result:

    GRADLAB-RESULT <nonce> <byte length>\\n<JSON capture>
"""

from __future__ import annotations

import codecs
import ctypes
import fcntl
import io
import json
import os
import select
import signal
import socket
import struct
import sys
import termios
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import channel  # noqa: E402  (the harness's own modules, found through HERE)
import runner  # noqa: E402
from conversation import Conversation  # noqa: E402

PROTOCOL = 1
FRAME = "GRADLAB-RESULT"
JOB_HEADER = b"GRADLAB-JOB "  # then the envelope line's length in bytes, a newline
MAX_HEADER = 40
NONCE_LINE = 33  # 32 hex characters and a newline
MAX_ENVELOPE = 8_000_000
DEFAULT_RESULT_BYTES = 4_000_000
DEFAULT_STDERR_BYTES = 65_536
READ_CHUNK = 65_536
POLL_SECONDS = 0.05
DRAIN_SECONDS = 0.5  # after the child exits, how long its pipes may stay open
PR_SET_DUMPABLE = 4
STDIN_WAIT = 0.001
MAX_FD = 65_536


class BadInput(Exception):
    pass


def _available(fd: int) -> int:
    raw = fcntl.ioctl(fd, termios.FIONREAD, struct.pack("i", 0))
    return struct.unpack("i", raw)[0]


def read_exactly(fd: int, count: int) -> bytes:
    parts: list[bytes] = []
    left = count
    while left:
        chunk = os.read(fd, min(left, READ_CHUNK))
        if not chunk:
            raise BadInput("stdin closed before the job envelope ended")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_header(fd: int) -> int:
    """The header line, a byte at a time (it is short): the envelope line's length."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk or len(data) >= MAX_HEADER:
            raise BadInput("malformed job header")
        data += chunk
    size = data[len(JOB_HEADER) : -1]
    if not data.startswith(JOB_HEADER) or not size.isdigit():
        raise BadInput("malformed job header")
    if int(size) > MAX_ENVELOPE:
        raise BadInput("job envelope too large")
    return int(size)


def read_envelope(fd: int) -> tuple[int, dict[str, Any]]:
    """The header, then exactly the envelope line (never a byte of the cases line): its
    size and its object."""
    size = read_header(fd)
    line = read_exactly(fd, size + 1)
    if not line.endswith(b"\n"):
        raise BadInput("the job envelope is not one line of the header's length")
    envelope = json.loads(line[:-1].decode("utf-8"))
    if not isinstance(envelope, dict) or envelope.get("protocol") != PROTOCOL:
        raise BadInput("unsupported job envelope")
    if "cases" in envelope:
        raise BadInput("hidden cases belong on the cases line, not in the envelope")
    return size, envelope


def read_line_before_nonce(fd: int, cap: int) -> bytes:
    """Reads the cases line without ever reading a byte of the nonce line.

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
                raise BadInput("stdin closed before the cases line ended")
            if readable and _available(fd) <= NONCE_LINE:
                time.sleep(STDIN_WAIT)  # part of the input: let the rest arrive
            continue
        chunk = os.read(fd, min(ready, READ_CHUNK))
        if not chunk:
            raise BadInput("stdin closed before the cases line ended")
        newline = chunk.find(b"\n")
        if newline >= 0:
            if newline != len(chunk) - 1:
                raise BadInput("unexpected data after the cases line")
            parts.append(chunk[:-1])
            return b"".join(parts)
        parts.append(chunk)
        size += len(chunk)
        if size > cap:
            raise BadInput("job envelope too large")


def read_cases(fd: int, cap: int) -> list[Any]:
    cases = json.loads(read_line_before_nonce(fd, cap).decode("utf-8"))
    if not isinstance(cases, list):
        raise BadInput("the cases line is not a list")
    return cases


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


class WriteAll(io.BufferedIOBase):
    """The binary buffer below the child's sys.stdout and sys.stderr: every write goes
    whole to the descriptor at once, so what was printed before the child sends a
    message is in the pipe when the parent reads that message."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    @property
    def name(self) -> int:
        return self.fd

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            view = view[os.write(self.fd, view) :]
        return size


def _lone_surrogates(error: UnicodeError) -> tuple[bytes, int]:
    """Printed text that is not valid Unicode (a lone surrogate) is written as U+FFFD
    (UTF-8 bytes: the encoder takes no other replacement that is not ASCII)."""
    if isinstance(error, UnicodeEncodeError):
        return "\ufffd".encode() * (error.end - error.start), error.end
    raise error


codecs.register_error("gradlab-replace", _lone_surrogates)


def write_through(fd: int) -> io.TextIOWrapper:
    buffer = WriteAll(fd)
    return io.TextIOWrapper(buffer, "utf-8", "gradlab-replace", write_through=True)


def start_child(
    envelope: dict[str, Any], max_message: int
) -> tuple[int, tuple[int, int], socket.socket]:
    """Forks the runner; returns (pid, (stdout, stderr) read fds, the parent's end of the
    channel).

    The child keeps fd 0 (/dev/null), fd 1 (the stdout pipe), fd 2 (the stderr pipe) and
    its end of the channel at channel.CHILD_FD; every other descriptor is closed before it
    runs anything. Its sys.stdout and sys.stderr write through to fds 1 and 2: what the
    learner's code prints is captured by the parent from the pipe, never by an object of
    the child's (FORMAT.md section 3, `stdout`).
    """
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # the runner child
        try:
            os.close(out_read)
            os.close(err_read)
            parent_end.close()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_write, 1)
            os.dup2(err_write, 2)
            os.dup2(child_end.detach(), channel.CHILD_FD)
            keep = channel.CHILD_FD
            os.closerange(keep + 1, MAX_FD)
            sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stdout = sys.__stdout__ = write_through(1)  # type: ignore[misc]
            sys.stderr = sys.__stderr__ = write_through(2)  # type: ignore[misc]
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            runner.run_child(envelope, max_message)
        finally:
            os._exit(0)
    os.close(out_write)
    os.close(err_write)
    child_end.close()
    return pid, (out_read, err_read), parent_end


class Pump:
    """Moves bytes between the parent and the child until the child has ended: the
    child's stdout pipe (into the conversation's current piece of output, `talk.printed`),
    its stderr pipe (kept up to a cap), and the protocol channel (messages read with a cap
    on each and on the whole conversation, replies written as the child asks).

    Before each message is handled, the stdout pipe is read dry of what it held then:
    whatever the child printed before it sent the message is in the pipe, so it belongs
    to the output the message ends (conversation.py), never to a later case's."""

    def __init__(
        self,
        fds: tuple[int, int],
        sock: socket.socket,
        talk: Conversation,
        caps: tuple[int, int],
    ) -> None:
        self.stdout_fd: int | None = fds[0]
        self.out_fd: int | None = fds[1]  # stderr
        self.sock: socket.socket | None = sock
        self.talk = talk
        self.output_cap, self.channel_cap = caps
        self.output = bytearray()
        self.output_overflow = False
        self.received = 0
        self.channel_overflow = False
        self.reader = channel.Reader(self.channel_cap)
        self.outbox = bytearray()

    @property
    def open(self) -> bool:
        return any(end is not None for end in (self.stdout_fd, self.out_fd, self.sock))

    def poll(self, timeout: float) -> None:
        ends = (self.stdout_fd, self.out_fd, self.sock)
        readers: list[Any] = [end for end in ends if end is not None]
        writers = [self.sock] if self.sock is not None and self.outbox else []
        if not readers:
            return
        readable, writable, _ = select.select(readers, writers, [], timeout)
        if self.stdout_fd is not None and self.stdout_fd in readable:
            self._read_stdout(READ_CHUNK)
        if self.out_fd is not None and self.out_fd in readable:
            self._read_output()
        if self.sock is not None and self.sock in readable:
            self._read_channel()
        if self.sock is not None and self.sock in writable:
            self._write_channel()

    def _read_stdout(self, size: int) -> None:
        assert self.stdout_fd is not None
        chunk = os.read(self.stdout_fd, size)
        if not chunk:
            os.close(self.stdout_fd)
            self.stdout_fd = None
            return
        self.talk.printed.feed(chunk)

    def _drain_stdout(self) -> None:
        """Reads what the stdout pipe holds now (and no more: a child printing on and on
        cannot keep the parent here)."""
        if self.stdout_fd is None:
            return
        left = _available(self.stdout_fd)
        while left > 0 and self.stdout_fd is not None:
            size = min(left, READ_CHUNK)
            self._read_stdout(size)
            left -= size

    def _read_output(self) -> None:
        assert self.out_fd is not None
        chunk = os.read(self.out_fd, READ_CHUNK)
        if not chunk:
            os.close(self.out_fd)
            self.out_fd = None
            return
        room = self.output_cap - len(self.output)
        if len(chunk) > room:
            self.output_overflow = True
        self.output += chunk[: max(room, 0)]

    def _read_channel(self) -> None:
        assert self.sock is not None
        try:
            chunk = self.sock.recv(READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self._close_channel()
            return
        self.received += len(chunk)
        if self.received > self.channel_cap:
            self.channel_overflow = True
            self._close_channel()
            return
        try:
            messages = self.reader.feed(chunk)
        except channel.TooLarge:
            self.channel_overflow = True
            self._close_channel()
            return
        except channel.ProtocolError as error:
            self.talk.violation(f"unreadable message: {error}")
            self._close_channel()
            return
        for message in messages:
            self._drain_stdout()
            for reply in self.talk.receive(message):
                self.outbox += channel.encode_message(reply)

    def _write_channel(self) -> None:
        assert self.sock is not None
        try:
            sent = self.sock.send(self.outbox)
        except OSError:
            self._close_channel()
            return
        del self.outbox[:sent]

    def _close_channel(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def wait_child(pid: int, pump: Pump) -> int:
    """Serves the child until it has exited and its pipes are closed (or stay idle)."""
    status: int | None = None
    while status is None:
        pump.poll(POLL_SECONDS)
        # once the child's pipe and channel are closed, nothing is left to serve: block
        # (a busy loop here takes a core from the child's own exit)
        done, raw = os.waitpid(pid, 0 if not pump.open else os.WNOHANG)
        if done:
            status = raw
    deadline = time.monotonic() + DRAIN_SECONDS
    while pump.open and time.monotonic() < deadline:
        pump.poll(POLL_SECONDS)
    return status


def termination(status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return {"reason": "signal", "code": number, "message": f"killed by signal {number}"}
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return {"reason": "exit", "code": code, "message": f"exited with status {code}"}


def too_large(talk: Conversation, versions: dict[str, str]) -> dict[str, Any]:
    why = {"reason": "result-too-large", "code": 0, "message": "result too large"}
    return {**talk.capture(why, **versions), "terminated": why, "cases": [], "variables": {}}


def worker_device() -> str:
    """Asked only after the child has ended (CUDA must not be initialised before a fork)."""
    import torch

    if not os.path.exists("/dev/nvidiactl"):
        return "cpu"
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    return "cuda" if torch.cuda.is_available() else "cpu"


def frame(capture: dict[str, Any], nonce: str, pump: Pump, cap: int, talk: Conversation) -> bytes:
    capture["stderr"] = pump.output.decode("utf-8", "replace")
    capture["stderr_truncated"] = pump.output_overflow
    body = json.dumps(capture, separators=(",", ":")).encode("utf-8")
    if len(body) > cap:
        versions = {"torch_version": capture["torch"], "device": capture["device"]}
        body = json.dumps(too_large(talk, versions), separators=(",", ":")).encode("utf-8")
    return f"{FRAME} {nonce} {len(body)}\n".encode("ascii") + body


def serve(stdin_fd: int, stdout_fd: int) -> int:
    import torch  # imported once here (warm sandboxes: before the job), shared through fork

    runner.warm_up_autograd()  # also before the job (the zygote did it once for all)
    try:
        envelope_size, envelope = read_envelope(stdin_fd)
    except (BadInput, UnicodeDecodeError, ValueError) as error:
        os.write(2, f"gradlab harness: bad job: {error}\n".encode())
        return 2
    limits = envelope.get("limits", {})
    result_cap = int(limits.get("result_bytes", DEFAULT_RESULT_BYTES))
    stderr_cap = int(limits.get("stdout_bytes", DEFAULT_STDERR_BYTES))
    make_undumpable()
    # the child is forked before a byte of the cases is read: its copy of our memory
    # never held them (FORMAT.md section 2)
    pid, fds, sock = start_child(envelope, result_cap)
    try:
        cases = read_cases(stdin_fd, MAX_ENVELOPE - envelope_size)
        nonce = read_nonce(stdin_fd)
    except (BadInput, UnicodeDecodeError, ValueError) as error:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.write(2, f"gradlab harness: bad job: {error}\n".encode())
        return 2
    talk = Conversation(envelope, cases=cases, output_cap=stderr_cap)
    pump = Pump(fds, sock, talk, (stderr_cap, result_cap))
    status = wait_child(pid, pump)
    device = worker_device()
    if envelope.get("stand_in") == "cuda" and envelope.get("kind") == "script":
        device = "cuda"  # the child played a GPU (standin.py)
    versions = {"torch_version": torch.__version__.split("+")[0], "device": device}
    if pump.channel_overflow:
        capture = too_large(talk, versions)
    else:
        capture = talk.capture(termination(status), **versions)
    view = memoryview(frame(capture, nonce, pump, result_cap, talk))
    while view:
        view = view[os.write(stdout_fd, view) :]
    return 0


if __name__ == "__main__":
    sys.exit(serve(0, 1))
