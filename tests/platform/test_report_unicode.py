"""A report of a learner who printed a lone surrogate, graded through the real bubblewrap
sandbox, is saved on PostgreSQL by the worker's own final write (which refuses text that
is not valid UTF-8): the capture's parser replaced it, nothing is retried."""

from __future__ import annotations

from typing import Any

import pytest
from platform_helpers import graded_and_saved

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

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
    saved = graded_and_saved(
        alice_learner, "chain-rule", PRINTS_A_LONE_SURROGATE, sandbox, reference_cache
    )

    assert "printed \ufffd alone" in saved.report["stdout"]
    assert saved.score == saved.max_score
