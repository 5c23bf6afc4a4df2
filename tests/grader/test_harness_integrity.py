"""Hostile submissions, written by someone who has read this repository, graded through
the real bubblewrap sandbox: each one scores nothing it did not earn or is flagged for
review, the report stays clear, and a correct submission right after gets full marks."""

from __future__ import annotations

import json

import pytest
from conftest import GradeCode
from grading_helpers import package_at

from grader.protocol import Report
from grader.runs.reference import reference_capture
from grader.sandbox.base import Sandbox
from grader.spec import Package

pytestmark = pytest.mark.sandbox

CHAIN_RULE_FORGED_BODY = {
    "variables": {
        "x": {
            "kind": "tensor", "dtype": "float32", "shape": [], "device": "cpu",
            "requires_grad": True, "is_leaf": True, "grad_fn": None, "data": [2.0],
            "grad": {
                "kind": "tensor", "dtype": "float32", "shape": [], "device": "cpu",
                "requires_grad": False, "is_leaf": True, "grad_fn": None, "data": [60.0],
                "grad": None, "truncated": False,
            },
            "truncated": False,
        },
    },
    "backward_calls": [],
    "optimizer_steps": 0,
    "stdout": "",
    "stdout_truncated": False,
    "exception": None,
    "duration_s": 0.0,
}  # fmt: skip


ROOMY = "\n[limits]\nwall_seconds = 90\n"  # a loaded 2-core machine: time is not the subject
_ROOMY: dict[str, Package] = {}


def roomy(exercise: str) -> Package:
    """The exercise with a generous wall-clock limit (one package per session: the
    session's reference cache serves it after its first run)."""
    if exercise not in _ROOMY:
        files = dict(package_at(exercise).files)
        files["exercise.toml"] += ROOMY
        _ROOMY[exercise] = Package.from_files(files)
    return _ROOMY[exercise]


def tamper_kinds(report: Report) -> set[str]:
    return {
        flag.detail.split(":", 1)[0] for flag in report.integrity_flags if flag.kind == "tamper"
    }


def assert_solution_still_passes(grade_code: GradeCode, exercise: str) -> None:
    report = grade_code(roomy(exercise), package_at(exercise).solution)
    assert report.passed and report.score == report.max_score, report.message
    assert report.integrity_flags == ()


def test_the_learner_holds_only_its_output_and_the_protocol_descriptor(
    grade_code: GradeCode,
) -> None:
    code = """
import os
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
print("fds", fds)
import torch
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
z.backward()
"""
    report = grade_code(roomy("chain-rule"), code)
    listed = json.loads(report.stdout.split("fds ", 1)[1].splitlines()[0])
    assert set(listed[:4]) == {0, 1, 2, 3} and len(listed) == 5  # the 5th: listdir's own
    assert "proc-access" in tamper_kinds(report)
    assert_solution_still_passes(grade_code, "chain-rule")


def test_a_stack_trace_formatted_inside_backward_reads_no_harness_file_and_is_not_flagged(
    grade_code: GradeCode,
) -> None:
    # The hook runs under the harness's backward wrapper, so the stack it formats shows
    # harness frames; their lines come from linecache, filled before the hook is armed.
    code = """
import logging, traceback
import torch

stacks = []

def note(grad):
    stacks.append(traceback.format_stack())
    logging.getLogger("learner").debug("backward", stack_info=True)
    return grad

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
y.register_hook(note)
z = y**2
z.backward()
print("stacks", len(stacks))
"""
    report = grade_code(roomy("chain-rule"), code)
    assert "stacks 1" in report.stdout
    assert report.integrity_flags == ()
    assert report.passed and report.score == report.max_score, report.message


def test_raw_writes_to_the_protocol_descriptor_and_signals_to_the_harness_are_refused(
    grade_code: GradeCode,
) -> None:
    code = """
import os, struct, json
refused = []
message = json.dumps({"type": "result", "body": {}}).encode()
for attempt in (
    lambda: os.write(3, struct.pack(">I", len(message)) + message),
    lambda: os.dup(3),
    lambda: os.kill(os.getppid(), 9),
    lambda: os.kill(-1, 9),
):
    try:
        attempt()
    except PermissionError:
        refused.append(True)
print("refused", len(refused))
"""
    report = grade_code(roomy("chain-rule"), code)
    assert report.status == "graded" and not report.passed  # the run went on, it earned nothing
    assert "refused 4" in report.stdout
    assert "signal" in tamper_kinds(report)
    assert_solution_still_passes(grade_code, "chain-rule")


