"""A configuration that would lose work is refused: by Django's system checks (every
manage.py command) and by a real Celery worker at its start, with a clear message."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from gradlab_fixtures import ROOT

WORKER_START_TIMEOUT_S = 180


def test_the_shipped_settings_lose_no_work() -> None:
    from ops.checks import work_loss_problems

    assert work_loss_problems() == []


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("CELERY_TASK_ACKS_LATE", False, "CELERY_TASK_ACKS_LATE must be True"),
        ("CELERY_TASK_REJECT_ON_WORKER_LOST", False, "REJECT_ON_WORKER_LOST must be True"),
        ("CELERY_WORKER_PREFETCH_MULTIPLIER", 4, "PREFETCH_MULTIPLIER is 4; it must be 1"),
        ("CELERY_TASK_SERIALIZER", "pickle", "CELERY_TASK_SERIALIZER is 'pickle'"),
        ("CELERY_ACCEPT_CONTENT", ["json", "pickle"], "CELERY_ACCEPT_CONTENT is"),
        (
            "CELERY_BROKER_TRANSPORT_OPTIONS",
            {"visibility_timeout": 3600},
            "visibility_timeout is 3600 s; it must be at least twice",
        ),
    ],
)
def test_each_setting_that_would_lose_work_is_refused_by_the_system_check(
    settings: Any, name: str, value: Any, said: str
) -> None:
    setattr(settings, name, value)

    with pytest.raises(SystemCheckError) as refused:
        call_command("check")

    assert said in str(refused.value)


def test_an_amqp_broker_needs_no_visibility_timeout(settings: Any) -> None:
    from ops.checks import work_loss_problems

    settings.CELERY_BROKER_URL = "amqp://guest@127.0.0.1//"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    assert work_loss_problems() == []


@pytest.mark.worker
def test_a_real_worker_refuses_to_start_on_a_short_visibility_timeout(tmp_path: Any) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'platform'}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "GRADLAB_VISIBILITY_TIMEOUT_SECONDS": "60",
        "GRADLAB_QUEUE_CPU": f"refused-{os.getpid()}",
    }
    command = [sys.executable, "-m", "celery", "-A", "config.celery_app", "worker",
               "-Q", env["GRADLAB_QUEUE_CPU"], "--concurrency", "1", "--without-mingle",
               "--without-gossip", "--without-heartbeat"]  # fmt: skip

    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=WORKER_START_TIMEOUT_S, check=False,
    )  # fmt: skip

    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "refuses to start a worker that would lose work" in output
    assert "visibility_timeout is 60 s" in output
    assert " ready." not in output
