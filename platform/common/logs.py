"""Log lines that say which job they belong to.

`job_context(submission_id=12, job_id="submission-12-1")` binds ids in a context
variable for the code it wraps (a Celery task: the worker's pool process runs one at a
time; Celery's task_prerun binds `task_id` and `task` of every task, config.celery_app);
`JobContextFilter` copies them onto each record, so every line logged during the job
carries them: ours, the grader's and the sandbox backend's alike.

Two formats (settings.LOG_FORMAT): "plain" text, the ids appended as `[key=value ...]`,
and "json", one JSON object a line (python-json-logger) with `timestamp`, `level`,
`logger`, `message`, the ids, and `exc_info` when there is a traceback. In a Celery
worker, which installs its own handlers, `install_worker_logging` puts the filter (and
the JSON formatter) on them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from pythonjsonlogger.json import JsonFormatter as BaseJsonFormatter

FORMATS = ("plain", "json")
# The ids a job's lines may carry, in the order the plain format shows them.
CONTEXT_KEYS = ("submission_id", "exercise_job_id", "job_id", "task_id", "task")
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JSON_FIELDS = "%(levelname)s %(name)s %(message)s"
JSON_RENAMES = {"levelname": "level", "name": "logger"}

_context: ContextVar[dict[str, Any]] = ContextVar("gradlab_job_context", default={})  # noqa: B039


def context() -> dict[str, Any]:
    """The ids bound now (a copy)."""
    return dict(_context.get())


@contextlib.contextmanager
def job_context(**ids: Any) -> Iterator[None]:
    """Binds `ids` (added to those already bound) until the block ends."""
    token = _context.set({**_context.get(), **ids})
    try:
        yield
    finally:
        _context.reset(token)


def bind(**ids: Any) -> None:
    """Adds ids to the current context without a block (the job's own scope ends it)."""
    _context.set({**_context.get(), **ids})


def clear() -> None:
    _context.set({})


class JobContextFilter(logging.Filter):
    """Copies the bound ids onto the record (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _context.get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


def _ids(record: logging.LogRecord) -> dict[str, Any]:
    return {key: getattr(record, key) for key in CONTEXT_KEYS if hasattr(record, key)}


def _with_ids(line: str, record: logging.LogRecord) -> str:
    """` [submission_id=12 job_id=...]` after the message (before a traceback)."""
    ids = _ids(record)
    if not ids:
        return line
    first, newline, rest = line.partition("\n")
    shown = " ".join(f"{key}={value}" for key, value in ids.items())
    return f"{first} [{shown}]{newline}{rest}"


class PlainFormatter(logging.Formatter):
    """`PLAIN_FORMAT` (or another formatter's line), the job's ids appended."""

    def __init__(self, fmt: str | None = None, *args: Any, inner: logging.Formatter | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(fmt or PLAIN_FORMAT, *args, **kwargs)
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record) if self.inner else super().format(record)
        return _with_ids(line, record)


class JsonFormatter(BaseJsonFormatter):
    """One JSON object a line: timestamp, level, logger, message, the job's ids (and any
    other `extra=` field), exc_info with the traceback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", JSON_RENAMES)
        kwargs.setdefault("timestamp", "timestamp")  # ISO 8601, UTC
        super().__init__(JSON_FIELDS, *args, **kwargs)


def install_worker_logging(logger: logging.Logger, log_format: str) -> None:
    """On each handler of a logger Celery set up: the job filter, and the JSON formatter,
    or (plain) Celery's own format with the job's ids appended."""
    for handler in logger.handlers:
        if not any(isinstance(f, JobContextFilter) for f in handler.filters):
            handler.addFilter(JobContextFilter())
        if log_format == "json":
            handler.setFormatter(JsonFormatter())
        elif not isinstance(handler.formatter, PlainFormatter):
            handler.setFormatter(PlainFormatter(inner=handler.formatter))
