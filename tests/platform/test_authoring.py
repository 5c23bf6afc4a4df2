"""Authoring services (authoring.services): modules and exercises an instructor owns, drafts
and published versions, schedules, roles and what learners see. The validation that
publishing waits for runs in a real worker in test_authoring_worker.py; here a job's
outcome row stands for it where only the publishing rule is under test."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG, persona
from platform_helpers import E2E_SLUG, package_file

pytestmark = pytest.mark.django_db


def _module(slug: str = MODULE_SLUG) -> Any:
    from courses.models import Module

    return Module.objects.get(slug=slug)


def _exercise(slug: str) -> Any:
    from courses.models import Exercise

    return Exercise.objects.get(slug=slug)


def _new(user: Any, slug: str = "cube-gradient", module: str = MODULE_SLUG) -> Any:
    from authoring.services import exercise_create

    return exercise_create(module=_module(module), slug=slug, user=user)


def _validated(version: Any, *, ok: bool, status: str = "done") -> Any:
    """A finished validation job of `version`, as a worker leaves it."""
    from courses.models import ExerciseJob

    outcome = {"ok": ok, "rows": [], "error": "", "problems": 0 if ok else 1}
    return ExerciseJob.objects.create(
        exercise=version.exercise, version=version, kind="validate", status=status,
        outcome=outcome if status == "done" else None,
    )  # fmt: skip


# -- modules and roles -------------------------------------------------------------------


def test_an_instructor_creates_a_module_and_becomes_its_instructor(bob_instructor: Any) -> None:
    from authoring.services import module_create
    from courses.access import module_is_taught_by

    module = module_create(slug="autograd-two", title="Autograd, part two", user=bob_instructor)

    assert module_is_taught_by(module_id=module.pk, user=bob_instructor)
    assert module.title == "Autograd, part two"


def test_a_learner_may_not_create_a_module(alice_learner: Any) -> None:
    from authoring.services import module_create
    from common.errors import Forbidden

    with pytest.raises(Forbidden):
        module_create(slug="mine", title="Mine", user=alice_learner)


@pytest.mark.parametrize(
    ("slug", "title", "field"),
    [("Bad Slug", "T", "slug"), (MODULE_SLUG, "T", "slug"), ("fine-slug", "  ", "title")],
)
def test_a_bad_or_taken_module_slug_or_an_empty_title_is_refused_by_field(
    bob_instructor: Any, slug: str, title: str, field: str
) -> None:
    from authoring.services import module_create
    from common.errors import InvalidInput

    with pytest.raises(InvalidInput) as caught:
        module_create(slug=slug, title=title, user=bob_instructor)

    assert field in caught.value.errors


def test_a_reviewer_reads_drafts_but_does_not_teach_the_module(catalog: Any) -> None:
    from common.errors import Forbidden
    from courses.access import module_get_reviewed, module_get_taught
    from courses.roster import module_member_set

    persona("rita_reviewer")
    module_member_set(module=_module(), username="rita_reviewer", role="reviewer")
    rita = persona("rita_reviewer")

    assert module_get_reviewed(slug=MODULE_SLUG, user=rita).slug == MODULE_SLUG
    with pytest.raises(Forbidden):
        module_get_taught(slug=MODULE_SLUG, user=rita)


def test_a_learner_and_another_modules_instructor_are_not_reviewers(
    alice_learner: Any, carol_other_course: Any
) -> None:
    from common.errors import Forbidden
    from courses.access import module_get_reviewed

    for user in (alice_learner, carol_other_course):
        with pytest.raises(Forbidden):
            module_get_reviewed(slug=MODULE_SLUG, user=user)


def test_a_co_instructor_is_added_by_name_and_an_unknown_user_is_refused(catalog: Any) -> None:
    from common.errors import InvalidInput
    from courses.access import module_is_taught_by
    from courses.roster import module_member_set

    frank = persona("frank")
    module_member_set(module=_module(), username="frank", role="instructor")

    assert module_is_taught_by(module_id=_module().pk, user=frank)
    with pytest.raises(InvalidInput):
        module_member_set(module=_module(), username="nobody", role="instructor")


# -- drafts and versions ------------------------------------------------------------------


def test_a_new_exercise_is_a_valid_draft_that_learners_do_not_see(
    bob_instructor: Any, alice_learner: Any
) -> None:
    from courses.selectors import exercises_visible_to

    draft = _new(bob_instructor)

    assert draft.problem == ""
    assert draft.version.number is None
    assert _exercise("cube-gradient").current_version is None
    assert "cube-gradient" not in {e.slug for e in exercises_visible_to(user=alice_learner)}


def test_every_save_is_a_draft_and_an_invalid_one_names_the_file_and_field(
    bob_instructor: Any,
) -> None:
    from authoring.services import draft_save

    first = _new(bob_instructor)
    files = dict(first.version.files)
    files["exercise.toml"] = files["exercise.toml"].replace("points = 10", "points = 12")

    second = draft_save(exercise=_exercise("cube-gradient"), files=files, user=bob_instructor)

    assert second.version.pk != first.version.pk and second.version.number is None
    assert second.problem.startswith("cube-gradient/exercise.toml: points: is 12")
    assert _exercise("cube-gradient").draft_version_id == second.version.pk
    assert first.version.files != second.version.files  # the first draft is kept as it was


def test_a_draft_with_a_file_an_upload_could_not_hold_is_refused(bob_instructor: Any) -> None:
    from authoring.services import draft_save
    from grader.authoring.archive import ArchiveError

    files = dict(_new(bob_instructor).version.files)
    files["../../etc/cron.d/x"] = "* * * * * root sh\n"

    with pytest.raises(ArchiveError, match=r"paths with '\.\.'"):
        draft_save(exercise=_exercise("cube-gradient"), files=files, user=bob_instructor)


def test_publishing_is_refused_without_a_passed_validation_of_that_content(
    bob_instructor: Any,
) -> None:
    from authoring.services import exercise_publish
    from common.errors import Conflict

    draft = _new(bob_instructor)
    exercise = _exercise("cube-gradient")
    with pytest.raises(Conflict, match="Validate this content"):
        exercise_publish(exercise=exercise)
    _validated(draft.version, ok=False)
    with pytest.raises(Conflict, match="validation failed"):
        exercise_publish(exercise=exercise)
    _validated(draft.version, ok=True, status="running")
    with pytest.raises(Conflict, match="still running"):
        exercise_publish(exercise=exercise)

    assert _exercise("cube-gradient").current_version is None


def test_publishing_a_validated_draft_makes_the_next_version_current_for_learners(
    bob_instructor: Any, alice_learner: Any
) -> None:
    from authoring.services import exercise_publish
    from courses.selectors import exercises_visible_to

    draft = _new(bob_instructor)
    _validated(draft.version, ok=True)

    version = exercise_publish(exercise=_exercise("cube-gradient"))

    exercise = _exercise("cube-gradient")
    assert (version.number, exercise.current_version_id, exercise.draft_version) == (
        1, draft.version.pk, None,
    )  # fmt: skip
    assert (exercise.title, exercise.kind, exercise.points) == ("Cube gradient", "script", 10)
    assert "cube-gradient" in {e.slug for e in exercises_visible_to(user=alice_learner)}


def test_a_validation_of_an_older_draft_does_not_let_a_newer_one_publish(
    bob_instructor: Any,
) -> None:
    from authoring.services import draft_save, exercise_publish
    from common.errors import Conflict

    first = _new(bob_instructor)
    _validated(first.version, ok=True)
    files = dict(first.version.files)
    files["solution.py"] += "# changed after the validation\n"
    draft_save(exercise=_exercise("cube-gradient"), files=files, user=bob_instructor)

    with pytest.raises(Conflict, match="Validate this content"):
        exercise_publish(exercise=_exercise("cube-gradient"))


def test_a_past_submission_keeps_the_version_it_was_graded_against(
    bob_instructor: Any, alice_learner: Any
) -> None:
    from authoring.services import draft_save, exercise_publish
    from submissions.services import submission_create

    exercise = _exercise(E2E_SLUG)
    old = exercise.current_version
    submission, _ = submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 1\n")
    files = dict(old.files)
    files["statement.md"] += "\nA clearer sentence.\n"
    draft = draft_save(exercise=exercise, files=files, user=bob_instructor)
    _validated(draft.version, ok=True)

    new = exercise_publish(exercise=_exercise(E2E_SLUG))

    submission.refresh_from_db()
    assert new.number == old.number + 1
    assert submission.version_id == old.pk
    assert "A clearer sentence." not in submission.version.statement


def test_the_diff_between_versions_lists_each_changed_file(bob_instructor: Any) -> None:
    from authoring.services import draft_save, version_get, versions_diff

    exercise = _exercise(E2E_SLUG)
    files = dict(exercise.current_version.files)
    files["statement.md"] += "\nAdded line.\n"
    files["wrong/new-mistake.py"] = "x = 2\n"
    del files["starter.py"]
    draft_save(exercise=exercise, files=files, user=bob_instructor)

    diffs = versions_diff(version_get(exercise=exercise, label="current"),
                          version_get(exercise=_exercise(E2E_SLUG), label="draft"))  # fmt: skip

    by_path = {d.path: d for d in diffs}
    assert {p: d.status for p, d in by_path.items()} == {
        "statement.md": "changed", "wrong/new-mistake.py": "added", "starter.py": "removed",
    }  # fmt: skip
    assert "+Added line." in by_path["statement.md"].diff
    assert by_path["statement.md"].diff.startswith("--- v1/statement.md\n+++ draft ")


def test_unpublishing_hides_an_exercise_from_learners_and_keeps_its_submissions(
    alice_learner: Any,
) -> None:
    from authoring.services import exercise_unpublish
    from courses.selectors import exercises_visible_to
    from submissions.models import Submission
    from submissions.services import submission_create

    submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 1\n")

    exercise_unpublish(exercise=_exercise(E2E_SLUG))

    assert E2E_SLUG not in {e.slug for e in exercises_visible_to(user=alice_learner)}
    assert Submission.objects.filter(exercise__slug=E2E_SLUG).count() == 1


# -- who sees what, release and due dates -------------------------------------------------


def test_a_learner_sees_only_the_modules_they_are_enrolled_in(
    alice_learner: Any, bob_instructor: Any
) -> None:
    from authoring.services import exercise_publish
    from common.errors import InvalidInput
    from courses.selectors import exercises_visible_to
    from submissions.services import submission_create

    draft = _new(persona("olga", module_slug=OTHER_MODULE_SLUG, role="instructor"),
                 slug="elsewhere", module=OTHER_MODULE_SLUG)  # fmt: skip
    _validated(draft.version, ok=True)
    exercise_publish(exercise=_exercise("elsewhere"))

    assert "elsewhere" not in {e.slug for e in exercises_visible_to(user=alice_learner)}
    with pytest.raises(InvalidInput, match="Unknown exercise"):
        submission_create(learner=alice_learner, exercise_slug="elsewhere", code="x = 1\n")


def test_an_exercise_is_hidden_until_its_release_date(alice_learner: Any) -> None:
    from authoring.services import exercise_schedule_set
    from courses.selectors import exercises_visible_to

    exercise_schedule_set(
        exercise=_exercise(E2E_SLUG),
        release_at=timezone.now() + timedelta(days=1),
        due_at=None,
        late_counts=True,
    )
    hidden = {e.slug for e in exercises_visible_to(user=alice_learner)}
    exercise_schedule_set(
        exercise=_exercise(E2E_SLUG),
        release_at=timezone.now() - timedelta(minutes=1),
        due_at=None,
        late_counts=True,
    )

    assert E2E_SLUG not in hidden
    assert E2E_SLUG in {e.slug for e in exercises_visible_to(user=alice_learner)}


def test_a_due_date_before_the_release_is_refused(catalog: Any) -> None:
    from authoring.services import exercise_schedule_set
    from common.errors import InvalidInput

    now = timezone.now()
    with pytest.raises(InvalidInput) as caught:
        exercise_schedule_set(exercise=_exercise(E2E_SLUG), release_at=now,
                              due_at=now - timedelta(days=1), late_counts=True)  # fmt: skip

    assert "due_at" in caught.value.errors
    assert _exercise(E2E_SLUG).due_at is None


def _graded(submission: Any, score: float) -> None:
    from submissions.models import Submission

    Submission.objects.filter(pk=submission.pk).update(status="graded", score=score, passed=True)


@pytest.mark.parametrize("late_counts", [True, False])
def test_a_late_submission_is_marked_late_and_counts_only_if_the_instructor_says_so(
    alice_learner: Any, late_counts: bool
) -> None:
    from authoring.services import exercise_schedule_set
    from submissions.services import submission_create
    from web.selectors import gradebook

    exercise_schedule_set(
        exercise=_exercise(E2E_SLUG),
        release_at=None,
        due_at=timezone.now() - timedelta(hours=1),
        late_counts=late_counts,
    )
    submission, _ = submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x=1\n")
    _graded(submission, 10.0)

    exercises, rows = gradebook(_module())

    assert submission.late is True
    score = rows[0].scores[[e.slug for e in exercises].index(E2E_SLUG)]
    assert score == (10.0 if late_counts else None)


def test_a_submission_before_the_due_date_is_not_late(alice_learner: Any) -> None:
    from authoring.services import exercise_schedule_set
    from submissions.services import submission_create

    exercise_schedule_set(exercise=_exercise(E2E_SLUG), release_at=None,
                          due_at=timezone.now() + timedelta(days=1), late_counts=False)  # fmt: skip

    submission, _ = submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x=1\n")

    assert submission.late is False


# -- try as a learner ---------------------------------------------------------------------


def test_a_preview_of_a_draft_is_graded_against_the_draft_and_counts_nowhere(
    bob_instructor: Any, alice_learner: Any
) -> None:
    from authoring.services import draft_of
    from submissions.selectors import submission_list_own
    from submissions.services import submission_preview_create
    from web.selectors import exercise_stats, gradebook, learner_progress

    draft = _new(bob_instructor)
    exercise = _exercise("cube-gradient")
    persona("bob_instructor", module_slug=MODULE_SLUG, role="learner")  # even as a learner
    preview = submission_preview_create(
        user=bob_instructor, exercise=exercise, version=draft_of(exercise),
        code=package_file("first-gradient", "solution.py"),
    )  # fmt: skip
    _graded(preview, 10.0)

    assert preview.preview and preview.version_id == draft.version.pk
    assert list(submission_list_own(user=bob_instructor)) == []
    assert all(row.attempts == 0 for row in learner_progress(module=_module(), user=bob_instructor))
    assert all(s.attempts == 0 for s in exercise_stats(_module()))
    assert all(score is None for row in gradebook(_module())[1] for score in row.scores)


def test_a_graded_preview_sends_no_webhook_where_a_learners_grade_does(
    bob_instructor: Any, alice_learner: Any, settings: Any
) -> None:
    from authoring.services import draft_of
    from integrations.models import WebhookDelivery, WebhookEndpoint
    from submissions.services import (
        _tell_integrations,
        submission_create,
        submission_preview_create,
    )

    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-authoring-test"  # nobody sends them
    WebhookEndpoint.objects.create(
        module=_module(), created_by=bob_instructor, url="https://example.org/hook",
        events=["submission.graded"], secret="whsec_test",
    )  # fmt: skip
    exercise = _exercise(E2E_SLUG)
    preview = submission_preview_create(
        user=bob_instructor, exercise=exercise, version=draft_of(exercise), code="x = 1\n"
    )
    learners, _ = submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x=1\n")
    for submission in (preview, learners):
        _graded(submission, 10.0)

    _tell_integrations(preview.pk)
    after_preview = WebhookDelivery.objects.count()
    _tell_integrations(learners.pk)

    assert after_preview == 0
    assert WebhookDelivery.objects.count() == 1


def test_a_module_exported_and_imported_as_a_copy_gets_new_exercises_beside_the_originals(
    bob_instructor: Any,
) -> None:
    from authoring.services import module_archive_upload, module_create
    from courses.models import Exercise
    from courses.services import module_export
    from grader.spec import Package

    data = module_export(module=_module(), kind="zip")
    copy = module_create(slug="autograd-copy", title="A copy", user=bob_instructor)

    drafts = module_archive_upload(
        module=copy, data=data, name="m.zip", user=bob_instructor, copy=True
    )

    copied = {d.version.exercise.slug for d in drafts}
    assert copied == {f"{e.slug}-autograd-copy" for e in _module().exercises.all()}
    assert all(d.problem == "" for d in drafts)
    one = Exercise.objects.get(slug=f"{E2E_SLUG}-autograd-copy")
    original = _exercise(E2E_SLUG).current_version.files
    assert one.module_id == copy.pk and one.current_version is None
    assert Package.from_files(one.draft_version.files).slug == f"{E2E_SLUG}-autograd-copy"
    changed = [p for p in original if original[p] != one.draft_version.files[p]]
    assert changed == ["exercise.toml"]
    assert _exercise(E2E_SLUG).module_id == _module().pk
