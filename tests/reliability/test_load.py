"""The load test's short form (scripts/loadtest.py): a burst of submissions through a live
server while SIGKILL hits busy pool processes of a real worker; nothing lost, nothing
graded twice. Figures are printed (run with -s), never asserted."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from gradlab_fixtures import EXERCISES, ROOT

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

BURST = 12
KILLS = 3
TIMEOUT_S = 600.0


def test_a_burst_with_pool_processes_killed_loses_nothing_and_grades_nothing_twice(
    start_worker: Any, live_server: Any, alice_learner: Any, settings: Any
) -> None:
    from accounts.services import token_issue

    sys.path.insert(0, str(ROOT / "scripts"))
    import loadtest

    settings.GRADLAB_RATE_LIMIT_COUNT = BURST + 1
    # two pool processes, as `make run`'s worker: the burst kills some of them mid-job
    worker = start_worker(beat=True, concurrency=2, GRADLAB_RECOVERY_SWEEP_SECONDS="2",
                          GRADLAB_SANDBOX_WARM="1")  # fmt: skip
    figures = loadtest.run(
        url=live_server.url, token=token_issue(user=alice_learner), exercise="chain-rule",
        code=(EXERCISES / "chain-rule" / "solution.py").read_text(encoding="utf-8")
        + "\nimport time\ntime.sleep(2)\n",
        count=BURST, kills=KILLS, workers={worker.process.pid}, timeout=TIMEOUT_S,
        check_count=loadtest._checks_of("chain-rule"), worker_logs=[worker.log],
    )  # fmt: skip
    print("load:", figures.as_json())

    assert figures.submitted == BURST
    assert figures.lost == 0
    assert figures.graded_twice == 0
    assert figures.graded + figures.failed == BURST
