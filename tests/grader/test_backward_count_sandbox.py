"""The "exactly one backward call" check counts only calls whose gradient reaches the
graded tensors, graded through the real bubblewrap sandbox: a throw-away backward next to
a typed-in .grad earns nothing, an honest backward (or autograd.grad) still does."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from test_harness_integrity import roomy

from grader.protocol import Report

pytestmark = pytest.mark.sandbox

COUNT_CHECK = "exactly one backward call"

THROW_AWAY = """
import torch
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
torch.tensor(1.0, requires_grad=True).backward()
x.grad = torch.tensor(60.0)
"""

BESIDE_THE_REAL_ONE = """
import torch
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
z.backward()
torch.tensor(1.0, requires_grad=True).backward()
"""

THROUGH_AUTOGRAD_GRAD = """
import torch
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
(x.grad,) = torch.autograd.grad(z, x)
"""


def count_check(report: Report) -> tuple[bool, str]:
    (check,) = [c for c in report.checks if c.name == COUNT_CHECK]
    return check.passed, check.message


def test_a_throw_away_backward_beside_a_typed_in_grad_earns_no_backward_point(
    grade_code: GradeCode,
) -> None:
    passed, message = count_check(grade_code(roomy("chain-rule"), THROW_AWAY))
    assert not passed
    assert "0 successful backward calls, expected 1" in message
    assert "1 reached none of the graded tensors" in message


def test_a_throw_away_backward_beside_the_real_one_is_not_counted(grade_code: GradeCode) -> None:
    report = grade_code(roomy("chain-rule"), BESIDE_THE_REAL_ONE)
    assert count_check(report)[0]
    assert report.score == report.max_score, report.message


def test_a_gradient_through_autograd_grad_still_earns_the_backward_point(
    grade_code: GradeCode,
) -> None:
    report = grade_code(roomy("chain-rule"), THROUGH_AUTOGRAD_GRAD)
    assert count_check(report)[0]
    assert report.score == report.max_score, report.message
