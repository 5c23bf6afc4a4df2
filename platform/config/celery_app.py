"""The Celery application: `celery -A config.celery_app worker -Q grading`.

Settings come from Django's settings (CELERY_ namespace, config/settings/base.py).
Grading tasks go to `grading` (CPU) or `grading-gpu` by the exercise's device, chosen at
send time (common.jobs.job_enqueue); the periodic sweeps run on `grading`.
platform/ and the repository root must be on sys.path (PYTHONPATH=platform:.).
"""

from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

app = Celery("gradlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
def _refuse_work_loss(**kwargs: object) -> None:
    """A worker does not start on a configuration that would lose work (ops.checks)."""
    from ops.checks import refuse_work_loss

    refuse_work_loss()
