"""Refuses a configuration that would lose work: a Django system check (every manage.py
command, the web server's start through `check --deploy`) and the same rule at each
Celery worker's start (config.celery_app connects `refuse_work_loss` to worker_init).

Work is lost when a message is acknowledged before its task finished (acks_late off, or
reject_on_worker_lost off: a killed worker's message is then dropped), when a worker holds
more messages than it runs (prefetch above 1: they wait behind a long job, and a killed
worker takes them down with it), when the broker re-delivers a message still being worked
on (visibility timeout below twice the longest task's time limit), or when a payload is
not JSON (pickle runs code on load).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

JSON = "json"


def work_loss_problems(config: Any = settings) -> list[str]:
    """Every setting of `config` (Django settings, CELERY_ names) that would lose work."""
    problems: list[str] = []
    if not getattr(config, "CELERY_TASK_ACKS_LATE", False):
        problems.append("CELERY_TASK_ACKS_LATE must be True: a message is acknowledged "
                        "before its task finished, and a killed worker loses it.")  # fmt: skip
    if not getattr(config, "CELERY_TASK_REJECT_ON_WORKER_LOST", False):
        problems.append("CELERY_TASK_REJECT_ON_WORKER_LOST must be True: the message "
                        "of a killed pool process is acknowledged, not redelivered.")  # fmt: skip
    prefetch = getattr(config, "CELERY_WORKER_PREFETCH_MULTIPLIER", 4)
    if prefetch != 1:
        problems.append(f"CELERY_WORKER_PREFETCH_MULTIPLIER is {prefetch}; it must be 1: "
                        "prefetched messages wait behind a long job.")  # fmt: skip
    problems += _visibility_problems(config)
    for name in ("CELERY_TASK_SERIALIZER", "CELERY_RESULT_SERIALIZER"):
        value = getattr(config, name, JSON)
        if value != JSON:
            problems.append(f"{name} is {value!r}; it must be 'json'.")
    accepted = list(getattr(config, "CELERY_ACCEPT_CONTENT", [JSON]))
    if accepted != [JSON]:
        problems.append(f"CELERY_ACCEPT_CONTENT is {accepted!r}; it must be ['json'].")
    return problems


def _visibility_problems(config: Any) -> list[str]:
    broker = str(getattr(config, "CELERY_BROKER_URL", ""))
    if not broker.startswith(("redis", "rediss", "sqs")):
        return []  # AMQP brokers redeliver on a lost connection, not on a timer
    options = getattr(config, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
    visibility = float(options.get("visibility_timeout", 3600))
    longest = max(
        float(getattr(config, "CELERY_TASK_TIME_LIMIT", 0) or 0),
        float(getattr(config, "GRADLAB_JOB_TIME_LIMIT", 0) or 0),
    )
    if visibility < 2 * longest:
        return [f"the broker's visibility_timeout is {visibility:.0f} s; it must be at least "
                f"twice the longest task time limit ({longest:.0f} s): {2 * longest:.0f} s, "
                "or a running task's message is delivered again."]  # fmt: skip
    return []


@checks.register(checks.Tags.compatibility)
def check_work_loss(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return [
        checks.Error(problem, hint="See docs/operations.md, 'Reliability'.", id=f"ops.E{index:03d}")
        for index, problem in enumerate(work_loss_problems(), start=1)
    ]


class WorkLossConfiguration(SystemExit):
    """A worker refuses to start on a configuration that would lose work (a SystemExit:
    Celery's signal dispatch logs and swallows ordinary exceptions)."""


def refuse_work_loss(**kwargs: Any) -> None:
    """Celery's worker_init signal: the worker exits with every problem listed."""
    problems = work_loss_problems()
    if problems:
        listed = "\n  - ".join(problems)
        raise WorkLossConfiguration(
            f"gradlab refuses to start a worker that would lose work:\n  - {listed}"
        )
