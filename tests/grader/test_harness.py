"""The in-sandbox harness, run through the real bubblewrap backend: what the capture
holds, what the learner's code can and cannot do to it."""

from __future__ import annotations

import json

import pytest
from conftest import GradeCode
from grading_helpers import package_at

from grader.capture import TENSOR_ELEMENTS, Capture, TensorValue, parse_result
from grader.protocol import Envelope, EnvelopeLimits, Limits, RunStatus
from grader.runs.base import run_envelope
from grader.runs.learner import NO_RESULT, learner_envelope
from grader.runs.reference import reference_capture, reference_envelope
from grader.sandbox.base import Sandbox

pytestmark = pytest.mark.sandbox


def run_script(sandbox: Sandbox, code: str, names: list[str], **limits: int) -> Capture:
    caps = {"stdout_bytes": 65_536, "tensor_elements": TENSOR_ELEMENTS, **limits}
    envelope = Envelope(
        kind="script",
        mode="learner",
        names=tuple(names),
        files={"submission.py": code},
        limits=EnvelopeLimits(**caps),
    )
    run = run_envelope(sandbox, envelope, Limits(wall_seconds=60), "cpu", "harness-test")
    assert run.result.status == RunStatus.OK, run.result.message
    return parse_result(run.result.stdout, run.nonce)


def test_capture_holds_variables_backward_calls_and_optimizer_steps(sandbox: Sandbox) -> None:
    code = """
import torch
w = torch.tensor([1.0, -2.0], requires_grad=True)
optimizer = torch.optim.SGD([w], lr=0.1)
loss = (w ** 2).sum()
loss.backward(retain_graph=True)
optimizer.step()
y = w * 3
y.backward(gradient=torch.ones_like(y))
model = torch.nn.Linear(2, 1)
n = 3
label = "done"
print("hello")
"""
    capture = run_script(sandbox, code, ["w", "y", "model", "n", "label", "missing"])
    w = capture.variables["w"]
    assert isinstance(w, TensorValue)
    assert (w.dtype, w.shape, w.requires_grad, w.is_leaf, w.grad_fn) == (
        "float32",
        (2,),
        True,
        True,
        None,
    )
    assert w.grad is not None and w.grad.data == pytest.approx((2.0 + 3.0, -4.0 + 3.0))
    y = capture.variables["y"]
    assert isinstance(y, TensorValue) and y.grad_fn == "MulBackward0" and not y.is_leaf
    assert capture.variables["model"].kind == "module"
    assert capture.variables["n"].value == 3  # type: ignore[union-attr]
    assert capture.variables["label"].value == "done"  # type: ignore[union-attr]
    assert "missing" not in capture.variables
    first, second = capture.backward_calls
    assert (first.loss, first.retain_graph, first.gradient_given) == (5.0, True, False)
    assert first.grads_before["w"] is None
    assert first.grads_after["w"].data == pytest.approx((2.0, -4.0))  # type: ignore[union-attr]
    assert (second.loss, second.loss_shape, second.gradient_given) == (None, (2,), True)
    assert capture.optimizer_steps == 1
    assert capture.stdout == "hello\n"
    assert capture.exception is None


def test_learner_exception_names_the_line_and_shows_only_learner_frames(
    sandbox: Sandbox,
) -> None:
    code = "import torch\n\ndef scale(t):\n    return t / undefined_name\n\nx = scale(1)\n"
    capture = run_script(sandbox, code, ["x"])
    error = capture.exception
    assert error is not None
    assert (error.type, error.line) == ("NameError", 4)
    assert "undefined_name" in error.message
    assert 'File "submission.py", line 6' in error.traceback
    assert "return t / undefined_name" in error.traceback
    for harness_file in ("main.py", "runner.py", "instrument.py", "values.py", "/harness"):
        assert harness_file not in error.traceback


def test_a_failing_backward_is_recorded_then_raised_to_the_learner(sandbox: Sandbox) -> None:
    code = """
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
try:
    y.backward()
except RuntimeError as error:
    caught = str(error)
"""
    capture = run_script(sandbox, code, ["caught"])
    (call,) = capture.backward_calls
    assert call.error is not None and "only for scalar outputs" in call.error.message
    assert "only for scalar outputs" in str(capture.variables["caught"].value)  # type: ignore[union-attr]
    assert capture.exception is None


def test_seeds_and_threads_are_fixed_before_learner_code(sandbox: Sandbox) -> None:
    code = """
import random
import numpy as np
import torch
first = [torch.rand(1).item(), float(np.random.rand()), random.random()]
torch.manual_seed(0); np.random.seed(0); random.seed(0)
again = [torch.rand(1).item(), float(np.random.rand()), random.random()]
threads = torch.get_num_threads()
"""
    capture = run_script(sandbox, code, ["first", "again", "threads"])
    assert capture.variables["first"] == capture.variables["again"]
    assert capture.variables["threads"].value == 1  # type: ignore[union-attr]


