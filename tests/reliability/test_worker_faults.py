"""Worker faults with a real broker, database, worker processes and sandbox: the main
worker process SIGKILLed mid-job (its pool process is orphaned), one message delivered to
two workers, a sandbox that hangs. Each submission ends graded once, its attempts counted,
and nothing is left running."""

from __future__ import annotations

import os
import signal
import tomllib
from typing import Any

import pytest
from gradlab_fixtures import EXERCISES, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

E2E_SLUG = "chain-rule"
FAST_SWEEP = {"GRADLAB_RECOVERY_SWEEP_SECONDS": "2", "GRADLAB_SANDBOX_WARM": "1"}


def _solution(extra: str = "") -> str:
    return (EXERCISES / E2E_SLUG / "solution.py").read_text(encoding="utf-8") + extra


def _check_count() -> int:
    return len(tomllib.loads((EXERCISES / E2E_SLUG / "exercise.toml").read_text())["checks"])


def _submit(client: Any, code: str) -> int:
    response = client.post("/api/v1/submissions/", {"exercise": E2E_SLUG, "code": code},
                           format="json")  # fmt: skip
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def _row(submission_id: int) -> Any:
    from submissions.models import Submission

    return Submission.objects.get(pk=submission_id)


def _alive(pid: int) -> bool:
    from common.owner import DEAD_STATES, process_start

    found = process_start(pid)
    return found is not None and found[0] not in DEAD_STATES


def test_a_main_worker_killed_mid_job_leaves_its_submission_graded_once(
    start_worker: Any, api: Any, alice_learner: Any
) -> None:
    from common.owner import Owner
    from submissions.models import CheckResult

    client = api(alice_learner)
    first = start_worker(GRADLAB_SANDBOX_WARM="1")
    warm_up = _submit(client, _solution())
    wait_for(lambda: _row(warm_up).status == "graded", what="the first grading")
    submission_id = _submit(client, _solution("\nimport time\ntime.sleep(6)\n"))
    running = wait_for(lambda: _row(submission_id).status == "running" and _row(submission_id),
                       what="the claim")  # fmt: skip
    pool_process = Owner.parse(running.claimed_by)
    assert pool_process is not None

    os.kill(first.process.pid, signal.SIGKILL)  # the main process only
    first.process.wait(timeout=30)
    second = start_worker(beat=True, **FAST_SWEEP)

    graded = wait_for(lambda: _row(submission_id).status == "graded" and _row(submission_id),
                      what="grading after the kill")  # fmt: skip
    assert graded.passed is True
    assert graded.attempts in (1, 2)  # the orphan finished it, or the sweep took it over
    assert CheckResult.objects.filter(submission=graded).count() == _check_count()
    wait_for(lambda: not _alive(pool_process.pid), timeout=60,
             what="the orphaned pool process to exit")  # fmt: skip
    print(f"main worker SIGKILL: graded after {graded.attempts} attempt(s)")
    assert second.process.poll() is None


def test_one_message_delivered_to_two_workers_makes_one_report(
    start_worker: Any, api: Any, alice_learner: Any, worker_queue: str
) -> None:
    from submissions.models import CheckResult
    from submissions.tasks import grade_submission

    workers = [start_worker(GRADLAB_SANDBOX_WARM="1"), start_worker(GRADLAB_SANDBOX_WARM="1")]
    submission_id = _submit(api(alice_learner), _solution("\nimport time\ntime.sleep(2)\n"))
    for _ in range(3):  # the same message again, for whichever worker takes it
        grade_submission.apply_async(args=[submission_id], queue=worker_queue)

    wait_for(lambda: _row(submission_id).status == "graded", what="grading")
    skipped = f"submission {submission_id}: not queued, skipping this delivery"
    wait_for(lambda: sum(w.output().count(skipped) for w in workers) == 3, what="the duplicates")

    row = _row(submission_id)
    assert row.attempts == 1
    assert CheckResult.objects.filter(submission=row).count() == _check_count()


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, grandchildren, ...)."""
    from pathlib import Path

    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def test_a_sandbox_that_hangs_is_killed_and_leaves_no_process(
    start_worker: Any, api: Any, alice_learner: Any
) -> None:
    # cold: the pool's processes are all there at start (a zygote would start beside them)
    worker = start_worker(GRADLAB_SANDBOX_WARM="0", GRADLAB_SANDBOX_ZYGOTE="0")
    pool = set(_descendants(worker.process.pid))
    submission_id = _submit(api(alice_learner), "x = 1\nwhile True:\n    pass\n")

    row = wait_for(
        lambda: _row(submission_id).status in ("graded", "failed") and _row(submission_id),
        what="the hung run to be stopped",
    )

    assert row.status == "graded" and row.passed is False  # the learner's run timed out
    assert "time limit" in row.error_message
    assert row.attempts == 1
    # nothing of the sandbox is left below the worker: only its own pool processes
    wait_for(lambda: set(_descendants(worker.process.pid)) <= pool, timeout=60,
             what="the sandbox's processes to be gone")  # fmt: skip
