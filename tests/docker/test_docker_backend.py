"""The Docker backend end to end against the real Engine: grading, limits, janitor,
and the infrastructure errors the platform retries."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from docker_helpers import (
    ROOT,
    containers_of_job,
    engine_client,
    labelled_sandbox,
    left_after_reaping,
    request,
)

from grader.cache import ReferenceCache
from grader.engine import GradeJob, grade
from grader.protocol import InfrastructureError, RunStatus
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.docker import (
    LABEL_ROLE,
    LABEL_WORKER,
    ROLE_ZYGOTE,
    DockerSandbox,
    reap_expired,
    remove_container,
)
from grader.spec import load_package

EXERCISES = ROOT / "exercises"
# Janitors started at once, on this many expired containers.
JANITOR_RACE_WORKERS = 4
JANITOR_RACE_CONTAINERS = 6

pytestmark = pytest.mark.docker


def test_build_backend_docker_gives_the_docker_sandbox(sandbox_image: str) -> None:
    backend = build_backend(SandboxConfig(backend="docker", image=sandbox_image))
    assert isinstance(backend, DockerSandbox)
    assert backend.runtime_key("cpu").startswith("docker ")


def test_the_reference_passes_and_a_wrong_solution_is_diagnosed_through_docker(
    docker_sandbox: DockerSandbox, tmp_path: Path
) -> None:
    package = load_package(EXERCISES / "first-gradient")
    cache = ReferenceCache(tmp_path)
    reference = grade(GradeJob(package, package.solution), sandbox=docker_sandbox, cache=cache)
    assert reference.status == "graded" and reference.passed, reference
    assert reference.score == reference.max_score
    assert reference.runtime.startswith("docker ")

    wrong = package.files["wrong/sign-error.py"]
    report = grade(GradeJob(package, wrong), sandbox=docker_sandbox, cache=cache)
    assert report.status == "graded" and not report.passed
    assert "sign-error" in {check.diagnosis for check in report.checks}
    assert list(tmp_path.glob("*.json")), "the reference capture was not cached"


def test_an_infinite_loop_is_killed_at_the_wall_clock_limit(
    docker_client: Any, docker_sandbox: DockerSandbox
) -> None:
    # the CPU limit far above the wall clock: the message says the wall clock ended it
    job = request("while True:\n    pass\n", wall_seconds=3, cpu_seconds=600)
    result = docker_sandbox.run(job)
    assert result.status == RunStatus.TIMEOUT
    assert result.message == "time limit of 3 s exceeded"
    assert result.duration_s >= 3
    assert containers_of_job(docker_client, job.job_id) == []


def test_allocating_past_the_memory_limit_is_reported_as_memory(
    docker_client: Any, docker_sandbox: DockerSandbox
) -> None:
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024 * 1024))\n"
    job = request(code, memory_mb=300, wall_seconds=60)
    result = docker_sandbox.run(job)
    assert result.status == RunStatus.MEMORY, result
    assert "memory limit of 300 MB" in result.message
    assert containers_of_job(docker_client, job.job_id) == []


def test_a_fork_bomb_stays_within_the_pids_limit(docker_sandbox: DockerSandbox) -> None:
    code = (
        "import os\n"
        "count = 0\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            import time; time.sleep(5); os._exit(0)\n"
        "        count += 1\n"
        "    except OSError:\n"
        "        break\n"
        "x = count\n"
    )
    result = docker_sandbox.run(request(code, pids=32, wall_seconds=60))
    assert result.status == RunStatus.OK, result
    assert b'"x":{"kind":"number","value":' in result.stdout
    forked = int(result.stdout.split(b'"x":{"kind":"number","value":')[1].split(b"}")[0])
    assert forked < 32


def test_the_janitor_removes_only_containers_past_their_deadline(
    docker_client: Any, sandbox_image: str
) -> None:
    now = time.time()
    expired = labelled_sandbox(docker_client, sandbox_image, "test-janitor-expired", now - 5)
    current = labelled_sandbox(docker_client, sandbox_image, "test-janitor-current", now + 600)
    try:
        removed = reap_expired(docker_client)
        # The expired one is gone: removed by this janitor or, rarely, by one of another
        # test process that was faster (each Docker backend runs one now and then), whose
        # removal may still be under way when this pass ends (left_after_reaping). Never
        # ask a janitor as of a later moment here: it would remove other tests' running
        # sandboxes (it did once, mid-run).
        assert left_after_reaping(docker_client, "test-janitor-expired") == []
        assert current.name not in removed
        assert len(containers_of_job(docker_client, "test-janitor-current")) == 1
    finally:
        for container in (expired, current):
            if container is not None:
                remove_container(container)  # gone or going: another janitor's


def test_janitors_of_several_workers_at_once_remove_every_expired_container_and_none_fails(
    docker_client: Any, sandbox_image: str
) -> None:
    """Every worker's backend runs the janitor now and then, so two often reap the same
    container: the later one finds it gone (even between the Engine's list and the SDK's
    look at each container), or its removal under way (409 Conflict), and moves on; it
    never fails the grading that ran it (it did once, mid-run). Which janitor reports a
    container removed is the Engine's answer, not ours: two removals that overlap can both
    be answered 204 (a fresh rehearsal saw 9 reports for 6 containers), so only the end is
    asserted: every expired container gone, no janitor failed."""
    job = f"test-janitors-race-{time.time_ns()}"
    deadline = time.time() - 5
    expired = [
        labelled_sandbox(docker_client, sandbox_image, job, deadline)
        for _ in range(JANITOR_RACE_CONTAINERS)
    ]
    clients = [engine_client() for _ in range(JANITOR_RACE_WORKERS)]
    start = threading.Barrier(len(clients))

    def janitor(client: Any) -> list[str]:
        start.wait()
        return reap_expired(client)

    try:
        with ThreadPoolExecutor(len(clients)) as pool:
            list(pool.map(janitor, clients))  # re-raises a janitor's error
        assert left_after_reaping(docker_client, job) == []
    finally:
        for client in clients:
            client.close()
        for container in filter(None, expired):
            remove_container(container)  # gone or going: another janitor's


# A worker process that starts its zygote container and dies without any clean-up.
DYING_WORKER = """
import os, sys
from grader.sandbox.docker import DockerSandbox
sandbox = DockerSandbox(image=sys.argv[1], zygote=True)
sandbox.prepare()
print(os.getpid(), flush=True)
os._exit(0)
"""
EXIT_WAIT_S = 30.0


def test_the_zygote_container_of_a_dead_worker_exits_and_the_janitor_removes_it(
    docker_client: Any, sandbox_image: str, docker_zygote: DockerSandbox
) -> None:
    docker_zygote.prepare()  # a live worker's zygote: it must survive the janitor
    done = subprocess.run(
        [sys.executable, "-c", DYING_WORKER, sandbox_image],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=True,
    )  # fmt: skip
    worker = f":{done.stdout.strip()}"
    label = {"label": f"{LABEL_ROLE}={ROLE_ZYGOTE}"}

    def of_dead_worker() -> list[Any]:
        found = docker_client.containers.list(all=True, filters=label, ignore_removed=True)
        return [c for c in found if c.labels[LABEL_WORKER].endswith(worker)]

    # Exited: it saw its socket close. Or already gone: a janitor of another test process
    # was faster, and a janitor removes a zygote container only once it has exited.
    ended = (["exited"], [])
    deadline = time.monotonic() + EXIT_WAIT_S
    while [c.status for c in of_dead_worker()] not in ended and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [c.status for c in of_dead_worker()] in ended
    reap_expired(docker_client)
    # Gone, or going: another test process's janitor may have begun its removal first, and
    # a pass leaves a removal in progress to the one that began it (409 from the Engine).
    while of_dead_worker() and time.monotonic() < deadline:
        time.sleep(0.2)
        reap_expired(docker_client)
    assert of_dead_worker() == []
    assert docker_zygote.zygote_pid() in {
        c.attrs["State"]["Pid"]
        for c in docker_client.containers.list(filters=label, ignore_removed=True)
    }


def test_a_missing_sandbox_image_is_an_infrastructure_error(docker_client: Any) -> None:
    sandbox = DockerSandbox(image="gradlab-sandbox:no-such-tag", gpu=False)
    with pytest.raises(InfrastructureError, match=r"build-sandbox-image\.sh"):
        sandbox.run(request("x = 1\n"))


def test_an_unreachable_engine_is_an_infrastructure_error(tmp_path: Path) -> None:
    sandbox = DockerSandbox(base_url=f"unix://{tmp_path}/no-docker.sock", gpu=False)
    with pytest.raises(InfrastructureError, match="Docker Engine"):
        sandbox.run(request("x = 1\n"))
