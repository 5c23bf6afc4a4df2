"""Fixtures of the platform tests: a catalog loaded from real packages, personas, API
clients, and a REAL Celery worker process (never eager mode) on the test database.

Personas: alice_learner and dave_learner learn in the course module; bob_instructor
teaches it; carol_other_course teaches (only) another module.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from platform_helpers import CATALOG_SLUGS, MODULE_SLUG, ROOT, write_module
from rest_framework.test import APIClient

WORKER_READY_TIMEOUT_S = 90.0
WORKER_STOP_TIMEOUT_S = 15.0


@pytest.fixture
def catalog(db: None, tmp_path: Path) -> Any:
    from courses.models import Module
    from courses.services import exercises_load

    exercises_load(exercises_dir=write_module(tmp_path / "exercises", CATALOG_SLUGS))
    Module.objects.get_or_create(slug="other-course", defaults={"title": "Other", "order": 1})
    return Module.objects.get(slug=MODULE_SLUG)


def _persona(username: str, module_slug: str, role: str) -> User:
    from accounts.models import Enrollment
    from courses.models import Module

    user = User.objects.create_user(username=username, password="not-a-real-password")
    Enrollment.objects.create(user=user, module=Module.objects.get(slug=module_slug), role=role)
    return user


@pytest.fixture
def alice_learner(catalog: Any) -> User:
    return _persona("alice_learner", MODULE_SLUG, "learner")


@pytest.fixture
def dave_learner(catalog: Any) -> User:
    return _persona("dave_learner", MODULE_SLUG, "learner")


@pytest.fixture
def bob_instructor(catalog: Any) -> User:
    return _persona("bob_instructor", MODULE_SLUG, "instructor")


@pytest.fixture
def carol_other_course(catalog: Any) -> User:
    return _persona("carol_other_course", "other-course", "instructor")


@pytest.fixture
def api() -> Callable[[User | None], APIClient]:
    """api(user) -> a client authenticated with the user's API token (None: anonymous)."""
    from accounts.services import token_issue

    def make(user: User | None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
        return client

    return make


# -- a real Celery worker ------------------------------------------------------------------


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path
    queue: str
    env: dict[str, str] = field(default_factory=dict)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signals the worker's whole process group (main process and pool children)."""
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            return
        if sig == signal.SIGKILL:
            self.process.wait(timeout=WORKER_STOP_TIMEOUT_S)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.kill(signal.SIGTERM)
        try:
            self.process.wait(timeout=WORKER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)


def _database_url() -> str:
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def _purge(queue: str) -> None:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(queue)


@pytest.fixture
def worker_queue(settings: Any) -> str:
    """A private queue: another worker on this machine (a `make run`, another test run)
    never takes our jobs. The names stay `grading`/`grading-gpu` outside tests."""
    queue = f"grading-test-{os.getpid()}-{secrets.token_hex(3)}"
    settings.GRADLAB_QUEUE_CPU = queue
    settings.GRADLAB_QUEUE_GPU = queue
    return queue


@pytest.fixture
def start_worker(
    worker_queue: str, transactional_db: None, tmp_path: Path
) -> Iterator[Callable[..., Worker]]:
    """start_worker(beat=False, **env) -> a running worker process on the test database."""
    started: list[Worker] = []
    cache_dir = tmp_path / "reference-cache"

    def start(*, beat: bool = False, **extra_env: str) -> Worker:
        log = tmp_path / f"worker-{len(started)}.log"
        env = {
            **os.environ,
            "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": _database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "REDIS_URL": settings.CELERY_BROKER_URL,
            "GRADLAB_QUEUE_CPU": worker_queue,
            "GRADLAB_QUEUE_GPU": worker_queue,
            "GRADLAB_CACHE_DIR": str(cache_dir),
            "GRADLAB_VAR_DIR": str(tmp_path / "var"),
            **extra_env,
        }
        command = [
            sys.executable, "-m", "celery", "-A", "config.celery_app", "worker",
            "-Q", worker_queue, "--concurrency", "2", "--pool", "prefork",
            "--without-heartbeat", "--without-gossip", "--without-mingle",
            "--hostname", f"{worker_queue}-{len(started)}@%h", "--loglevel", "INFO",
        ]  # fmt: skip
        if beat:
            command += ["--beat", "--schedule", str(tmp_path / f"beat-{len(started)}")]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        worker = Worker(process=process, log=log, queue=worker_queue, env=extra_env)
        started.append(worker)
        _wait_ready(worker)
        return worker

    _purge(worker_queue)
    yield start
    for worker in started:
        worker.stop()
    _purge(worker_queue)


def _wait_ready(worker: Worker) -> None:
    deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if worker.process.poll() is not None:
            pytest.fail(f"the worker exited with {worker.process.returncode}:\n{worker.output()}")
        if " ready." in worker.output():
            return
        time.sleep(0.2)
    pytest.fail(f"the worker was not ready within {WORKER_READY_TIMEOUT_S} s:\n{worker.output()}")
