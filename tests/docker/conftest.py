"""Fixtures of the Docker tests: the real Engine, the offline-built images, the backend.

Without a Docker Engine these tests skip with the reason, unless GRADLAB_REQUIRE_DOCKER=1
(`make test`), which turns the skip into a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from docker_helpers import build_image, engine_client

from grader.sandbox.docker import DockerSandbox

SHARED_ZYGOTE_JOBS = 500  # as tests/sandbox/sandbox_helpers.py's


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    client = engine_client()
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_client: Any) -> str:
    """gradlab-sandbox:latest, rebuilt first when grader/harness/ or its recipe changed."""
    return build_image("docker/build-sandbox-image.sh")


@pytest.fixture(scope="session")
def platform_image(docker_client: Any) -> str:
    return build_image("docker/build-platform-image.sh")


@pytest.fixture(scope="module")
def docker_zygote(sandbox_image: str) -> Iterator[DockerSandbox]:
    """The Docker backend in zygote mode, for one test module (its zygote container
    imports torch once). Not for the session: a session fixture is closed in the teardown
    of the session's last test, which may be a fast-lane test that must not reach the
    Docker Engine (tests/lanes.py). A zygote shared across jobs, as a deployment that
    chooses throughput runs it (GRADLAB_ZYGOTE_JOBS): the product default starts a zygote
    container per job."""
    backend = DockerSandbox(
        image=sandbox_image, gpu=False, zygote=True, zygote_jobs=SHARED_ZYGOTE_JOBS
    )
    yield backend
    backend.close()


@pytest.fixture(params=["docker", "docker-zygote"])
def docker_sandbox(
    request: pytest.FixtureRequest, sandbox_image: str, docker_zygote: DockerSandbox
) -> DockerSandbox:
    """The Docker backend: a container per job ("docker"), or each job forked, freshly
    isolated, by the zygote of a long-lived container ("docker-zygote")."""
    if request.param == "docker-zygote":
        return docker_zygote
    return DockerSandbox(image=sandbox_image, gpu=False)
