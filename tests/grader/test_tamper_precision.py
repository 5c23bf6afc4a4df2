"""The tamper detector tells tampering from honest use (FORMAT.md section 7), graded
through the real bubblewrap sandbox: honest-but-unusual submissions (doctest, a live
tensor count with `gc.get_objects`, the process's own memory from `/proc/self/status`)
score full marks unflagged, while the same calls aimed at the harness, and `/proc/self/mem`
or the harness's files under any other spelling of their path, stay flagged."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from test_harness_integrity import roomy, tamper_kinds

from grader.protocol import Report

pytestmark = pytest.mark.sandbox

CHAIN_RULE = """
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
z.backward()
"""

DOCTEST = (
    '''
import doctest
import torch


def affine(value):
    """3 * value + 4.

    >>> affine(2.0)
    10.0
    """
    return 3 * value + 4


failures, tried = doctest.testmod()
print("doctest", failures, tried)
'''
    + CHAIN_RULE
)

LIVE_TENSORS = (
    """
import gc
import torch
"""
    + CHAIN_RULE
    + """
live = []
for obj in gc.get_objects():
    try:
        if torch.is_tensor(obj) or (hasattr(obj, "data") and torch.is_tensor(obj.data)):
            live.append(obj)
    except Exception:
        pass
print("live tensors", len(live))
"""
)

OWN_MEMORY = (
    """
import torch
"""
    + CHAIN_RULE
    + """
with open("/proc/self/status") as status:
    rss = [line.split(":", 1)[1].strip() for line in status if line.startswith("VmRSS")]
print("memory", rss[0])
"""
)


def assert_full_marks_unflagged(report: Report) -> None:
    assert report.passed and report.score == report.max_score, report.message
    assert report.integrity_flags == ()


def flag_details(report: Report) -> str:
    return "\n".join(flag.detail for flag in report.integrity_flags)


def test_doctest_testmod_scores_full_marks_unflagged(grade_code: GradeCode) -> None:
    report = grade_code(roomy("chain-rule"), DOCTEST)
    assert "doctest 0 1" in report.stdout  # the learner's own docstring was tested
    assert_full_marks_unflagged(report)


def test_counting_live_tensors_with_gc_scores_full_marks_unflagged(
    grade_code: GradeCode,
) -> None:
    report = grade_code(roomy("chain-rule"), LIVE_TENSORS)
    count = int(report.stdout.split("live tensors ", 1)[1].split()[0])
    assert count >= 3  # x, y and z at least: the learner's tensors are all there
    assert_full_marks_unflagged(report)


def test_printing_the_processs_own_memory_scores_full_marks_unflagged(
    grade_code: GradeCode,
) -> None:
    report = grade_code(roomy("chain-rule"), OWN_MEMORY)
    assert "memory " in report.stdout and "kB" in report.stdout
    assert_full_marks_unflagged(report)


def test_a_trace_function_left_installed_over_the_harness_is_flagged(
    grade_code: GradeCode,
) -> None:
    code = "import sys\nimport torch\nsys.settrace(lambda *args: None)\n" + CHAIN_RULE
    report = grade_code(roomy("chain-rule"), code)
    assert "trace-hook" in tamper_kinds(report)
    assert "left installed" in flag_details(report)


def test_gc_shows_no_harness_object_or_record_and_the_real_gc_walk_is_flagged(
    grade_code: GradeCode,
) -> None:
    code = (
        "import gc\nimport torch\n"
        + CHAIN_RULE
        + """
view = gc.get_objects()
harness = [o for o in view if type(o).__name__ in ("Recorder", "Runner", "AuditGuard")]
records = [o for o in view if type(o) is dict and "grads_after" in o]
print("reached", len(harness), len(records))
real = gc.get_objects.original()
"""
    )
    report = grade_code(roomy("chain-rule"), code)
    assert "reached 0 0" in report.stdout
    assert "gc-walk" in tamper_kinds(report)
    assert "gc.get_objects" in flag_details(report)


MEM_SPELLINGS = (
    "/proc/thread-self/mem",
    "/proc/{pid}/mem",
    "/proc/{pid}/task/{pid}/mem",
    "//proc//self//mem",
    "/proc/./self/../self/mem",
    "/tmp/link-to-mem",
    "mem",  # relative, from /proc/self as the working directory
)


def test_writing_proc_self_mem_under_any_spelling_is_flagged(grade_code: GradeCode) -> None:
    code = (
        f"""
import os
import torch
spellings = {list(MEM_SPELLINGS)!r}
os.symlink("/proc/self/mem", "/tmp/link-to-mem")
home = os.getcwd()
for spelling in spellings:
    path = spelling.format(pid=os.getpid())
    if path == "mem":
        os.chdir("/proc/self")
    try:
        with open(path, "r+b") as memory:
            memory.seek(0)
    except OSError:
        pass
    os.chdir(home)
"""
        + CHAIN_RULE
    )
    report = grade_code(roomy("chain-rule"), code)
    details = sorted({f.detail for f in report.integrity_flags if "proc-access" in f.detail})
    assert len(details) == len(MEM_SPELLINGS), flag_details(report)
    assert all(detail.endswith("= /proc/self/mem") for detail in details), details
    for spelling in ("/proc/thread-self/mem", "//proc//self//mem", "/tmp/link-to-mem"):
        assert any(f"open {spelling} =" in detail for detail in details), spelling


HARNESS_SPELLINGS = (
    "/harness//runner.py",
    "/tmp/../harness/./runner.py",
    "/tmp/link-to-harness/runner.py",
    "runner.py",  # relative, from /harness as the working directory
)


def test_reading_the_harnesss_files_under_any_spelling_is_flagged(grade_code: GradeCode) -> None:
    code = (
        f"""
import os
import torch
spellings = {list(HARNESS_SPELLINGS)!r}
os.symlink("/harness", "/tmp/link-to-harness")
home = os.getcwd()
for path in spellings:
    if path == "runner.py":
        os.chdir("/harness")
    try:
        with open(path, "rb") as source:
            source.read(1)
    except OSError:
        pass
    os.chdir(home)
"""
        + CHAIN_RULE
    )
    report = grade_code(roomy("chain-rule"), code)
    details = list(
        dict.fromkeys(f.detail for f in report.integrity_flags if "harness-file" in f.detail)
    )
    assert len(details) == len(HARNESS_SPELLINGS), flag_details(report)
    for spelling, detail in zip(HARNESS_SPELLINGS, details, strict=True):
        assert spelling in detail and "/harness/runner.py" in detail
