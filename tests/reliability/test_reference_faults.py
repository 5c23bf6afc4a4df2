"""A reference run stopped by load (its wall clock ran out while it was starved of CPU, or
something outside killed it) is an infrastructure fault: retried with backoff, graded
in the end, the learner not charged. A genuinely broken reference (it raises, or it
computes past its CPU limit) is still "exercise broken" at once. Real PostgreSQL, Redis,
worker processes and bubblewrap sandboxes; the load is made by freezing (SIGSTOP) or
killing the reference's sandbox processes from outside, as an overloaded host would."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from gradlab_fixtures import EXERCISES, wait_for

from grader.protocol import Limits

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

SLUG = "chain-rule"
PROC = Path("/proc")
FINAL = ("graded", "failed")


# The starved reference has the product's own limits, which the learner's run and the
# retry's cold reference also get: a frozen run waits all of its wall clock out, and a
# run that only has to finish is never held to a guess of the host's speed.
WALL_S = f"{Limits().wall_seconds:g}"


def _set_reference(*, limits: str, solution: str | None = None) -> None:
    """The current version of SLUG with these limits (and this reference solution)."""
    from courses.models import Exercise, ExerciseVersion

    exercise = Exercise.objects.get(slug=SLUG)
    files = dict(exercise.current_version.files)
    if limits:
        files["exercise.toml"] += f"\n[limits]\n{limits}\n"
    if solution is not None:
        files["solution.py"] = solution
    ExerciseVersion.objects.filter(pk=exercise.current_version_id).update(files=files)


@pytest.fixture
def cold_worker(start_worker: Any, tmp_path: Path) -> Any:
    """start_worker() -> a worker with cold sandboxes and an empty reference cache of its
    own: the first sandbox it starts is the reference's."""
    cache = tmp_path / "empty-reference-cache"
    return lambda: start_worker(
        GRADLAB_SANDBOX_WARM="0", GRADLAB_SANDBOX_ZYGOTE="0", GRADLAB_CACHE_DIR=str(cache)
    )


def _submit(client: Any) -> int:
    code = (EXERCISES / SLUG / "solution.py").read_text(encoding="utf-8")
    response = client.post("/api/v1/submissions/", {"exercise": SLUG, "code": code},
                           format="json")  # fmt: skip
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def _row(submission_id: int) -> Any:
    from submissions.models import Submission

    return Submission.objects.get(pk=submission_id)


def _finished(submission_id: int) -> Any:
    row = _row(submission_id)
    return row if row.status in FINAL else None


def _sandbox_processes(worker_pid: int) -> list[int]:
    """Live processes of the sandboxes below the worker: each bwrap (or the setpriv that
    becomes it) and everything below it; not the worker's own helpers (ldd, ...)."""
    parents: dict[int, int] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] not in ("Z", "X"):
                parents[int(entry.name)] = int(fields[1])
    below, frontier = [], [worker_pid]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        below += frontier
    sandbox = [pid for pid in below if _program(pid) in (b"bwrap", b"setpriv")]
    while True:
        more = [pid for pid, parent in parents.items() if parent in sandbox and pid not in sandbox]
        if not more:
            return sandbox
        sandbox += more


def _program(pid: int) -> bytes:
    return _cmdline(pid).split(b"\0", 1)[0].rsplit(b"/", 1)[-1]


def _cmdline(pid: int) -> bytes:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _signal_first_sandbox(worker_pid: int, sig: int, *, for_s: float) -> int:
    """Waits for the first sandbox below the worker (the reference's: the reference cache
    is empty) and sends `sig` to each of its processes, again for `for_s` seconds (the
    harness forks after it starts). Returns how many processes got it."""
    first = wait_for(lambda: _sandbox_processes(worker_pid), timeout=90, what="a sandbox")
    hit: set[int] = set()
    deadline = time.monotonic() + for_s
    pids = first
    while True:
        for pid in pids:
            if pid not in hit:
                try:
                    os.kill(pid, sig)
                    hit.add(pid)
                except ProcessLookupError:
                    pass
        if time.monotonic() > deadline:
            return len(hit)
        time.sleep(0.05)
        pids = _sandbox_processes(worker_pid)


