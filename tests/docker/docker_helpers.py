"""Helpers of the Docker tests: is the Engine here, jobs, containers of a job."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from grader.protocol import PROTOCOL_VERSION, Limits, SandboxRequest
from grader.sandbox.docker import LABEL_JOB

ROOT = Path(__file__).resolve().parents[2]
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
