"""Submit -> graded through the real path: PostgreSQL, Redis, a real Celery worker process
(never eager mode) and the real bubblewrap sandbox; no part of the grader is mocked."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from gradlab_fixtures import wait_for
from platform_helpers import E2E_SLUG, manifest, package_file

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

URL = "/api/v1/submissions/"


def _submit(client: Any, code: str, **headers: Any) -> dict[str, Any]:
    response = client.post(URL, {"exercise": E2E_SLUG, "code": code}, format="json", **headers)
    assert response.status_code == 201, response.content
    return response.json()


def _finished(client: Any, url: str) -> dict[str, Any] | None:
    body = client.get(url).json()
    return body if body["status"] in ("graded", "failed") else None


def _row(submission_id: int) -> Any:
    from submissions.models import Submission

    return Submission.objects.get(pk=submission_id)


def test_reference_solution_is_graded_by_a_real_worker_with_per_check_results(
    grading_worker: Any, api: Any, alice_learner: Any
) -> None:
    client = api(alice_learner)
    created = _submit(client, package_file(E2E_SLUG, "solution.py"))

    body = wait_for(lambda: _finished(client, created["url"]), what="grading")

    checks = manifest(E2E_SLUG)["checks"]
    assert body["status"] == "graded"
    assert body["passed"] is True
    assert body["score"] == body["max_score"] == manifest(E2E_SLUG)["points"]
    assert [c["name"] for c in body["checks"]] == [c["name"] for c in checks]
    assert all(c["passed"] and c["diagnosis"] == "" for c in body["checks"])
    assert body["graded_at"] is not None
    assert _row(created["id"]).attempts == 1


def test_wrong_solution_is_graded_not_passed_with_its_named_diagnosis(
    grading_worker: Any, api: Any, alice_learner: Any
) -> None:
    client = api(alice_learner)
    wrong = next(w for w in manifest(E2E_SLUG)["wrong"] if w["diagnosis"] == "hard-coded")
    created = _submit(client, package_file(E2E_SLUG, wrong["file"]))

    body = wait_for(lambda: _finished(client, created["url"]), what="grading")

    assert body["status"] == "graded"
    assert body["passed"] is False
    assert body["score"] < body["max_score"]
    failed = [c for c in body["checks"] if not c["passed"]]
    assert failed and all(c["diagnosis"] == "hard-coded" for c in failed)
    assert all(c["message"] for c in failed)


def test_the_same_task_delivered_twice_makes_exactly_one_report(
    grading_worker: Any, api: Any, alice_learner: Any
) -> None:
    from submissions.models import CheckResult
    from submissions.tasks import grade_submission

    worker = grading_worker
    created = _submit(api(alice_learner), package_file(E2E_SLUG, "solution.py"))
    grade_submission.apply_async(args=[created["id"]], queue=worker.queue)  # the duplicate

    wait_for(lambda: _row(created["id"]).status == "graded", what="grading")
    wait_for(lambda: "skipping this delivery" in worker.output(), what="the duplicate")

    row = _row(created["id"])
    assert row.attempts == 1
    assert CheckResult.objects.filter(submission=row).count() == len(manifest(E2E_SLUG)["checks"])
    assert worker.output().count(f"submission {created['id']}: not queued") == 1


def test_a_worker_killed_mid_grading_still_gets_the_submission_graded_once(
    start_worker: Any, api: Any, alice_learner: Any
) -> None:
    from submissions.models import CheckResult

    # The lease must outlast one grading (sandbox start, reference run, learner run).
    lease = {"GRADLAB_RUNNING_LEASE_SECONDS": "25", "GRADLAB_RECOVERY_SWEEP_SECONDS": "1"}
    first = start_worker(**lease)
    # A correct solution that takes a while, so that the kill lands mid-grading.
    code = package_file(E2E_SLUG, "solution.py") + "\nimport time\ntime.sleep(4)\n"
    created = _submit(api(alice_learner), code)
    wait_for(lambda: _row(created["id"]).status == "running", what="the claim")
    time.sleep(1.0)

    first.kill(signal.SIGKILL)
    assert _row(created["id"]).status == "running"  # lost with its worker
    second = start_worker(beat=True, **lease)  # its beat runs the sweep every second

    wait_for(lambda: _row(created["id"]).status == "graded", what="sweep + regrading")

    row = _row(created["id"])
    assert row.passed is True
    assert row.attempts >= 2  # 2, unless a slow machine also outlived the second lease
    assert CheckResult.objects.filter(submission=row).count() == len(manifest(E2E_SLUG)["checks"])
    # its claim's owner (a pool process of the killed worker) is gone: no wait for the lease
    assert "re-queued: lease expired or owner gone" in second.logged("re-queued")


def test_an_infrastructure_fault_is_retried_then_failed_clearly_and_not_charged(
    start_worker: Any, api: Any, alice_learner: Any, settings: Any
) -> None:
    from submissions.models import CheckResult

    worker = start_worker(
        GRADLAB_SANDBOX_RUNTIME="/nonexistent/sandbox-runtime",
        GRADLAB_MAX_ATTEMPTS="3",
    )
    settings.GRADLAB_RATE_LIMIT_COUNT = 1
    client = api(alice_learner)
    created = _submit(client, package_file(E2E_SLUG, "solution.py"))

    body = wait_for(lambda: _finished(client, created["url"]), what="the retries")

    assert body["status"] == "failed"
    assert body["score"] is None and body["passed"] is None
    assert body["checks"] == []
    assert "fault on our side" in body["message"]
    assert "does not count against you" in body["message"]
    assert "/nonexistent" not in body["message"]  # internals stay in the worker's log
    assert _row(created["id"]).attempts == 3
    assert worker.logged("infrastructure fault", count=3).count("infrastructure fault") == 3
    assert not CheckResult.objects.filter(submission_id=created["id"]).exists()
    # Not charged: the failed submission does not use up the learner's rate limit.
    assert (
        client.post(URL, {"exercise": E2E_SLUG, "code": "x = 1"}, format="json").status_code == 201
    )


def test_a_submission_that_reaches_for_the_harness_is_held_for_review_by_a_real_worker(
    grading_worker: Any, api: Any, alice_learner: Any, bob_instructor: Any
) -> None:
    """The harness's audit hook sees a targeted walk through gc (what refers to an object:
    the way to the harness's frames and records); the platform holds the score. (A plain
    gc.get_objects(), as an honest leak check counts tensors, is not tampering.)"""
    client = api(alice_learner)
    tampering = package_file(E2E_SLUG, "solution.py") + "\nimport gc\ngc.get_referrers(gc)\n"
    created = _submit(client, tampering)

    body = wait_for(lambda: _finished(client, created["url"]), what="grading")

    assert body["status"] == "graded" and body["held_for_review"] is True
    assert body["score"] is None and body["passed"] is None and body["checks"] == []
    told = json.dumps(body)
    assert "tamper" not in told and "get_objects" not in told  # the learner is not told why
    row = _row(created["id"])
    assert row.review == "held" and row.score is None
    assert any(flag["kind"] == "tamper" for flag in row.report["integrity_flags"])
    seen_by_instructor = api(bob_instructor).get(created["url"]).json()
    assert seen_by_instructor["held_for_review"] is True and seen_by_instructor["checks"]


def test_a_worker_in_zygote_mode_grades_right_and_wrong_through_its_processes_zygotes(
    grading_worker: Any, api: Any, alice_learner: Any
) -> None:
    worker = grading_worker
    client = api(alice_learner)
    wrong = next(w for w in manifest(E2E_SLUG)["wrong"] if w["diagnosis"] == "hard-coded")
    right = _submit(client, package_file(E2E_SLUG, "solution.py"))
    hard_coded = _submit(client, package_file(E2E_SLUG, wrong["file"]))

    graded = [
        wait_for(lambda s=s: _finished(client, s["url"]), what="grading")
        for s in (right, hard_coded)
    ]

    assert graded[0]["status"] == "graded" and graded[0]["passed"] is True
    assert graded[0]["score"] == graded[0]["max_score"]
    assert graded[1]["status"] == "graded" and graded[1]["passed"] is False
    assert {c["diagnosis"] for c in graded[1]["checks"] if not c["passed"]} == {"hard-coded"}
    children = _children_of(worker.process.pid)
    assert children and children <= _zygote_owners(), "each worker process keeps a zygote"


# Printed by the learner's code: its interpreter's str hash secret, which a zygote's
# fork inherits from the zygote (the cold path's fresh interpreter draws its own).
PRINT_HASH_SECRET = '\nprint("hash secret:", hash("gradlab"))\n'


def test_with_the_products_zygote_default_each_submission_runs_in_a_zygote_of_its_own(
    start_worker: Any, api: Any, alice_learner: Any
) -> None:
    """GRADLAB_ZYGOTE_JOBS=1, as `make run` and a deployment start it (the test settings
    share a zygote across 500 jobs): two submissions are each graded right, and each is
    forked by a zygote generation of its own (their hash secrets differ)."""
    start_worker(GRADLAB_ZYGOTE_JOBS="1")
    client = api(alice_learner)
    code = package_file(E2E_SLUG, "solution.py") + PRINT_HASH_SECRET
    created = [_submit(client, code) for _ in range(2)]

    graded = [wait_for(lambda s=s: _finished(client, s["url"]), what="grading") for s in created]

    assert all(body["status"] == "graded" and body["passed"] is True for body in graded)
    printed = [_row(s["id"]).report["stdout"] for s in created]
    secrets = [text.split("hash secret:")[1].split()[0] for text in printed]
    assert secrets[0] != secrets[1], printed


def _children_of(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in status:
            found.add(int(entry.name))
    return found


def _zygote_owners() -> set[int]:
    """The worker pids named by the zygote cgroups that exist now (cgroups.job_name)."""
    roots = [Path("/sys/fs/cgroup/pids/gradlab"), Path("/sys/fs/cgroup/gradlab")]
    names = [group.name for root in roots if root.is_dir() for group in root.glob("zygote-*")]
    return {int(name.split("-")[1]) for name in names}
