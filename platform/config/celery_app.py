"""The Celery application: `celery -A config.celery_app worker -Q grading`.

Settings come from Django's settings (CELERY_ namespace, config/settings/base.py).
Grading tasks go to `grading` (CPU) or `grading-gpu` by the exercise's device, chosen at
send time (common.jobs.job_enqueue); the periodic sweeps run on `grading`.
platform/ and the repository root must be on sys.path (PYTHONPATH=platform:.).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from celery import Celery, signals
from django.conf import settings

from common.logs import bind, clear, install_worker_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

app = Celery("gradlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_process_init.connect
def _prepare_sandbox(**kwargs: object) -> None:
    """Each worker process starts its sandbox backend's zygote (GRADLAB_SANDBOX_ZYGOTE) in
    the background, so that its first job does not wait for torch's import (a process
    must finish its init within seconds: the zygote may take longer)."""
    if not settings.GRADLAB_SANDBOX_ZYGOTE:  # either backend: bubblewrap, or Docker
        return
    threading.Thread(target=_start_zygote, name="gradlab-zygote-start", daemon=True).start()


def _start_zygote() -> None:
    from grading import bridge

    try:
        bridge.sandbox().prepare()
    except Exception:  # the first job tries again, and reports what fails
        logging.getLogger(__name__).exception("cannot start the sandbox's zygote")


@signals.worker_init.connect
def _refuse_work_loss(**kwargs: object) -> None:
    """A worker does not start on a configuration that would lose work (ops.checks)."""
    from ops.checks import refuse_work_loss

    refuse_work_loss()


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _job_ids_on_log_lines(logger: logging.Logger, **kwargs: object) -> None:
    """Celery's handlers carry the job's ids, in settings.LOG_FORMAT (common.logs)."""
    install_worker_logging(logger, settings.LOG_FORMAT)


@signals.task_prerun.connect
def _bind_task(task_id: str, task: Any, **kwargs: object) -> None:
    """Every line a task logs carries its Celery task id and name (common.logs)."""
    clear()
    bind(task_id=task_id, task=task.name)


@signals.task_postrun.connect
def _unbind_task(**kwargs: object) -> None:
    clear()


@signals.worker_ready.connect
def _record_broker_run(**kwargs: object) -> None:
    """The broker's run id, recorded as the worker starts (ops.broker): a restart before
    the first sweep is then noticed by that sweep."""
    from ops.broker import queued_resend_if_restarted

    try:
        queued_resend_if_restarted()
    except Exception:  # the database may not answer yet: the sweep records it later
        logging.getLogger(__name__).warning("could not record the broker's run id",
                                            exc_info=True)  # fmt: skip
