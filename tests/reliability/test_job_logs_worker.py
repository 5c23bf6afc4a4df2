"""A real worker with LOG_FORMAT=json: every line logged while a submission is graded is
one JSON object carrying its submission id, the grading's job id and the Celery task id."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gradlab_fixtures import EXERCISES, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

SLUG = "chain-rule"


def test_every_line_of_a_grading_carries_its_submission_job_and_task_ids(
    start_worker: Any, api: Any, alice_learner: Any
) -> None:
    from submissions.models import Submission

    worker = start_worker(LOG_FORMAT="json", GRADLAB_SANDBOX_WARM="0")
    code = (EXERCISES / SLUG / "solution.py").read_text(encoding="utf-8")
    response = api(alice_learner).post("/api/v1/submissions/", {"exercise": SLUG, "code": code},
                                       format="json")  # fmt: skip
    submission_id = int(response.json()["id"])
    wait_for(lambda: Submission.objects.get(pk=submission_id).status == "graded", what="grading")
    wait_for(lambda: "succeeded" in worker.output(), what="the task's last line")

    lines = [json.loads(line) for line in worker.output().splitlines() if line.startswith("{")]
    of_task = [line for line in lines if line.get("task") == "gradlab.grade_submission"]
    ours = [line for line in of_task if line["logger"].startswith(("submissions", "grader"))]
    assert any(line["message"] == f"submission {submission_id} attempt 1: graded"
               for line in ours)  # fmt: skip
    assert ours, of_task
    for line in ours:
        assert line["submission_id"] == submission_id, line
        assert line["job_id"] == f"submission-{submission_id}-1", line
        assert line["task_id"] and line["level"] and line["timestamp"], line
    task_ids = {line["task_id"] for line in of_task}
    assert len(task_ids) == 1  # one delivery, one task id on all of its lines
    # the worker's own lines are JSON too (ready, task received)
    assert any(line["message"].endswith(" ready.") for line in lines)
