"""Drafts pruning (courses.pruning, `manage.py prune_drafts`, the beat task): per exercise
the most recent drafts stay, and so does every draft something points at (the current
draft, a validation job, a try-as-learner preview); published versions are never touched."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from gradlab_fixtures import MODULE_SLUG

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_worker(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-drafts-pruning-test"


def _drafts(slug: str) -> list[str]:
    """The exercise's drafts, oldest first, by the line the test wrote into solution.py."""
    from courses.models import ExerciseVersion

    versions = ExerciseVersion.objects.filter(exercise__slug=slug, number__isnull=True)
    return [v.files["solution.py"].splitlines()[-1] for v in versions.order_by("created_at", "id")]


def _save(exercise: Any, files: dict[str, str], user: Any, mark: str) -> Any:
    from authoring.services import draft_save

    changed = {**files, "solution.py": files["solution.py"] + f"# {mark}\n"}
    draft = draft_save(exercise=exercise, files=changed, user=user)
    exercise.refresh_from_db()
    return draft.version


def _edited_exercise(user: Any, slug: str, saves: int) -> tuple[Any, list[Any]]:
    """An exercise with `saves` drafts after its first, "# save 1" .. "# save <saves>"."""
    from authoring.services import exercise_create
    from courses.models import Module

    first = exercise_create(module=Module.objects.get(slug=MODULE_SLUG), slug=slug, user=user)
    exercise = first.version.exercise
    files = dict(first.version.files)
    versions = [_save(exercise, files, user, f"save {n}") for n in range(1, saves + 1)]
    return exercise, versions


def test_the_last_drafts_and_every_draft_in_use_are_kept_and_the_rest_deleted(
    bob_instructor: Any,
) -> None:
    from authoring.services import draft_validate
    from courses.models import ExerciseVersion
    from courses.pruning import drafts_prune
    from submissions.services import submission_preview_create

    exercise, versions = _edited_exercise(bob_instructor, "cube-gradient", saves=7)
    submission_preview_create(user=bob_instructor, exercise=exercise, version=versions[1],
                              code="import torch\n")  # fmt: skip
    _save(exercise, dict(versions[2].files), bob_instructor, "validated")
    draft_validate(exercise=exercise, user=bob_instructor)  # on the draft "# validated"
    _save(exercise, dict(versions[6].files), bob_instructor, "current")
    published = ExerciseVersion.objects.filter(exercise__slug="e2e-gradient").count()

    result = drafts_prune(keep=2)
    again = drafts_prune(keep=2)

    assert _drafts("cube-gradient") == [
        "# save 2",  # a preview submission was graded on it
        "# validated",  # its validation job (and among the last 2)
        "# current",  # the exercise's draft (and among the last 2)
    ]
    assert (result.deleted, result.exercises) == (7, 1)  # the first draft, saves 1 and 3-7
    assert again.deleted == 0
    assert ExerciseVersion.objects.filter(exercise__slug="e2e-gradient").count() == published


def test_keeping_none_leaves_only_the_drafts_in_use_of_every_exercise(
    bob_instructor: Any,
) -> None:
    from courses.pruning import drafts_prune

    _edited_exercise(bob_instructor, "cube-gradient", saves=3)
    _edited_exercise(bob_instructor, "square-gradient", saves=2)

    result = drafts_prune(keep=0)

    assert _drafts("cube-gradient") == ["# save 3"] and _drafts("square-gradient") == ["# save 2"]
    assert (result.deleted, result.exercises) == (3 + 2, 2)


def test_a_published_version_is_never_pruned(bob_instructor: Any) -> None:
    from authoring.services import draft_validate, exercise_publish
    from courses.models import ExerciseJob, ExerciseVersion
    from courses.pruning import drafts_prune

    exercise, _ = _edited_exercise(bob_instructor, "cube-gradient", saves=2)
    job = draft_validate(exercise=exercise, user=bob_instructor)
    ExerciseJob.objects.filter(pk=job.pk).update(status="done", outcome={"ok": True})
    version = exercise_publish(exercise=exercise)  # "# save 2" becomes v1

    result = drafts_prune(keep=0)

    assert ExerciseVersion.objects.filter(pk=version.pk, number=1).exists()
    assert _drafts("cube-gradient") == [] and result.deleted == 2


def test_the_command_prunes_with_the_setting_or_its_keep_option(
    bob_instructor: Any, settings: Any
) -> None:
    settings.GRADLAB_DRAFTS_KEPT = 2
    _edited_exercise(bob_instructor, "cube-gradient", saves=4)
    out = StringIO()

    call_command("prune_drafts", stdout=out)
    kept_by_setting = _drafts("cube-gradient")
    call_command("prune_drafts", "--keep", "0", stdout=out)

    assert kept_by_setting == ["# save 3", "# save 4"]
    assert _drafts("cube-gradient") == ["# save 4"]
    assert "deleted 3 drafts of 1 exercises" in out.getvalue()
    assert "deleted 1 drafts of 1 exercises" in out.getvalue()


def test_the_beat_schedule_prunes_daily_with_the_setting() -> None:
    from config.celery_app import app
    from courses.tasks import prune_drafts

    entry = app.conf.beat_schedule["prune-old-drafts"]

    assert entry["task"] == prune_drafts.name == "gradlab.prune_drafts"
    assert entry["schedule"] == 24 * 3600
