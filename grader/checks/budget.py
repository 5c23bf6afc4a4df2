"""The CPU budget of judging one submission: the trusted side's checks and diagnosis
rules over the learner's captures get at most GRADLAB_GRADING_CPU_BUDGET_SECONDS of CPU
time (of the grading thread) in all. The engine opens one budget per submission
(`grading_budget`); every check, and every trial of a check, first asks whether it is
spent (`budget_spent`), and a check not reached in time scores 0 with
`BUDGET_EXCEEDED`: the submission is still graded, never retried as an infrastructure
fault. Each rule is also bounded on its own (tests/grader/test_rule_bounds.py), so the
budget is the last line, not the only one."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

BUDGET_ENV = "GRADLAB_GRADING_CPU_BUDGET_SECONDS"
DEFAULT_BUDGET_SECONDS = 20.0
BUDGET_EXCEEDED = "grading budget exceeded"


def budget_seconds() -> float:
    """The budget from the environment (DEFAULT_BUDGET_SECONDS when unset or invalid)."""
    raw = os.environ.get(BUDGET_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_BUDGET_SECONDS
    except ValueError:
        return DEFAULT_BUDGET_SECONDS
    return value if math.isfinite(value) and value >= 0 else DEFAULT_BUDGET_SECONDS


@dataclass
class Budget:
    """CPU seconds of this thread from `started` on; `exceeded` sticks once seen."""

    seconds: float
    started: float = field(default_factory=time.thread_time)
    exceeded: bool = False

    def spent(self) -> bool:
        if not self.exceeded:
            self.exceeded = time.thread_time() - self.started >= self.seconds
        return self.exceeded


_ACTIVE: ContextVar[Budget | None] = ContextVar("grading_budget", default=None)


@contextlib.contextmanager
def grading_budget(seconds: float | None = None) -> Iterator[Budget]:
    """Opens the budget of one submission's judging (nested: the outer one stays)."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    budget = Budget(budget_seconds() if seconds is None else seconds)
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def budget_spent() -> bool:
    """Is the open budget spent (False when none is open)?"""
    active = _ACTIVE.get()
    return active is not None and active.spent()
