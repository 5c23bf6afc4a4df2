"""A correct submission that printed past the output limit, graded through the real
bubblewrap sandbox and saved by the worker's final write, shows full marks and a note
that its output was cut, not an alert that the run failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.template.loader import render_to_string

from grader.engine import GradeJob, grade
from grader.spec import load_package

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
PRINTS_PAST_THE_LIMIT = """
import torch
for _ in range(100):
    print("x" * 1000)
x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
z.backward()
"""


def test_a_cut_output_is_a_note_on_a_full_marks_feedback_page(
    alice_learner: Any, sandbox: Any, reference_cache: Any
) -> None:
    from common import jobs
    from submissions.models import Submission
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create
    from web.presenters import feedback_for

    package = load_package(EXERCISES / "chain-rule")
    report = grade(
        GradeJob(package=package, code=PRINTS_PAST_THE_LIMIT),
        sandbox=sandbox,
        cache=reference_cache,
    )
    submission, _ = submission_create(
        learner=alice_learner, exercise_slug="chain-rule", code=PRINTS_PAST_THE_LIMIT
    )
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, report)
    feedback = feedback_for(Submission.objects.get(pk=submission.pk))
    assert feedback.passed and feedback.message_role == "note"
    page = render_to_string("web/_feedback.html", {"fb": feedback})
    assert 'class="run-note" role="note"><strong>your output was cut at 64 KiB' in page
    assert 'role="alert"' not in page
