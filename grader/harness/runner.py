"""The runner child: runs the code under test and writes the capture JSON to a pipe.

Runs inside the sandbox after main.py forked it (stdlib + torch + numpy only). The
capture's shape is FORMAT.md section 3; the parent adds `stderr` and frames it.
"""

from __future__ import annotations

import builtins
import io
import json
import linecache
import os
import random
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from instrument import Recorder
from values import decode, encode

PROTOCOL = 1
SUBMISSION = "submission.py"
CASES = "cases.py"
SHOWN_FILES = (SUBMISSION, CASES)  # traceback frames kept; harness frames never shown
MAX_MESSAGE = 2_000
MAX_TRACEBACK = 8_000
SEED = 0


class CappedBytes(io.RawIOBase):
    """sys.stdout.buffer of the code under test: bytes are decoded into the capped text."""

    def __init__(self, text: CappedText) -> None:
        self.text = text

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.text.write(chunk.decode("utf-8", "replace"))
        return len(chunk)


class CappedText(io.TextIOBase):
    """sys.stdout of the code under test: keeps the first `cap` characters."""

    encoding = "utf-8"

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False
        self.buffer = CappedBytes(self)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = self.cap - self.size
        if len(text) > room:
            self.truncated = True
            text = text[: max(room, 0)]
        if text:
            self.parts.append(text)
            self.size += len(text)
        return len(text)

    def take(self) -> tuple[str, bool]:
        text, truncated = "".join(self.parts), self.truncated
        self.parts, self.size, self.truncated = [], 0, False
        return text, truncated


def reseed() -> None:
    torch.manual_seed(SEED)
    np.random.seed(SEED)
    random.seed(SEED)