def test_a_reference_starved_past_its_wall_clock_is_retried_and_graded_not_exercise_broken(
    cold_worker: Any, api: Any, alice_learner: Any
) -> None:
    worker = cold_worker()
    submission_id = _submit(api(alice_learner))

    # Frozen: its processes get no CPU at all, as on a host far beyond its cores.
    assert _signal_first_sandbox(worker.process.pid, signal.SIGSTOP, for_s=1.5) > 0

    row = wait_for(lambda: _finished(submission_id), what="the retry after the starved run")
    assert row.status == "graded" and row.passed is True, (row.error_message, worker.tail())
    # 2, unless the retry's cold reference also ran out of its wall clock on a loaded host (3,
    # GRADLAB_MAX_ATTEMPTS): a fault of ours each time, never "broken"
    assert row.attempts >= 2
    log = worker.logged("infrastructure fault")
    # The freeze lands while the reference runs or while bubblewrap still sets it up (then
    # the wall clock's kill ends the setup: "could not set up the sandbox (exit -9)"):
    # either way a fault of ours, retried, and never "broken".
    stopped = (
        f"ran out of its {WALL_S} s wall clock before its CPU time",
        "could not set up the sandbox",
    )
    assert any(text in log for text in stopped), log
    assert "infrastructure fault" in log and "is broken" not in log


def test_a_reference_killed_from_outside_is_retried_and_graded_not_exercise_broken(
    cold_worker: Any, api: Any, alice_learner: Any
) -> None:
    worker = cold_worker()
    submission_id = _submit(api(alice_learner))

    assert _signal_first_sandbox(worker.process.pid, signal.SIGKILL, for_s=0.5) > 0

    row = wait_for(lambda: _finished(submission_id), what="the retry after the killed run")
    assert row.status == "graded" and row.passed is True, (row.error_message, worker.tail())
    assert row.attempts >= 2  # as above
    log = worker.logged("infrastructure fault")
    # The kill lands while the reference runs or while bubblewrap still sets it up (an
    # InfrastructureError): either way a fault of ours, retried, and never "broken".
    killed = ("was killed (SIGKILL) from outside the sandbox", "could not set up the sandbox")
    assert any(text in log for text in killed), log
    assert "infrastructure fault" in log and "is broken" not in log


@pytest.mark.parametrize(
    ("limits", "solution", "logged"),
    [
        # the product's own limits: the reference only has to fail
        ("", "raise ValueError('reference bug')\n", ("reference bug",)),
        # its loop must reach the CPU limit (SIGXCPU) before the wall clock, however little
        # CPU a loaded host gives it: a wall clock 15 times the CPU limit. RLIMIT_CPU is per
        # process: the loop's process gets SIGXCPU ("killed by signal 24", as the harness's
        # trusted parent reports it) unless the parent itself spends the 4 s first, importing
        # torch (about 2 s of CPU on a quiet host, more on a slow hour: a CI run saw it), and
        # then the sandbox reports the limit: the same verdict, either way broken at once.
        (
            "cpu_seconds = 4\nwall_seconds = 60",
            "while True:\n    pass\n",
            ("killed by signal 24", "CPU time limit of 4 s exceeded"),
        ),
    ],
    ids=["raises", "computes-past-its-cpu-limit"],
)
def test_a_genuinely_broken_reference_is_still_exercise_broken_at_once(
    cold_worker: Any,
    api: Any,
    alice_learner: Any,
    limits: str,
    solution: str,
    logged: tuple[str, ...],
) -> None:
    from submissions.services import MESSAGE_EXERCISE

    _set_reference(limits=limits, solution=solution)
    worker = cold_worker()
    submission_id = _submit(api(alice_learner))

    row = wait_for(lambda: _finished(submission_id), what="the broken reference's verdict")
    assert row.status == "failed"
    assert row.error_message == MESSAGE_EXERCISE
    assert row.attempts == 1  # not retried
    assert row.score is None and row.passed is None  # not charged
    log = worker.logged("is broken")
    assert any(text in log for text in logged), worker.tail()
