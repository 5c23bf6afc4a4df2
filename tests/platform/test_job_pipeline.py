"""The one job pipeline (common.jobs) of submissions and instructor jobs: enqueue after
commit, a broker failure that loses nothing, the conditional claim, and the sweep that
recovers lost messages and dead workers; against the real database and Redis broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.utils import timezone
from gradlab_fixtures import queue_length
from kombu.exceptions import OperationalError
from platform_helpers import E2E_SLUG

pytestmark = pytest.mark.django_db


def _messages(queue: str) -> list[dict[str, Any]]:
    from django.conf import settings

    raw = redis.Redis.from_url(settings.CELERY_BROKER_URL).lrange(queue, 0, -1)
    return [json.loads(item) for item in raw]


def _submission(learner: Any, **fields: Any) -> Any:
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    return Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version, code="x = 1",
        **{"lease_expires_at": timezone.now(), **fields},
    )  # fmt: skip


def _job(requested_by: Any, **fields: Any) -> Any:
    from courses.models import Exercise, ExerciseJob

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    return ExerciseJob.objects.create(
        exercise=exercise, version=exercise.current_version, kind="regrade",
        requested_by=requested_by, **{"lease_expires_at": timezone.now(), **fields},
    )  # fmt: skip


def _kinds() -> dict[str, Any]:
    from authoring.jobs import EXERCISE_JOBS
    from submissions.services import SUBMISSIONS

    return {"submission": SUBMISSIONS, "exercise job": EXERCISE_JOBS}


@pytest.fixture(params=["submission", "exercise job"])
def job_kind(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def make_row(
    job_kind: str, alice_learner: Any, bob_instructor: Any
) -> Callable[..., tuple[Any, Any]]:
    """make_row(**fields) -> (the JobKind, a row of that kind)."""

    def make(**fields: Any) -> tuple[Any, Any]:
        if job_kind == "submission":
            return _kinds()[job_kind], _submission(alice_learner, **fields)
        return _kinds()[job_kind], _job(bob_instructor, **fields)

    return make


# -- enqueue -------------------------------------------------------------------------------


def test_a_new_submission_is_sent_to_its_queue_only_once_committed(
    alice_learner: Any, worker_queue: str, django_capture_on_commit_callbacks: Any
) -> None:
    from submissions.services import submission_create

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        submission, _ = submission_create(
            learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 1"
        )
        assert queue_length(worker_queue) == 0  # not before the commit

    assert len(callbacks) == 1
    (message,) = _messages(worker_queue)
    assert message["headers"]["task"] == "gradlab.grade_submission"
    assert message["headers"]["argsrepr"] == f"[{submission.pk}]"


def test_a_new_instructor_job_is_queued_with_a_lease_and_sent_once_committed(
    bob_instructor: Any, worker_queue: str, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    from authoring.jobs import exercise_job_create
    from courses.models import Exercise

    settings.GRADLAB_QUEUED_LEASE_SECONDS = 77
    with django_capture_on_commit_callbacks(execute=True):
        job = exercise_job_create(
            exercise=Exercise.objects.get(slug=E2E_SLUG), kind="validate", user=bob_instructor
        )

    (message,) = _messages(worker_queue)
    assert message["headers"]["task"] == "gradlab.run_exercise_job"
    assert message["headers"]["argsrepr"] == f"[{job.pk}]"
    left = (job.lease_expires_at - timezone.now()).total_seconds()
    assert (job.status, job.attempts) == ("queued", 0)
    assert 70 < left <= 77


def test_a_broker_failure_is_logged_and_the_sweep_sends_the_row_later(
    make_row: Any, worker_queue: str, monkeypatch: Any, caplog: Any
) -> None:
    from common import jobs
    from config.celery_app import app

    # a fresh row: its queued lease runs for minutes
    kind, row = make_row(lease_expires_at=jobs.job_queued_until(_kinds()["submission"]))

    def broker_down(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    with monkeypatch.context() as patch:
        patch.setattr(app, "send_task", broker_down)
        assert jobs.job_enqueue(kind, job_id=row.pk, queue=worker_queue) is False
    assert "the next sweep resends it" in caplog.text
    row.refresh_from_db()
    assert row.status == "queued"  # nothing lost
    # the next sweep (seconds away), not the end of its queued lease, sends it
    assert row.lease_expires_at <= timezone.now()

    assert jobs.jobs_sweep(kind).requeued == (row.pk,)
    assert queue_length(worker_queue) == 1


# -- claim ---------------------------------------------------------------------------------


def test_a_claim_takes_a_queued_row_once_with_the_running_lease_from_settings(
    make_row: Any, settings: Any
) -> None:
    from common import jobs

    settings.GRADLAB_RUNNING_LEASE_SECONDS = 111
    settings.GRADLAB_JOB_RUNNING_LEASE_SECONDS = 111
    kind, row = make_row()

    first = jobs.job_claim(kind, job_id=row.pk)
    second = jobs.job_claim(kind, job_id=row.pk)

    assert (first, second) == (1, None)
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("running", 1)
    assert 100 < (row.lease_expires_at - timezone.now()).total_seconds() <= 111


def test_only_the_current_claim_may_write_its_result(make_row: Any) -> None:
    from common import jobs

    kind, row = make_row(status="running", attempts=2)

    assert jobs.job_owned(kind, job_id=row.pk, attempt=1).count() == 0  # a stale worker
    assert jobs.job_owned(kind, job_id=row.pk, attempt=2).count() == 1


def test_running_an_instructor_job_that_is_not_queued_does_nothing(bob_instructor: Any) -> None:
    from authoring.jobs import exercise_job_run

    done = _job(bob_instructor, status="done", attempts=1, outcome={"regraded": 0})

    assert exercise_job_run(job_id=done.pk) == "skipped"
    assert exercise_job_run(job_id=987654) == "skipped"
    done.refresh_from_db()
    assert (done.status, done.attempts, done.outcome) == ("done", 1, {"regraded": 0})


# -- sweep ---------------------------------------------------------------------------------


def test_the_sweep_resends_a_queued_row_whose_message_was_lost(
    make_row: Any, worker_queue: str
) -> None:
    from common import jobs

    kind, lost = make_row(lease_expires_at=timezone.now() - timedelta(seconds=1))
    make_row(lease_expires_at=timezone.now() + timedelta(minutes=5))  # not lost: left alone

    assert jobs.jobs_sweep(kind).requeued == (lost.pk,)
    assert [m["headers"]["argsrepr"] for m in _messages(worker_queue)] == [f"[{lost.pk}]"]
    lost.refresh_from_db()
    assert lost.status == "queued" and lost.lease_expires_at > timezone.now()


def test_the_sweep_requeues_a_running_row_whose_worker_died(
    make_row: Any, worker_queue: str
) -> None:
    from common import jobs

    kind, stuck = make_row(
        status="running", attempts=1, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert jobs.jobs_sweep(kind).requeued == (stuck.pk,)
    stuck.refresh_from_db()
    assert (stuck.status, stuck.attempts) == ("queued", 1)
    assert queue_length(worker_queue) == 1
    assert jobs.job_claim(kind, job_id=stuck.pk) == 2  # the next claim fences the dead one


def test_the_sweep_fails_a_row_that_used_every_attempt_and_sends_nothing(
    make_row: Any, job_kind: str, worker_queue: str, settings: Any
) -> None:
    from common import jobs

    settings.GRADLAB_MAX_ATTEMPTS = 2
    kind, stuck = make_row(
        status="running", attempts=2, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert jobs.jobs_sweep(kind).failed == (stuck.pk,)
    stuck.refresh_from_db()
    assert stuck.status == "failed" and stuck.lease_expires_at is None
    reason = stuck.error_message if job_kind == "submission" else stuck.error
    assert "after 2 attempts" in reason
    assert queue_length(worker_queue) == 0


def test_an_instructor_job_lost_after_every_attempt_keeps_no_partial_outcome(
    bob_instructor: Any, settings: Any
) -> None:
    from authoring.jobs import exercise_jobs_sweep

    settings.GRADLAB_MAX_ATTEMPTS = 2
    partial = {"ok": False, "rows": [{"name": "reference: solution.py"}], "pending": 4}
    stuck = _job(bob_instructor, status="running", attempts=2, outcome=partial,
                 lease_expires_at=timezone.now() - timedelta(seconds=1))  # fmt: skip

    assert exercise_jobs_sweep().failed == (stuck.pk,)
    stuck.refresh_from_db()
    assert (stuck.status, stuck.outcome) == ("failed", None)


# -- owners: a claim of a dead process is taken over at once --------------------------


def _dead_owner() -> str:
    """The owner text of a process of this host that has exited (and was reaped)."""
    import subprocess

    from common import owner

    child = subprocess.Popen(["sleep", "30"])
    found = owner.process_start(child.pid)
    assert found is not None
    child.kill()
    child.wait()
    return str(owner.Owner(host=owner.this_host(), pid=child.pid, started=found[1]))


def test_an_owner_is_gone_only_when_its_process_on_this_host_is_provably_dead() -> None:
    from common import owner

    me = owner.current()
    assert not owner.is_gone(str(me))
    assert owner.is_gone(_dead_owner())
    # the same pid, started at another time: the pid was reused by another process
    assert owner.is_gone(str(owner.Owner(host=me.host, pid=me.pid, started=me.started + 1)))
    # another host cannot be checked from here: only its lease ends its claim
    assert not owner.is_gone(str(owner.Owner(host="elsewhere#1", pid=1, started=1)))
    assert not owner.is_gone("") and not owner.is_gone("not/an owner")


def test_a_claim_records_its_owner_process(make_row: Any) -> None:
    from common import jobs, owner

    kind, row = make_row()
    jobs.job_claim(kind, job_id=row.pk)

    row.refresh_from_db()
    assert owner.Owner.parse(row.claimed_by) == owner.current()


def test_a_redelivery_takes_over_a_running_claim_whose_owner_is_dead(make_row: Any) -> None:
    from common import jobs

    kind, row = make_row(status="running", attempts=1, claimed_by=_dead_owner(),
                         lease_expires_at=timezone.now() + timedelta(hours=1))  # fmt: skip

    assert jobs.job_claim(kind, job_id=row.pk) == 2
    assert jobs.job_claim(kind, job_id=row.pk) is None  # the new owner (us) is alive

    row.refresh_from_db()
    assert (row.status, row.attempts) == ("running", 2)


def test_a_redelivery_leaves_a_running_claim_of_a_live_owner_alone(make_row: Any) -> None:
    from common import jobs, owner

    kind, row = make_row(status="running", attempts=1, claimed_by=str(owner.current()),
                         lease_expires_at=timezone.now() + timedelta(hours=1))  # fmt: skip

    assert jobs.job_claim(kind, job_id=row.pk) is None
    row.refresh_from_db()
    assert row.attempts == 1


def test_a_dead_owner_claim_out_of_attempts_is_failed_not_run_again(
    make_row: Any, settings: Any
) -> None:
    from common import jobs

    kind, row = make_row(status="running", attempts=settings.GRADLAB_MAX_ATTEMPTS,
                         claimed_by=_dead_owner(),
                         lease_expires_at=timezone.now() + timedelta(hours=1))  # fmt: skip

    assert jobs.job_claim(kind, job_id=row.pk) is None
    row.refresh_from_db()
    assert row.status == "failed"


def test_the_sweep_requeues_a_running_row_whose_owner_died_before_its_lease_ends(
    make_row: Any, worker_queue: str
) -> None:
    from common import jobs

    kind, row = make_row(status="running", attempts=1, claimed_by=_dead_owner(),
                         lease_expires_at=timezone.now() + timedelta(hours=1))  # fmt: skip

    result = jobs.jobs_sweep(kind)

    assert result.requeued == (row.pk,)
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("queued", 1)  # the next claim counts attempt 2
    assert queue_length(worker_queue) == 1
    assert jobs.jobs_sweep(kind).requeued == ()  # once