def describe_exception(error: BaseException) -> dict[str, Any]:
    """Type, message, the learner's line, and a traceback of the shown files only."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in SHOWN_FILES]
    line: int | None = None
    for frame in frames:
        if frame.filename == SUBMISSION:
            line = frame.lineno
    if isinstance(error, SyntaxError) and error.filename == SUBMISSION:
        line = error.lineno
    lines = traceback.format_list(frames)
    lines += traceback.format_exception_only(type(error), error)
    try:
        message = str(error)
    except Exception:
        message = "<unprintable message>"
    return {
        "type": type(error).__name__,
        "message": message[:MAX_MESSAGE],
        "line": line,
        "traceback": "".join(lines)[-MAX_TRACEBACK:],
    }


def compile_source(source: str, filename: str) -> Any:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec", dont_inherit=True)


class Runner:
    def __init__(self, envelope: dict[str, Any]) -> None:
        limits = envelope.get("limits", {})
        self.envelope = envelope
        self.max_elements = int(limits.get("tensor_elements", 100_000))
        self.stdout = CappedText(int(limits.get("stdout_bytes", 65_536)))
        self.recorder = Recorder(self.max_elements)
        self.names: list[str] = list(envelope.get("names", []))

    def prepare(self) -> None:
        torch.set_num_threads(1)
        warnings.simplefilter("default")
        self.recorder.install()
        sys.stdout = self.stdout
        reseed()

    def base(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL,
            "kind": self.envelope["kind"],
            "torch": torch.__version__.split("+")[0],
            "device": "cuda" if torch.cuda.is_available() else "cpu",
        }

    def run(self) -> dict[str, Any]:
        self.prepare()
        if self.envelope["kind"] == "function":
            return self.run_function()
        return self.run_script()

    # -- script exercises ------------------------------------------------------------

    def run_script(self) -> dict[str, Any]:
        namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.recorder.lookup = lambda: {n: namespace[n] for n in self.names if n in namespace}
        exception, duration = self.execute(self.envelope["files"][SUBMISSION], namespace)
        variables = {}
        for name in self.names:
            if name in namespace:
                variables[name] = self.safe_encode(namespace[name])
        stdout, truncated = self.stdout.take()
        return {
            **self.base(),
            "variables": variables,
            "backward_calls": self.recorder.calls,
            "backward_calls_truncated": self.recorder.truncated,
            "optimizer_steps": self.recorder.optimizer_steps,
            "stdout": stdout,
            "stdout_truncated": truncated,
            "exception": exception,
            "duration_s": duration,
        }

    def execute(
        self, source: str, namespace: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, float]:
        started = time.perf_counter()
        exception = None
        try:
            code = compile_source(source, SUBMISSION)
            exec(code, namespace)
        except SystemExit as error:
            if error.code not in (None, 0):
                exception = describe_exception(error)
        except BaseException as error:
            exception = describe_exception(error)
        return exception, round(time.perf_counter() - started, 6)

    def safe_encode(self, value: Any) -> dict[str, Any]:
        try:
            return encode(value, self.max_elements)
        except Exception as error:
            return {"kind": "object", "type": f"unencodable ({type(error).__name__})"}

    # -- function exercises ----------------------------------------------------------

    def run_function(self) -> dict[str, Any]:
        files = self.envelope["files"]
        namespace: dict[str, Any] = {"__name__": "submission", "__builtins__": builtins}
        exception, duration = self.execute(files[SUBMISSION], namespace)
        defined = {name: name in namespace for name in self.names}
        cases_ns: dict[str, Any] = {"__name__": "cases", "__builtins__": builtins}
        exec(compile(files[CASES], CASES, "exec", dont_inherit=True), cases_ns)
        reference = self.envelope["mode"] == "reference"
        if reference:
            reseed()
            generated = cases_ns["generate"](int(self.envelope["seed"]), self.envelope["trials"])
            encoded = [self.safe_encode(case) for case in generated]
        else:
            encoded = list(self.envelope.get("cases", []))
        entry = namespace.get(self.envelope["entry"]) if exception is None else None
        missing = exception is None and self.envelope["entry"] not in namespace
        cases = [
            self.run_case(cases_ns["run"], entry, raw, missing, include_input=reference)
            for raw in encoded
        ]
        stdout, truncated = self.stdout.take()
        return {
            **self.base(),
            "defined": defined,
            "cases": cases,
            "variables": {},
            "backward_calls": [],
            "optimizer_steps": self.recorder.optimizer_steps,
            "stdout": stdout,
            "stdout_truncated": truncated,
            "exception": exception,
            "duration_s": duration,
        }

    def run_case(
        self,
        run: Callable[..., Any],
        entry: Any,
        raw: dict[str, Any],
        missing: bool,
        *,
        include_input: bool,
    ) -> dict[str, Any]:
        case = decode(raw)
        visible = bool(case.get("visible")) if isinstance(case, dict) else False
        self.recorder.reset()
        self.stdout.take()
        reseed()
        observations: dict[str, Any] = {}
        exception = None
        started = time.perf_counter()
        if missing:
            name = self.envelope["entry"]
            exception = describe_exception(NameError(f"name {name!r} is not defined"))
        else:
            try:
                result = run(entry, case)
                if not isinstance(result, dict):
                    raise TypeError("cases.run must return a dict of observations")
                observations = {str(k): self.safe_encode(v) for k, v in result.items()}
            except BaseException as error:
                exception = describe_exception(error)
        stdout, truncated = self.stdout.take()
        out = {
            "visible": visible,
            "observations": observations,
            "exception": exception,
            "backward_calls": self.recorder.calls,
            "stdout": stdout,
            "stdout_truncated": truncated,
            "duration_s": round(time.perf_counter() - started, 6),
        }
        if include_input:
            out["input"] = raw
        return out


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def run_child(envelope: dict[str, Any], capture_fd: int) -> None:
    """Entry of the runner child: runs the job, writes the capture JSON, exits."""
    try:
        capture = Runner(envelope).run()
        data = json.dumps(capture, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except BaseException as error:
        failure = {"type": type(error).__name__, "message": str(error)[:MAX_MESSAGE]}
        data = json.dumps({"harness_error": failure}).encode("utf-8")
    sys.stdout = sys.__stdout__
    write_all(capture_fd, data)
    os.close(capture_fd)
