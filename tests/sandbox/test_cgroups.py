"""Per-job cgroups (grader/sandbox/cgroups.py) on this host's real cgroup hierarchy."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from gradlab_fixtures import wait_for
from sandbox_helpers import job_prefix

from grader.sandbox import cgroups

pytestmark = pytest.mark.sandbox

MIB = 1024 * 1024
LIMITS = cgroups.JobLimits(memory_bytes=128 * MIB, pids=8, cpus=1.0)


@pytest.fixture
def group() -> Iterator[cgroups.JobCgroup]:
    try:
        made = cgroups.open_job_cgroup(cgroups.job_name(job_prefix()), LIMITS)
    except cgroups.CgroupUnavailable as why:
        pytest.skip(f"no per-job cgroups here: {why}")
    yield made
    made.remove()


def start_in(group: cgroups.JobCgroup, code: str) -> subprocess.Popen[bytes]:
    """A python process that joins `group` before running `code`."""
    join = "".join(f"open({str(f)!r}, 'w').write(str(os.getpid()));" for f in group.join_files())
    return subprocess.Popen([sys.executable, "-c", f"import os;{join}\n{code}"])


def test_a_job_group_reports_the_oom_kill_of_a_process_over_its_memory(
    group: cgroups.JobCgroup,
) -> None:
    hog = start_in(group, "block = bytearray(512 * 1024 * 1024)")
    assert hog.wait(timeout=60) == -9
    assert group.oom_killed()


def test_a_job_group_within_its_memory_reports_no_oom(group: cgroups.JobCgroup) -> None:
    fine = start_in(group, "block = bytearray(16 * 1024 * 1024)")
    assert fine.wait(timeout=60) == 0
    assert not group.oom_killed()


def test_a_job_group_caps_its_processes(group: cgroups.JobCgroup) -> None:
    forker = start_in(
        group,
        "import time\nmade = 0\n"
        "for _ in range(50):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "        made += 1\n"
        "    except OSError:\n"
        "        break\n"
        "raise SystemExit(made)",
    )
    assert forker.wait(timeout=60) < 8
    assert 0 < len(group.pids()) < 8
    assert group.kill_all()
    assert group.pids() == set()


def test_removing_a_group_kills_what_runs_in_it(group: cgroups.JobCgroup) -> None:
    sleeper = start_in(group, "import time\ntime.sleep(600)")
    wait_for(lambda: sleeper.pid in group.pids(), timeout=10, what="the sleeper to join")
    group.remove()
    assert sleeper.wait(timeout=10) == -9
    assert not any(f.parent.exists() for f in group.join_files())


def test_groups_left_by_a_dead_worker_are_reaped() -> None:
    # The group is named after a stand-in worker that lives until the sleeper has joined:
    # until then no janitor (every test process runs them) may touch it.
    worker = subprocess.Popen(["sleep", "600"])
    name = f"{job_prefix()}-{worker.pid}-deadbeef"
    try:
        stale = cgroups.open_job_cgroup(name, LIMITS)
    except cgroups.CgroupUnavailable as why:
        worker.kill()
        pytest.skip(f"no per-job cgroups here: {why}")
    sleeper = start_in(stale, "import time\ntime.sleep(600)")
    try:
        wait_for(lambda: sleeper.pid in stale.pids(), timeout=10, what="the sleeper to join")
        worker.kill()
        worker.wait(timeout=10)  # the worker is gone: its group is stale now
        cgroups.reap_stale()
        # Another test process's janitor may have reaped it first: the groups are gone and
        # what ran in them is killed, whoever removed them.
        assert sleeper.wait(timeout=10) == -9
        wait_for(lambda: not any(f.parent.exists() for f in stale.join_files()), timeout=10,
                 what="the stale group's folders to be removed")  # fmt: skip
    finally:
        worker.kill()
        sleeper.kill()
        stale.remove()


def test_groups_of_live_workers_are_left_alone(group: cgroups.JobCgroup) -> None:
    assert f"-{os.getpid()}-" in group.join_files()[0].parent.name
    assert not {f.parent for f in group.join_files()} & set(cgroups.reap_stale())
    assert all(f.exists() for f in group.join_files())


def test_a_job_group_holds_a_cpu_quota_of_one_cpu(group: cgroups.JobCgroup) -> None:
    quota = group.cpu_quota()
    if quota is None:
        pytest.skip("no cpu controller here")
    assert quota == (cgroups.CPU_PERIOD_US, cgroups.CPU_PERIOD_US)


def test_the_cpu_quota_follows_the_requested_cpus() -> None:
    limits = cgroups.JobLimits(memory_bytes=128 * MIB, pids=8, cpus=0.5)
    try:
        group = cgroups.open_job_cgroup(cgroups.job_name(job_prefix()), limits)
    except cgroups.CgroupUnavailable as why:
        pytest.skip(f"no per-job cgroups here: {why}")
    try:
        quota = group.cpu_quota()
        if quota is None:
            pytest.skip("no cpu controller here")
        assert quota == (cgroups.CPU_PERIOD_US // 2, cgroups.CPU_PERIOD_US)
    finally:
        group.remove()


def test_the_folder_of_the_job_groups_weighs_one_task_per_cpu(group: cgroups.JobCgroup) -> None:
    if group.cpu_quota() is None:
        pytest.skip("no cpu controller here")
    if group.version == "v2":
        weight_file = group.join_files()[0].parent.parent / "cpu.weight"
    else:  # /sys/fs/cgroup/cpu/.../gradlab/<job>/cgroup.procs
        cpu = next(f for f in group.join_files() if f.parts[4] == "cpu")
        weight_file = cpu.parent.parent / "cpu.shares"
    one_task = cgroups.V2_DEFAULT_WEIGHT if group.version == "v2" else cgroups.V1_DEFAULT_SHARES
    assert int(weight_file.read_text()) >= one_task * (os.cpu_count() or 1)


def test_a_renamed_group_keeps_its_processes_and_limits_under_its_new_name(
    group: cgroups.JobCgroup,
) -> None:
    sleeper = start_in(group, "import time\ntime.sleep(600)")
    wait_for(lambda: sleeper.pid in group.pids(), timeout=10, what="the sleeper to join")
    name = cgroups.job_name(job_prefix())
    try:
        renamed = group.renamed(name)
    except OSError as error:  # cgroup v2 cannot rename
        sleeper.kill()
        pytest.skip(f"cgroups cannot be renamed here: {error}")
    assert {f.parent.name for f in renamed.join_files()} == {name}
    assert not any(f.parent.exists() for f in group.join_files())
    assert sleeper.pid in renamed.pids()
    assert renamed.cpu_quota() in (None, (100_000, 100_000))
    renamed.remove()
    assert sleeper.wait(timeout=10) == -9
    assert not any(f.parent.exists() for f in renamed.join_files())
