"""A correct submission that printed past the output limit, graded through the real
bubblewrap sandbox and saved by the worker's final write, shows full marks and a note
that its output was cut, not an alert that the run failed."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string
from platform_helpers import graded_and_saved

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

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
    from web.presenters import feedback_for

    saved = graded_and_saved(
        alice_learner, "chain-rule", PRINTS_PAST_THE_LIMIT, sandbox, reference_cache
    )

    feedback = feedback_for(saved)
    assert feedback.passed and feedback.message_role == "note"
    page = render_to_string("web/_feedback.html", {"fb": feedback})
    assert 'class="run-note" role="note"><strong>your output was cut at 64 KiB' in page
    assert 'role="alert"' not in page
