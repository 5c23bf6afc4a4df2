"""Migrations that move data keep it: the instructor jobs moved from web to courses."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# heavy: it migrates down and up again
pytestmark = pytest.mark.heavy

BEFORE = [("web", "0001_initial"), ("courses", "0001_initial")]


def _migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_moving_instructor_jobs_from_web_to_courses_keeps_every_row(
    django_user_model: Any,
) -> None:
    old = _migrate(BEFORE)
    module = old.get_model("courses", "Module").objects.create(slug="m", title="M")
    exercise = old.get_model("courses", "Exercise").objects.create(
        module=module, slug="e", title="E", kind="script", points=10
    )
    version = old.get_model("courses", "ExerciseVersion").objects.create(
        exercise=exercise, number=1, content_hash="h", files={}, manifest={}, statement="",
        statement_html="", starter_code="", hidden_seed=1,
    )  # fmt: skip
    user = old.get_model("auth", "User").objects.create(username="bob_instructor")
    old_job = old.get_model("web", "ExerciseJob").objects.create(
        exercise=exercise, version=version, kind="validate", status="done",
        requested_by=user, outcome={"ok": True}, error="",
    )  # fmt: skip

    executor = MigrationExecutor(connection)
    new = _migrate(executor.loader.graph.leaf_nodes())

    job = new.get_model("courses", "ExerciseJob").objects.get(pk=old_job.pk)
    assert (job.kind, job.status, job.outcome) == ("validate", "done", {"ok": True})
    assert (job.exercise_id, job.version_id, job.requested_by_id) == (
        exercise.pk,
        version.pk,
        user.pk,
    )
    assert (job.attempts, job.lease_expires_at) == (0, None)
