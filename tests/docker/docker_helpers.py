"""Helpers of the Docker tests: is the Engine here, jobs, containers of a job."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from grader.protocol import PROTOCOL_VERSION, Limits, SandboxRequest
from grader.sandbox.docker import LABEL_DEADLINE, LABEL_JOB, LABEL_ROLE, ROLE_SANDBOX, reap_expired

ROOT = Path(__file__).resolve().parents[2]
# How long a removal a janitor began may take to end (an upper bound a passing run never
# nears: a container's removal takes milliseconds).
REMOVAL_WAIT_S = 30.0
REQUIRE_DOCKER_ENV = "GRADLAB_REQUIRE_DOCKER"
IMAGE_BUILD_TIMEOUT_S = 1200


def unavailable(reason: str) -> None:
    """Skip with the reason, or fail when the test command requires Docker."""
    if os.environ.get(REQUIRE_DOCKER_ENV) == "1":
        pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def engine_client() -> Any:
    """A client of the local Docker Engine, or skip/fail saying why there is none."""
    try:
        import docker

        client = docker.from_env(version="auto", timeout=60)  # type: ignore[attr-defined]
        client.ping()
    except Exception as error:  # ImportError, DockerException, requests' errors
        unavailable(f"the Docker Engine is not reachable ({error}): run scripts/setup-docker.sh")
    return client


def build_image(script: str) -> str:
    """Run docker/build-<x>-image.sh (a no-op when the image is current); its reference."""
    try:
        done = subprocess.run(
            ["bash", script],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=IMAGE_BUILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        unavailable(f"{script} took over {IMAGE_BUILD_TIMEOUT_S} s")
    if done.returncode != 0:
        unavailable(f"{script} failed: {done.stderr[-1500:]}")
    return done.stdout.strip().splitlines()[-1]


def script_job(code: str, *, names: tuple[str, ...] = ("x",)) -> bytes:
    """stdin of one learner run of a script exercise (FORMAT.md section 2)."""
    envelope = {
        "protocol": PROTOCOL_VERSION,
        "kind": "script",
        "mode": "learner",
        "names": list(names),
        "files": {"submission.py": code},
        "limits": {"stdout_bytes": 65_536, "tensor_elements": 100_000},
    }
    line = json.dumps(envelope)
    return f"GRADLAB-JOB {len(line.encode())}\n{line}\n[]\n{secrets.token_hex(16)}\n".encode()


def request(code: str, *, job_id: str | None = None, **limits: Any) -> SandboxRequest:
    return SandboxRequest(
        job_id=job_id or f"test-docker-{secrets.token_hex(6)}",
        stdin=script_job(code),
        limits=Limits().replace(**limits),
    )


def containers_of_job(client: Any, job_id: str) -> list[Any]:
    return client.containers.list(
        all=True, filters={"label": f"{LABEL_JOB}={job_id}"}, ignore_removed=True
    )


def labelled_sandbox(client: Any, image: str, job: str, deadline: float) -> Any | None:
    """A sleeping container labelled as job `job`'s sandbox with this deadline, as a
    janitor sees a real one. None where one past its deadline was reaped between its
    creation and its start: a janitor of another test process (each Docker backend runs
    one now and then) removed it (404) or is removing it (409), as it should."""
    import docker.errors

    labels = {LABEL_ROLE: ROLE_SANDBOX, LABEL_JOB: job, LABEL_DEADLINE: f"{deadline:.0f}"}
    try:
        return client.containers.run(
            image, ["sleep", "300"], labels=labels, detach=True, network_mode="none"
        )
    except docker.errors.APIError as error:  # NotFound is one
        if deadline < time.time() and error.status_code in (404, 409):
            return None
        raise


def left_after_reaping(client: Any, job: str) -> list[Any]:
    """The containers of `job` still there once every removal under way has ended. A
    janitor leaves a container whose removal another one began (409 from the Engine) to
    that one, so right after a pass it may still be listed for a moment: wait for it to
    go, passing the janitor again meanwhile, within REMOVAL_WAIT_S."""
    deadline = time.monotonic() + REMOVAL_WAIT_S
    while (left := containers_of_job(client, job)) and time.monotonic() < deadline:
        time.sleep(0.2)
        reap_expired(client)
    return left
