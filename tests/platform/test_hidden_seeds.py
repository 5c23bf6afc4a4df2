"""Per-submission hidden inputs (issue 10): each submission's hidden cases come from its
own seed, derived from the exercise version's secret seed and the submission, stored at
its first grading so that a regrade reproduces it."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone
from platform_helpers import E2E_SLUG, package_file

pytestmark = pytest.mark.django_db


def _submission(learner: Any) -> Any:
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    return Submission.objects.create(
        learner=learner,
        exercise=exercise,
        version=exercise.current_version,
        code=package_file(E2E_SLUG, "solution.py"),
        lease_expires_at=timezone.now(),
    )


def test_a_submission_gets_its_own_seed_once_and_keeps_it(alice_learner: Any) -> None:
    from grading import bridge
    from submissions.models import Submission
    from submissions.services import _hidden_seed

    first, second = _submission(alice_learner), _submission(alice_learner)
    seed = _hidden_seed(first)
    assert Submission.objects.get(pk=first.pk).hidden_seed == seed  # stored
    assert _hidden_seed(Submission.objects.get(pk=first.pk)) == seed  # reproduced
    assert _hidden_seed(second) != seed  # another submission, other hidden inputs
    version_seed = first.version.hidden_seed
    assert seed == bridge.seed_for(version_seed, first.pk) != version_seed
