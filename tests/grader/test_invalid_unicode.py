"""Learner output that is not valid Unicode (a lone surrogate printed, raised or in a
path the audit hook reports) is replaced with U+FFFD where the worker parses what came out
of the sandbox: the report graded through the real bubblewrap sandbox is valid UTF-8."""

from __future__ import annotations

import json

import pytest
from conftest import GradeCode
from test_harness_integrity import roomy

pytestmark = pytest.mark.sandbox

LONE_SURROGATES = """
import torch
print("printed \\ud800 alone")
try:
    open("/proc/self/\\udc80")
except OSError:
    pass
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
z.backward()
raise ValueError("raised \\udfff alone")
"""


def test_lone_surrogates_from_the_learner_become_replacement_characters(
    grade_code: GradeCode,
) -> None:
    report = grade_code(roomy("chain-rule"), LONE_SURROGATES)
    assert "printed \ufffd alone" in report.stdout
    assert report.exception is not None and "raised \ufffd alone" in report.exception["message"]
    details = " ".join(flag.detail for flag in report.integrity_flags)
    assert "/proc/self/\ufffd" in details  # the audit hook's finding, replaced too
    text = json.dumps(report.to_json(), ensure_ascii=False)
    assert text.encode("utf-8").decode("utf-8") == text  # strict UTF-8 both ways
    assert not any("\ud800" <= char <= "\udfff" for char in text)
