"""Recovery in seconds with a real worker, broker, database and sandbox: a pool process
killed mid-job has its submission graded again at once (the redelivered message takes
over the claim of the dead process), exactly once, with its attempts counted."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest
from gradlab_fixtures import wait_for
from platform_helpers import E2E_SLUG, manifest, package_file

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

SLOW_SOLUTION_SLEEP_S = 6  # long enough for the kill to land mid-grading


def _row(submission_id: int) -> Any:
    from submissions.models import Submission

    return Submission.objects.get(pk=submission_id)


def _submit(client: Any, code: str) -> dict[str, Any]:
    response = client.post("/api/v1/submissions/", {"exercise": E2E_SLUG, "code": code},
                           format="json")  # fmt: skip
    assert response.status_code == 201, response.content
    return dict(response.json())


def test_a_killed_pool_process_has_its_submission_graded_again_at_once_and_only_once(
    start_worker: Any, api: Any, alice_learner: Any
) -> None:
    from common.owner import Owner
    from submissions.models import CheckResult

    # No beat and the default 240 s lease: only the redelivery can recover it quickly.
    # Warm sandboxes (torch imported before the job arrives): a loaded host's cold start
    # would not eat the exercise's wall clock.
    # two pool processes, as `make run`'s worker: the test kills one of them
    worker = start_worker(concurrency=2, GRADLAB_SANDBOX_WARM="1")
    client = api(alice_learner)
    # A first grading computes the exercise's reference: the kill then lands in the
    # learner's run, and the second attempt does the same work as the first.
    warm_up = _submit(client, package_file(E2E_SLUG, "solution.py"))
    wait_for(lambda: _row(warm_up["id"]).status == "graded", what="the first grading")
    slow = f"\nimport time\ntime.sleep({SLOW_SOLUTION_SLEEP_S})\n"
    created = _submit(client, package_file(E2E_SLUG, "solution.py") + slow)
    running = wait_for(lambda: _row(created["id"]).status == "running" and _row(created["id"]),
                       what="the first claim")  # fmt: skip
    owner = Owner.parse(running.claimed_by)
    assert owner is not None and owner.pid != worker.process.pid  # a pool process

    killed_at = time.time()
    os.kill(owner.pid, signal.SIGKILL)
    retaken = wait_for(lambda: _row(created["id"]).attempts == 2 and _row(created["id"]),
                       timeout=60, what="the redelivery to take the claim over")  # fmt: skip
    print(f"recovery: attempt 2 claimed {retaken.started_at.timestamp() - killed_at:.1f} s "
          "after the SIGKILL")  # fmt: skip
    row = wait_for(lambda: _row(created["id"]).status == "graded" and _row(created["id"]),
                   what="the second grading")  # fmt: skip

    assert row.passed is True and row.attempts == 2
    assert Owner.parse(row.claimed_by) != owner
    checks = CheckResult.objects.filter(submission=row)
    assert checks.count() == len(manifest(E2E_SLUG)["checks"])  # one report, not two
    worker.logged(f"owner {running.claimed_by} is gone; taken over as attempt 2")
