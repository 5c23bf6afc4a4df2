"""The periodic task that removes sandbox containers orphaned by a dead worker."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from docker_helpers import labelled_sandbox, left_after_reaping

from grader.sandbox.docker import (
    remove_container,
)

pytestmark = pytest.mark.docker

JOB = "test-reap-task-orphan"


@pytest.fixture
def orphan(docker_client: Any, sandbox_image: str) -> Iterator[Any]:
    container = labelled_sandbox(docker_client, sandbox_image, JOB, time.time() - 5)
    yield container
    if container is not None:
        remove_container(container)  # gone or going: another janitor's


def test_the_reap_task_removes_an_orphaned_container_with_the_docker_backend(
    orphan: Any, docker_client: Any, settings: Any
) -> None:
    from submissions.tasks import reap_sandboxes

    settings.GRADLAB_SANDBOX = "docker"
    reap_sandboxes()
    # Removed by this task or, rarely, by a janitor of another test process that was faster
    # (each Docker backend runs one now and then); test_docker_backend.py checks the
    # janitor's choice on its own.
    assert left_after_reaping(docker_client, JOB) == []


def test_the_reap_task_leaves_containers_alone_with_the_bubblewrap_backend(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grader.sandbox.docker
    from submissions.tasks import reap_sandboxes

    janitor_runs: list[object] = []
    monkeypatch.setattr(grader.sandbox.docker, "reap_expired", janitor_runs.append)
    settings.GRADLAB_SANDBOX = "bubblewrap"
    assert reap_sandboxes() == []
    assert janitor_runs == []  # the Docker janitor never ran
