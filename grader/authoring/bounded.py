"""Runs one function of grader/ on untrusted bytes in a bounded child process.

The child is `python -I -S` (no environment, no site-packages: the standard library and
grader/ only), limits itself before it reads a byte (RLIMIT_AS for memory, RLIMIT_CPU for
CPU time, RLIMIT_FSIZE for its reply), reads its input from a file on stdin and writes one
JSON value to stdout (never pickle); the parent waits at most a wall-clock timeout and
reads at most the reply cap. A child that runs out of any of them, crashes, or answers
something that is not JSON ends in a `BoundedError` whose message says which limit.
"""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = str(Path(__file__).resolve().parents[2])  # holds grader/; appended after the stdlib
OUT_OF_MEMORY = 3  # the child's exit status when it raised MemoryError
REPLY_TOO_LARGE = 4  # ... when its reply reached RLIMIT_FSIZE (Python ignores SIGXFSZ)
STDERR_TAIL = 2_000  # bytes of the child's stderr kept for the message

_BOOT = (
    "import sys; sys.path.append(sys.argv[1]); "
    "from grader.authoring.bounded import child_main; child_main(sys.argv[2])"
)


class BoundedError(Exception):
    """The child ran out of a limit, crashed, or answered no JSON; the message says which."""


@dataclass(frozen=True)
class ProcessLimits:
    memory_bytes: int = 512 * 1024 * 1024  # RLIMIT_AS: the child's whole address space
    cpu_seconds: int = 5  # RLIMIT_CPU (whole seconds: the kernel's unit)
    wall_seconds: float = 20.0  # waited for by the parent, then the child is killed
    reply_bytes: int = 32_000_000  # RLIMIT_FSIZE on the reply, and what the parent reads


def run(
    entry: str, payload: bytes, arguments: Mapping[str, object], limits: ProcessLimits
) -> object:
    """`module:function` of grader/ called as function(payload, **arguments) in a bounded
    child; its JSON answer, or BoundedError."""
    request = json.dumps({"entry": entry, "arguments": dict(arguments), "limits": _limits(limits)})
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
    ):
        stdin.write(payload)
        stdin.seek(0)
        command = [sys.executable, "-I", "-S", "-c", _BOOT, ROOT, request]
        child = subprocess.Popen(command, stdin=stdin, stdout=stdout, stderr=stderr, env={})
        try:
            status = child.wait(timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise BoundedError(f"took longer than {limits.wall_seconds:g} s") from None
        reply = _read(stdout, limits.reply_bytes)
        if status != 0:
            raise BoundedError(_ended(status, limits, _tail(stderr)))
    if reply is None:
        raise BoundedError(f"answered more than {limits.reply_bytes} bytes")
    try:
        return json.loads(reply)
    except ValueError:
        raise BoundedError("answered something that is not JSON") from None


def _limits(limits: ProcessLimits) -> dict[str, int]:
    return {
        "memory_bytes": limits.memory_bytes,
        "cpu_seconds": limits.cpu_seconds,
        "reply_bytes": limits.reply_bytes,
    }


def _read(handle: IO[bytes], cap: int) -> bytes | None:
    handle.seek(0)
    data = handle.read(cap + 1)
    return None if len(data) > cap else data


def _tail(handle: IO[bytes]) -> str:
    handle.seek(0)
    return handle.read()[-STDERR_TAIL:].decode("utf-8", "replace").strip()


def _ended(status: int, limits: ProcessLimits, stderr: str) -> str:
    if status == OUT_OF_MEMORY or "MemoryError" in stderr:
        return f"ran out of memory ({limits.memory_bytes} bytes)"
    if status in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"used more than {limits.cpu_seconds} s of CPU time"
    if status in (REPLY_TOO_LARGE, -signal.SIGXFSZ):
        return f"answered more than {limits.reply_bytes} bytes"
    last = stderr.splitlines()[-1] if stderr else ""
    return f"ended with status {status}" + (f" ({last})" if last else "")


# -- in the child -------------------------------------------------------------------------


def child_main(request_text: str) -> None:
    """The child's whole life: limit itself, read stdin, call the entry, print JSON."""
    request = json.loads(request_text)
    _limit_self(request["limits"])
    try:
        module_name, function_name = request["entry"].split(":")
        module = __import__(module_name, fromlist=[function_name])
        function = getattr(module, function_name)
        payload = sys.stdin.buffer.read()
        answer = json.dumps(function(payload, **request["arguments"]), ensure_ascii=True)
        sys.stdout.write(answer)
        sys.stdout.flush()
    except MemoryError:
        sys.exit(OUT_OF_MEMORY)
    except OSError as error:
        if error.errno == errno.EFBIG:
            sys.exit(REPLY_TOO_LARGE)
        raise


def _limit_self(limits: Mapping[str, int]) -> None:
    import resource

    memory, cpu = limits["memory_bytes"], limits["cpu_seconds"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["reply_bytes"], limits["reply_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
