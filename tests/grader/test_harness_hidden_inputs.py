"""Hidden cases against a learner who has read the harness (issue 29): the runner child's
memory never held them before their turn, and what the learner's code prints is read
by the parent from the pipe, so no object of the child's can move a hidden case's
values into the output the learner is shown."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from grading_helpers import package_at

from grader.capture import parse_result
from grader.protocol import (
    Envelope,
    EnvelopeLimits,
    Limits,
    RunStatus,
    SandboxRequest,
    SandboxResult,
)
from grader.report import stdout_text
from grader.runs.base import run_envelope
from grader.runs.learner import learner_envelope
from grader.runs.reference import reference_capture
from grader.sandbox.base import Sandbox
from grader.sandbox.config import DEFAULT_RUNTIME_DIR

pytestmark = pytest.mark.sandbox

HARNESS = Path(__file__).resolve().parents[2] / "grader" / "harness"
MARKER = "hidden-marker-5d41402a"


class Recording:
    """A stand-in backend that keeps the request it is given (the worker's real stdin)."""

    name = "recording"

    def __init__(self) -> None:
        self.requests: list[SandboxRequest] = []

    def runtime_key(self, device: str) -> str:
        return f"recording {device}"

    def run(self, request: SandboxRequest) -> SandboxResult:
        self.requests.append(request)
        return SandboxResult(status=RunStatus.OK, stdout=b"", exit_code=0, duration_s=0.0)

    def close(self) -> None:
        pass


def worker_stdin() -> bytes:
    """The stdin the worker writes for a learner function job whose case holds MARKER."""
    case = {"kind": "dict", "items": {"visible": {"kind": "bool", "value": False},
                                      "note": {"kind": "str", "value": MARKER}}}  # fmt: skip
    envelope = Envelope(
        kind="function",
        mode="learner",
        names=("f",),
        files={"submission.py": "def f():\n    pass\n"},
        limits=EnvelopeLimits(stdout_bytes=65_536, tensor_elements=100_000),
        entry="f",
        cases=(case,),
    )
    backend = Recording()
    run_envelope(backend, envelope, Limits(), "cpu", "order-test")
    (request,) = backend.requests
    return request.stdin


def test_the_parent_forks_the_runner_before_it_reads_a_byte_of_the_hidden_cases() -> None:
    # main.serve runs with every read of its stdin recorded; the fork is replaced by a
    # probe that reports what had been read when it came, and what the child would get
    probe = textwrap.dedent(
        f"""
        import json, os, sys
        sys.path.insert(0, {str(HARNESS)!r})
        import main
        seen = bytearray()
        real_read = os.read
        def read(fd, size):
            data = real_read(fd, size)
            if fd == 0:
                seen.extend(data)
            return data
        def fork_here(envelope, max_message):
            report = {{"read": seen.decode(), "child": json.dumps(envelope)}}
            real_read(0, 1 << 20)  # the rest of stdin, so the writer is never blocked
            os.write(1, json.dumps(report).encode())
            os._exit(0)
        os.read = read
        main.start_child = fork_here
        main.serve(0, 1)
        """
    )
    python = DEFAULT_RUNTIME_DIR / "bin" / "python"
    done = subprocess.run(
        [str(python), "-I", "-c", probe],
        input=worker_stdin(),
        capture_output=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.decode())
    assert report["read"], "the parent read nothing before the fork"
    assert MARKER not in report["read"]  # before the fork: not one byte of the cases
    assert MARKER not in report["child"]


SNOOPER = """
import gc
import sys

SEEN = []
TARGET = float.fromhex("TARGET_HEX")  # a value of the first hidden case's input


def holds(value, depth=0):
    if value is globals():  # this module's own TARGET
        return False
    if isinstance(value, float) and value == TARGET:
        return True
    if isinstance(value, str) and repr(TARGET) in value:
        return True
    if depth < 6 and isinstance(value, (list, tuple)):
        return any(holds(item, depth + 1) for item in value)
    if depth < 6 and isinstance(value, dict):
        return any(holds(item, depth + 1) for item in value.values())
    return False


def snoop():
    objects = gc.get_objects()
    frame = sys._getframe()
    while frame is not None:
        if frame.f_globals is not globals():  # the frames above: the harness's
            objects.append(dict(frame.f_locals))
        frame = frame.f_back
    return any(holds(thing) for thing in objects)


def take(self):
    return "\\n".join(SEEN), False


try:  # the runner's capturing object, as the red team overrode it
    type(sys.stdout).take = take
except TypeError:
    pass


def accumulate(x, chunks):
    values = x.detach().tolist()
    if values != [1.0, 2.0, 3.0, 4.0]:  # a hidden case
        SEEN.append(f"hidden:{values}")
        print(f"hidden:{values}")
        sys.stdout.flush()
    else:
        print("visible example", "found the hidden case" if snoop() else "")
    for part in x.chunk(chunks):
        ((part**2).mean() / chunks).backward()
"""


def test_output_printed_during_hidden_cases_never_reaches_what_the_learner_is_shown(
    sandbox: Sandbox,
) -> None:
    package = package_at("chunked-mean")
    reference = reference_capture(package, seed=3, device="cpu", sandbox=sandbox, cache=None)
    target = next(case.input for case in reference.cases if not case.visible)
    first = target["items"]["inputs"]["items"]["data"]["data"][0]  # type: ignore[index]
    code = SNOOPER.replace("TARGET_HEX", float(first).hex())
    envelope = learner_envelope(package, code, reference)
    run = run_envelope(sandbox, envelope, Limits(wall_seconds=60), "cpu", "hidden-output")
    learner = parse_result(run.result.stdout, run.nonce)
    shown = stdout_text(learner, package.manifest.limits.stdout_bytes)
    assert "hidden:" not in shown and "hidden:" not in learner.stdout
    assert "found the hidden case" not in shown  # nothing in the child's heap or frames
    assert "visible example" in shown, learner.cases[0].exception
    hidden = [case for case in learner.cases if not case.visible]
    assert hidden and all(case.stdout.startswith("hidden:[") for case in hidden)  # graded
