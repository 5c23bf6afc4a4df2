"""A report of a learner who printed a lone surrogate, graded through the real bubblewrap
sandbox, is saved on PostgreSQL by the worker's own final write (which refuses text that
is not valid UTF-8): the capture's parser replaced it, nothing is retried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grader.engine import GradeJob, grade
from grader.spec import load_package

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
PRINTS_A_LONE_SURROGATE = """
import torch
print("printed \\ud800 alone")
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
z.backward()
"""


def test_a_report_with_a_printed_lone_surrogate_saves_on_postgresql(
    alice_learner: Any, sandbox: Any, reference_cache: Any
) -> None:
    from common import jobs
    from submissions.models import Submission
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create

    package = load_package(EXERCISES / "chain-rule")
    report = grade(
        GradeJob(package=package, code=PRINTS_A_LONE_SURROGATE),
        sandbox=sandbox,
        cache=reference_cache,
    )
    submission, _ = submission_create(
        learner=alice_learner, exercise_slug="chain-rule", code=PRINTS_A_LONE_SURROGATE
    )
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, report)
    saved = Submission.objects.get(pk=submission.pk)
    assert "printed \ufffd alone" in saved.report["stdout"]
    assert saved.score == report.max_score
