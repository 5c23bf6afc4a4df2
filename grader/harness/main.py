"""Harness entry point inside the sandbox: `python -I -B /harness/main.py`.

FORMAT.md sections 2 and 7. stdin carries the job envelope line, then the nonce line.
The parent reads the envelope, moves any hidden cases out of its heap, forks the runner
child (runner.py), and only then reads the nonce (the child never holds it). It makes
itself non-dumpable, never runs, imports or reads job code, serves the child over the
protocol channel (channel.py; the rules of the conversation: conversation.py), hands out
hidden cases one at a time, caps everything it reads, builds the capture itself from
what it validated, and always prints exactly one framed result:

    GRADLAB-RESULT <nonce> <byte length>\\n<JSON capture>
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import select
import signal
import socket
import struct
import sys
import tempfile
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
            if readable and _available(fd) <= NONCE_LINE:
                time.sleep(STDIN_WAIT)  # part of the input: let the rest arrive
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


def stash_cases(envelope: dict[str, Any]) -> int | None:
    """Moves the hidden cases out of this process's heap into an unnamed temporary file
    before the fork: a forked child holds a copy of the parent's heap, where its code
    could find every case at once (gc.get_objects, or the frames above its own)."""
    cases = envelope.pop("cases", None)
    if cases is None:
        return None
    data = json.dumps(cases, separators=(",", ":")).encode("utf-8")
    del cases
    stash = tempfile.TemporaryFile()  # noqa: SIM115  (O_TMPFILE: never has a name)
    stash.write(data)
    stash.flush()
    del data
    fd = os.dup(stash.fileno())
    stash.close()
    return fd  # the parsed cases had no cycles: reference counting has freed them


def unstash_cases(fd: int | None) -> list[Any] | None:
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as stash:
        stash.seek(0)
        cases = json.loads(stash.read().decode("utf-8"))
    return cases if isinstance(cases, list) else []


def start_child(envelope: dict[str, Any], max_message: int) -> tuple[int, int, socket.socket]:
    """Forks the runner; returns (pid, output read fd, the parent's end of the channel).

    The child keeps fd 0 (/dev/null), fds 1 and 2 (the output pipe) and its end of the
    channel at channel.CHILD_FD; every other descriptor is closed before it runs anything.
    """
    out_read, out_write = os.pipe()
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # the runner child
        try:
            os.close(out_read)
            parent_end.close()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_write, 1)
            os.dup2(out_write, 2)
            os.dup2(child_end.detach(), channel.CHILD_FD)
            keep = channel.CHILD_FD
            os.closerange(keep + 1, MAX_FD)
            sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            runner.run_child(envelope, max_message)
        finally:
            os._exit(0)
    os.close(out_write)
    child_end.close()
    return pid, out_read, parent_end


class Pump:
    """Moves bytes between the parent and the child until the child has ended: the
    child's output pipe (kept up to a cap), and the protocol channel (messages read with
    a cap on each and on the whole conversation, replies written as the child asks)."""

    def __init__(
        self, out_fd: int, sock: socket.socket, talk: Conversation, caps: tuple[int, int]
    ) -> None:
        self.out_fd: int | None = out_fd
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
        return self.out_fd is not None or self.sock is not None

    def poll(self, timeout: float) -> None:
        readers: list[Any] = [fd for fd in (self.out_fd, self.sock) if fd is not None]
        writers = [self.sock] if self.sock is not None and self.outbox else []
        if not readers:
            return
        readable, writable, _ = select.select(readers, writers, [], timeout)
        if self.out_fd is not None and self.out_fd in readable:
            self._read_output()
        if self.sock is not None and self.sock in readable:
            self._read_channel()
        if self.sock is not None and self.sock in writable:
            self._write_channel()

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
        envelope = json.loads(read_envelope_line(stdin_fd).decode("utf-8"))
        if not isinstance(envelope, dict) or envelope.get("protocol") != PROTOCOL:
            raise BadInput("unsupported job envelope")
    except (BadInput, UnicodeDecodeError, ValueError) as error:
        os.write(2, f"gradlab harness: bad job: {error}\n".encode())
        return 2
    limits = envelope.get("limits", {})
    result_cap = int(limits.get("result_bytes", DEFAULT_RESULT_BYTES))
    stderr_cap = int(limits.get("stdout_bytes", DEFAULT_STDERR_BYTES))
    stash = stash_cases(envelope)  # the child must not inherit them with our heap
    make_undumpable()
    pid, out_fd, sock = start_child(envelope, result_cap)
    talk = Conversation(envelope, cases=unstash_cases(stash))
    try:
        nonce = read_nonce(stdin_fd)
    except BadInput as error:
        os.kill(pid, signal.SIGKILL)
        os.write(2, f"gradlab harness: bad job: {error}\n".encode())
        return 2
    pump = Pump(out_fd, sock, talk, (stderr_cap, result_cap))
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
