"""The zygote slot's generations (grader/sandbox/zygote.py, ZygoteSlot): the next zygote is
started ahead, as soon as the serving one has taken its last job, and stopping the slot
ends it whether it is still starting or ready. These drive the slot with stand-in zygotes
(a control socket whose "R" the test sends), no sandbox: the real zygotes' generations are
tests/sandbox/test_cross_job_isolation.py's (each job its own hash secret and layout) and
test_bubblewrap_zygote.py's (the job quota)."""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from pathlib import Path

from grader.sandbox import zygote as zygotes

IDENTITY = zygotes.ZygoteIdentity(Path("/harness"), ("runtime",), 1000)
WAIT_S = 60.0  # generous: every wait below ends on an event long before
_PIDS = itertools.count(10_000)


class StandIn:
    """What runs a stand-in zygote: alive until killed; its "R" is sent when the test
    says (`ready`), or at once when it was started so."""

    def __init__(self) -> None:
        self.ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.killed = threading.Event()
        self._pid = next(_PIDS)

    @property
    def pid(self) -> int | None:
        return self._pid

    def running(self) -> bool:
        return not self.killed.is_set()

    def ready(self) -> None:
        self.theirs.send(b"R")

    def kill(self) -> None:
        self.killed.set()
        with contextlib.suppress(OSError):
            self.theirs.close()  # as a dead zygote's end of the control socket

    def diagnostics(self) -> str:
        return ""


class Starts:
    """A slot's `start`: each call a stand-in zygote, ready at once, but for the calls
    from the `held`-th on (counting from 0), whose "R" the test sends."""

    def __init__(self, *, held: int | None = None) -> None:
        self.held = held
        self.hosts: list[StandIn] = []
        self.started = threading.Semaphore(0)  # released once per start

    def __call__(self, identity: zygotes.ZygoteIdentity) -> zygotes.Zygote:
        host = StandIn()
        self.hosts.append(host)
        if self.held is None or len(self.hosts) <= self.held:
            host.ready()
        self.started.release()
        return zygotes.Zygote(host, host.ours, None, identity)


def test_the_next_generation_starts_when_a_job_takes_the_last_turn_and_is_ready_unasked() -> None:
    start = Starts()
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    try:
        serving = slot.ready(IDENTITY)
        assert serving is not None
        spare = slot.spare_pid(WAIT_S)  # no second job asked for it
        assert spare is not None and spare != serving.host.pid
        assert [host.pid for host in start.hosts] == [serving.host.pid, spare]
    finally:
        slot.stop()


def test_the_next_job_is_served_by_the_spare_and_starts_the_generation_after_it() -> None:
    start = Starts()
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    try:
        first = slot.ready(IDENTITY)
        spare = slot.spare_pid(WAIT_S)
        second = slot.ready(IDENTITY)
        assert first is not None and second is not None
        assert second.host.pid == spare
        assert slot.generations == 3  # the third: the next spare, starting
        assert all(start.started.acquire(timeout=WAIT_S) for _ in range(3))
    finally:
        slot.stop()


def test_a_job_arriving_while_the_spare_starts_waits_for_that_spare() -> None:
    start = Starts(held=1)  # the spare sends "R" only when told
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    try:
        assert slot.ready(IDENTITY) is not None
        assert start.started.acquire(timeout=WAIT_S) and start.started.acquire(timeout=WAIT_S)
        taken: list[zygotes.Zygote | None] = []
        job = threading.Thread(target=lambda: taken.append(slot.ready(IDENTITY)))
        job.start()
        start.hosts[1].ready()
        job.join(WAIT_S)
        assert taken and taken[0] is not None
        assert taken[0].host is start.hosts[1]  # not a zygote started for the job
    finally:
        slot.stop()


def test_stopping_the_slot_ends_a_spare_still_starting() -> None:
    start = Starts(held=1)
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    assert slot.ready(IDENTITY) is not None
    assert start.started.acquire(timeout=WAIT_S) and start.started.acquire(timeout=WAIT_S)
    slot.stop()  # the spare awaits its "R", which never comes
    assert all(host.killed.is_set() for host in start.hosts)
    assert slot.spare_pid() is None


def test_stopping_the_slot_ends_a_ready_spare() -> None:
    start = Starts()
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    assert slot.ready(IDENTITY) is not None
    assert slot.spare_pid(WAIT_S) is not None
    slot.stop()
    assert len(start.hosts) == 2
    assert all(host.killed.is_set() for host in start.hosts)


def test_a_worn_out_zygote_is_stopped_only_once_its_running_job_is_done() -> None:
    """Two jobs at once, one job per zygote: the second is served by the spare, and the
    first zygote, whose job still runs (it would end with its zygote), stays until the
    first job's result is in."""
    start = Starts()
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    try:
        first = slot.ready(IDENTITY)
        second = slot.ready(IDENTITY)
        assert first is not None and second is not None and second is not first
        assert first.alive()
        slot._release(first)  # the first job's result is in (ZygoteSlot.run does this)
        zygotes.await_job_ends(WAIT_S)
        assert start.hosts[0].killed.is_set()
        assert not start.hosts[1].killed.is_set()  # the second job's, still running
    finally:
        slot.stop()


def test_a_spare_that_fails_to_start_leaves_jobs_cold_for_a_while() -> None:
    start = Starts(held=1)
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    try:
        assert slot.ready(IDENTITY) is not None
        assert start.started.acquire(timeout=WAIT_S) and start.started.acquire(timeout=WAIT_S)
        start.hosts[1].kill()  # it dies before "R"
        assert slot.ready(IDENTITY) is None  # this job runs cold, as after a failed start
        assert slot.ready(IDENTITY) is None  # and so do the next, for RETRY_S
        assert len(start.hosts) == 2
    finally:
        slot.stop()


def test_the_runs_of_one_submission_share_a_generation_and_the_next_submission_gets_its_own() -> (
    None
):
    start = Starts()
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    try:
        first = slot.ready(IDENTITY, share="submission-1")
        second = slot.ready(IDENTITY, share="submission-1")  # its second run
        other = slot.ready(IDENTITY, share="submission-2")
        unkeyed = slot.ready(IDENTITY)
        assert first is not None and second is not None
        assert other is not None and unkeyed is not None
        assert second is first
        assert other is not first and unkeyed is not other
        assert len({first.host.pid, other.host.pid, unkeyed.host.pid}) == 3
    finally:
        slot.stop()


def test_a_share_key_is_served_by_one_generation_for_a_bounded_number_of_jobs() -> None:
    start = Starts()
    slot = zygotes.ZygoteSlot(start, max_jobs=1)
    try:
        served = [slot.ready(IDENTITY, share="reference") for _ in range(zygotes.SHARED_JOBS + 2)]
        hosts = [zygote.host for zygote in served if zygote is not None]
        assert len(hosts) == zygotes.SHARED_JOBS + 2
        assert len(set(map(id, hosts[: zygotes.SHARED_JOBS + 1]))) == 1
        assert hosts[-1] is not hosts[0]
    finally:
        slot.stop()