def test_a_capture_forged_through_a_socket_on_the_protocol_descriptor_is_flagged(
    grade_code: GradeCode,
) -> None:
    code = f"""
import json, os, socket, struct
body = json.loads({json.dumps(json.dumps(CHAIN_RULE_FORGED_BODY))})
message = json.dumps({{"type": "result", "body": body}}).encode()
channel = socket.socket(fileno=3)
channel.sendall(struct.pack(">I", len(message)) + message)
os._exit(0)
"""
    report = grade_code(roomy("chain-rule"), code)
    assert report.integrity_flags, "a forged capture must be flagged for review"
    assert "socket" in tamper_kinds(report)
    assert_solution_still_passes(grade_code, "chain-rule")


def test_replacing_the_autograd_engine_below_the_wrappers_is_flagged(
    grade_code: GradeCode,
) -> None:
    code = """
import torch
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2

def no_engine(tensors, grad_tensors, *args, **kwargs):
    x.grad = torch.tensor(60.0)  # typed in: autograd never runs

torch.autograd._engine_run_backward = no_engine
z.backward()
"""
    report = grade_code(roomy("chain-rule"), code)
    kinds = tamper_kinds(report)
    assert {"autograd-not-run", "replaced"} <= kinds
    details = " ".join(flag.detail for flag in report.integrity_flags)
    assert "torch.autograd._engine_run_backward" in details
    assert_solution_still_passes(grade_code, "chain-rule")


def test_replacing_torch_methods_ctypes_and_trace_hooks_are_each_flagged(
    grade_code: GradeCode,
) -> None:
    code = """
import ctypes, sys, torch
ctypes.CDLL(None)
sys.settrace(None)
torch.Tensor.tolist = lambda self: [60.0]
x = torch.tensor(2.0, requires_grad=True)
z = (3 * x + 4) ** 2
z.backward()
"""
    report = grade_code(roomy("chain-rule"), code)
    assert {"ctypes", "trace-hook", "replaced"} <= tamper_kinds(report)
    assert_solution_still_passes(grade_code, "chain-rule")


def test_the_exercises_case_helpers_are_not_in_the_learners_sandbox(
    grade_code: GradeCode,
) -> None:
    attempts = {
        "graph-inspection": "from cases import _walk\n\ndef grad_fn_names(t):\n"
        "    return _walk(t, breadth_first=True)\n",
        "numpy-backprop": "import sys\n\ndef manual_backward(W1, b1, W2, b2, x, y_true):\n"
        "    cases = sys.modules['cases']\n"
        "    return cases._gradients(locals(), y_true, sigmoid_derivative=True)\n",
    }
    for exercise, code in attempts.items():
        report = grade_code(roomy(exercise), code)
        assert report.score == 0 and not report.passed, exercise
        assert_solution_still_passes(grade_code, exercise)


def test_module_level_code_sees_no_hidden_case_and_walking_the_heap_is_flagged(
    grade_code: GradeCode,
) -> None:
    code = """
import gc
found = [o for o in gc.get_objects() if isinstance(o, dict) and "observe" in o and "call" in o]
if found:
    raise RuntimeError(f"found {len(found)} cases")

def grad_fn_names(t):
    return []
"""
    report = grade_code(roomy("graph-inspection"), code)
    assert "gc-walk" in tamper_kinds(report)
    assert report.exception is None  # the heap held no case when the module ran
    assert_solution_still_passes(grade_code, "graph-inspection")


def test_the_visible_example_is_fixed_and_hidden_cases_follow_the_seed(sandbox: Sandbox) -> None:
    package = roomy("chunked-mean")
    one = reference_capture(package, seed=1, device="cpu", sandbox=sandbox, cache=None)
    two = reference_capture(package, seed=2, device="cpu", sandbox=sandbox, cache=None)
    assert one.cases[0].input == two.cases[0].input
    assert [c.input for c in one.cases[1:]] != [c.input for c in two.cases[1:]]
    assert one.tamper == () and two.tamper == ()