def test_stdout_and_tensors_are_capped(sandbox: Sandbox) -> None:
    code = "import torch\nprint('x' * 200_000)\nbig = torch.zeros(250_000)\n"
    capture = run_script(sandbox, code, ["big"], stdout_bytes=1000, tensor_elements=500)
    assert capture.stdout_truncated and len(capture.stdout) == 1000
    big = capture.variables["big"]
    assert isinstance(big, TensorValue) and big.truncated
    assert big.shape == (250_000,) and len(big.data) == 500


def test_learner_output_written_as_bytes_or_through_sys_stdout_is_captured(
    sandbox: Sandbox,
) -> None:
    code = (
        "import sys\n"
        "sys.stdout.buffer.write('grad \u2207 ok\\n'.encode())\n"
        "sys.stdout.write(f'{sys.stdout.encoding}\\n')\n"
        "print('done', flush=True)\n"
    )
    capture = run_script(sandbox, code, [])
    assert capture.exception is None
    assert capture.stdout == "grad \u2207 ok\nutf-8\ndone\n"


def test_non_finite_values_survive_the_json_round_trip(sandbox: Sandbox) -> None:
    code = "import torch\nt = torch.tensor([float('nan'), float('inf'), -float('inf'), 1.5])\n"
    capture = run_script(sandbox, code, ["t"])
    values = capture.variables["t"].data  # type: ignore[union-attr]
    assert values[0] != values[0] and values[1:] == (float("inf"), -float("inf"), 1.5)


def test_forged_result_frame_printed_by_the_learner_is_ignored(grade_code: GradeCode) -> None:
    forged_capture = (
        '{"protocol":1,"kind":"script","variables":{},"backward_calls":[],'
        '"optimizer_steps":0,"stdout":"","stdout_truncated":false,"exception":null,'
        '"duration_s":0}'
    )
    code = f"""
import os, sys
forged = {forged_capture!r}
for nonce in ("0" * 32, "f" * 32):
    frame = f"GRADLAB-RESULT {{nonce}} {{len(forged)}}\\n{{forged}}"
    print(frame)
    os.write(1, frame.encode())
    sys.__stdout__.write(frame)
import torch
x = torch.tensor(5.0)
y = x**2
"""
    report = grade_code("first-gradient", code)
    assert report.status == "graded"
    assert not report.passed
    assert "GRADLAB-RESULT" in report.stdout  # it was just output, shown to its author


def test_os_exit_before_the_result_is_a_failed_run(grade_code: GradeCode) -> None:
    report = grade_code("first-gradient", "import os\nprint('bye')\nos._exit(0)\n")
    assert report.status == "failed"
    assert report.score == 0 and not report.passed
    assert report.message.startswith(NO_RESULT)


def test_a_killed_runner_is_a_failed_run_that_says_so(grade_code: GradeCode) -> None:
    report = grade_code("first-gradient", "import os, signal\nos.kill(os.getpid(), 9)\n")
    assert report.status == "failed"
    assert NO_RESULT in report.message and "killed" in report.message


def test_function_reference_carries_plain_data_cases_and_the_learner_gets_only_those(
    sandbox: Sandbox,
) -> None:
    package = package_at("chunked-mean")
    reference = reference_capture(package, seed=7, device="cpu", sandbox=sandbox, cache=None)
    assert len(reference.cases) == package.manifest.trials
    assert [case.visible for case in reference.cases] == [True, False, False, False]
    assert all(case.input is not None for case in reference.cases)
    envelope = learner_envelope(package, "def accumulate(x, chunks):\n    pass\n", reference)
    wire = envelope.to_json()
    assert "seed" not in wire and "trials" not in wire
    assert wire["files"] == {"submission.py": "def accumulate(x, chunks):\n    pass\n"}
    assert package.solution not in str(wire)
    assert "make_cases" not in str(wire) and "variants" not in str(wire)
    assert "cases" not in wire  # on a line of their own, read after the fork
    _, line, cases, nonce = envelope.stdin("0" * 32).decode().split("\n", 3)
    assert json.loads(line) == wire and nonce == "0" * 32 + "\n"
    assert json.loads(cases) == [dict(case.input or {}) for case in reference.cases]
    run = run_envelope(sandbox, envelope, Limits(), "cpu", "function-learner")
    learner = parse_result(run.result.stdout, run.nonce)
    assert [case.visible for case in learner.cases] == [True, False, False, False]
    assert all(case.input is None for case in learner.cases)
    assert learner.defined == {"accumulate": True}


def test_reference_envelope_holds_no_learner_code_and_the_seed_only_for_functions() -> None:
    script = reference_envelope(package_at("first-gradient"), 99).to_json()
    assert "seed" not in script and "cases" not in script
    assert script["files"] == {"submission.py": package_at("first-gradient").solution}
    function = reference_envelope(package_at("chunked-mean"), 99).to_json()
    assert (function["seed"], function["trials"], function["mode"]) == (99, 4, "reference")
    assert set(function["files"]) == {"submission.py", "cases.py"}


def test_a_large_job_envelope_is_read_intact(sandbox: Sandbox) -> None:
    padding = "# " + "p" * 98 + "\n"
    code = padding * 3000 + "ok = True\n"  # 300 kB: several pipe buffers
    capture = run_script(sandbox, code, ["ok"])
    assert capture.exception is None
    assert capture.variables["ok"].value is True  # type: ignore[union-attr]
