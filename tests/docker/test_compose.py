"""docker-compose.yml exercised, not only written: the platform image (built offline)
runs web + worker through docker-compose against this machine's PostgreSQL and Redis
(docker/compose.test.yml); a learner submits through the API with a token and the
submission is graded in a sandbox container started by the worker through the Engine."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
import requests  # type: ignore[import-untyped]
import yaml  # type: ignore[import-untyped]
from docker_helpers import ROOT, unavailable

from grader.sandbox.docker import LABEL_ROLE, ROLE_SANDBOX

pytestmark = pytest.mark.docker

POSTGRES_ADMIN_URL = os.environ.get(
    "GRADLAB_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
REDIS_HOST_URL = os.environ.get("GRADLAB_TEST_REDIS_HOST_URL", "redis://127.0.0.1:6379")
REDIS_DB = 13  # a database of its own: the stack's Celery queues never meet other tests'
COMPOSE_SPEC = Path("/usr/lib/python3/dist-packages/compose/config/compose_spec.json")
COMMAND_TIMEOUT_S = 300
WEB_READY_TIMEOUT_S = 120
GRADED_TIMEOUT_S = 300
LEARNER_SETUP = (
    "from accounts.models import Enrollment\n"
    "from accounts.services import token_issue, user_get_or_create\n"
    "from courses.roster import enrollment_set_all_modules\n"
    "user = user_get_or_create(username='alice_learner')\n"
    "enrollment_set_all_modules(user=user, role=Enrollment.Role.LEARNER)\n"
    "print(token_issue(user=user))\n"
)


def compose_binary() -> str:
    found = shutil.which("docker-compose")
    if found is None:
        unavailable("docker-compose is not installed (scripts/setup-docker.sh installs it)")
    return str(found)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Stack:
    name: str
    command: list[str]
    env: dict[str, str]
    base_url: str
    database_url: str

    def run(self, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> str:
        done = subprocess.run(
            [*self.command, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr[-3000:]}"
        return done.stdout

    def logs(self) -> str:
        web = subprocess.run(
            ["docker", "logs", "--tail", "40", f"{self.name}_web"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        with contextlib.suppress(Exception):
            return web.stdout + web.stderr + self.run("logs", "--no-color", "--tail", "60")
        return web.stdout + web.stderr


@pytest.fixture
def stack(platform_image: str, sandbox_image: str, tmp_path: Path) -> Iterator[Stack]:
    name = f"gradlab_compose_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    secret_key = tmp_path / "secret_key"
    secret_key.write_text(secrets.token_hex(32))
    secret_key.chmod(0o644)  # the image's non-root user reads the bind-mounted secret
    port = free_port()
    database_url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    env = {
        **os.environ,
        "POSTGRES_PASSWORD": "unused-the-test-uses-the-machines-postgres",
        "GRADLAB_SECRET_KEY_FILE": str(secret_key),
        "GRADLAB_PLATFORM_IMAGE": platform_image,
        "GRADLAB_SANDBOX_IMAGE": sandbox_image,
        "DOCKER_GID": str(os.stat("/var/run/docker.sock").st_gid),
        "GRADLAB_TEST_DATABASE_URL": database_url,
        "GRADLAB_TEST_REDIS_URL": f"{REDIS_HOST_URL}/{REDIS_DB}",
        "GRADLAB_TEST_PORT": str(port),
    }
    command = [compose_binary(), "-p", name, "-f", "docker-compose.yml"]
    command += ["-f", "docker/compose.test.yml"]
    stack = Stack(name, command, env, f"http://127.0.0.1:{port}", database_url)
    try:
        yield stack
    finally:
        subprocess.run(["docker", "rm", "-f", f"{name}_web"], capture_output=True, timeout=60)
        with contextlib.suppress(Exception):
            stack.run("down", "--volumes", "--remove-orphans", "--timeout", "5", timeout=120)
        redis.Redis.from_url(f"{REDIS_HOST_URL}/{REDIS_DB}").flushdb()
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def wait_for_web(stack: Stack, token: str) -> None:
    deadline = time.monotonic() + WEB_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.ConnectionError):
            response = requests.get(
                f"{stack.base_url}/api/v1/exercises/", headers=auth(token), timeout=10
            )
            if response.status_code == 200:
                return
        time.sleep(1)
    pytest.fail(f"web did not answer within {WEB_READY_TIMEOUT_S} s:\n{stack.logs()}")


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Token {token}"}


def submit(stack: Stack, token: str, code: str) -> str:
    response = requests.post(
        f"{stack.base_url}/api/v1/submissions/",
        json={"exercise": "first-gradient", "code": code},
        headers=auth(token),
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return str(response.json()["url"])


def wait_until_graded(stack: Stack, token: str, url: str) -> dict[str, Any]:
    deadline = time.monotonic() + GRADED_TIMEOUT_S
    while time.monotonic() < deadline:
        body: dict[str, Any] = requests.get(url, headers=auth(token), timeout=30).json()
        if body["status"] in {"graded", "failed"}:
            return body
        time.sleep(1)
    pytest.fail(f"not graded within {GRADED_TIMEOUT_S} s:\n{stack.logs()}")


def runtime_of(stack: Stack, submission_id: int) -> str:
    with psycopg.connect(stack.database_url) as connection:
        row = connection.execute(
            "SELECT report->>'runtime' FROM submissions_submission WHERE id = %s",
            (submission_id,),
        ).fetchone()
    assert row is not None
    return str(row[0])


def sandbox_containers_created(client: Any, since: float) -> int:
    events = client.events(
        since=int(since),
        until=int(time.time()) + 1,
        decode=True,
        filters={"type": "container", "event": "create", "label": f"{LABEL_ROLE}={ROLE_SANDBOX}"},
    )
    return sum(1 for _ in events)


def test_docker_compose_yml_is_accepted_by_docker_compose_and_the_compose_spec() -> None:
    env = {**os.environ, "POSTGRES_PASSWORD": "x"}
    for profile in ([], ["--profile", "gpu"]):
        done = subprocess.run(
            [compose_binary(), *profile, "-f", "docker-compose.yml", "config", "--services"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) == {
        "postgres", "redis", "sandbox-image", "migrate", "web", "worker", "worker-authoring",
        "worker-gpu", "beat",
    }  # fmt: skip
    if not COMPOSE_SPEC.exists():
        unavailable(f"{COMPOSE_SPEC} (Debian's docker-compose) is missing")
    import jsonschema

    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    errors = list(
        jsonschema.Draft7Validator(json.loads(COMPOSE_SPEC.read_text())).iter_errors(document)
    )
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors]
    worker_gpu = document["services"]["worker-gpu"]
    devices = worker_gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    assert worker_gpu["profiles"] == ["gpu"]
    assert "SECRET_KEY" not in json.dumps(document["x-platform"]["environment"]).replace(
        "SECRET_KEY_FILE", ""
    )


def test_a_submission_through_the_api_is_graded_in_a_sandbox_container_by_the_compose_worker(
    stack: Stack, docker_client: Any
) -> None:
    started = time.time()
    stack.run("run", "--rm", "--no-deps", "migrate")
    token = stack.run("run", "--rm", "--no-deps", "migrate", "python", "manage.py", "shell",
                      "-c", LEARNER_SETUP).strip().splitlines()[-1]  # fmt: skip
    stack.run("up", "-d", "--no-deps", "worker")
    # `run` (not `up`): on the host's network a published port is refused, and `run`
    # publishes none; otherwise it is the same service definition.
    stack.run("run", "-d", "--no-deps", "--name", f"{stack.name}_web", "web")
    wait_for_web(stack, token)

    exercise = ROOT / "exercises" / "first-gradient"
    right_url = submit(stack, token, (exercise / "solution.py").read_text())
    wrong_url = submit(stack, token, (exercise / "wrong" / "sign-error.py").read_text())
    right = wait_until_graded(stack, token, right_url)
    wrong = wait_until_graded(stack, token, wrong_url)

    assert right["status"] == "graded" and right["passed"] is True, right
    assert right["score"] == right["max_score"] > 0
    assert wrong["status"] == "graded" and wrong["passed"] is False, wrong
    assert "sign-error" in {check["diagnosis"] for check in wrong["checks"]}
    assert runtime_of(stack, right["id"]).startswith("docker ")
    # the reference run and the two learner runs, each in a container of its own
    assert sandbox_containers_created(docker_client, started) >= 3
    # the compose health checks are real commands that pass on a healthy stack
    stack.run("exec", "-T", "worker", "/app/docker-entrypoint.sh", "health-worker")
    web_health = subprocess.run(
        ["docker", "exec", f"{stack.name}_web", "/app/docker-entrypoint.sh", "health-web"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert web_health.returncode == 0, web_health.stderr
