"""Rules on error messages: `error_slug` (the course's recorded autograd errors, by their
message), `typed_error_message` and `message_slug` (what a message check's text shows)."""

from __future__ import annotations

from collections.abc import Sequence

from grader.capture import BackwardCall
from grader.checks.compare import normalise
from grader.checks.trials import Trial

# Recorded autograd errors of the course, recognised by their message.
ERROR_SIGNATURES: tuple[tuple[str, str], ...] = (
    ("grad can be implicitly created only for scalar outputs", "nonscalar-backward"),
    ("trying to backward through the graph a second time", "freed-graph"),
    ("a leaf variable that requires grad is being used in an in-place operation", "inplace-leaf"),
    ("does not require grad and does not have a grad_fn", "graph-broken"),
    ("expected all tensors to be on the same device", "device-mismatch"),
)


def error_slug(message: str) -> str | None:
    """The diagnosis named by an autograd error message, if it is one of the course's."""
    lowered = message.lower()
    for fragment, slug in ERROR_SIGNATURES:
        if fragment in lowered:
            return slug
    return None


def _hit(text: str, trial: Trial, *, reference: bool) -> bool:
    """Did the run hit an error (a recorded backward error or its uncaught exception)
    whose message contains `text`?"""
    calls = trial.reference_calls if reference else trial.learner_calls
    exception = trial.reference_exception if reference else trial.learner_exception
    messages = [c.error.message for c in calls if c.error is not None]
    if exception is not None:
        messages.append(exception.message)
    wanted = normalise(text)
    return bool(wanted) and any(wanted in normalise(m) for m in messages)


def typed_error_message(text: str, trial: Trial) -> bool:
    """A message check holds the expected text of an error the reference's run hit, but
    the learner's run never hit one with that text: typed in, not caught (hard-coded).
    When a backward call of the reference raised it on the exercise's tensors, the
    learner's must come from a backward call whose graph reaches them too (a throw-away
    tensor's error next to a typed-in message does not count)."""
    if not _hit(text, trial, reference=True):
        return False
    if not _hit(text, trial, reference=False):
        return True
    wanted = _error_graph(text, trial.reference_calls)
    if not wanted:
        return False
    found = [c for c in trial.learner_calls if _raised(c, text)]
    return not any(c.graph is None or wanted & set(c.graph) for c in found)


def _raised(call: BackwardCall, text: str) -> bool:
    wanted = normalise(text)
    return call.error is not None and bool(wanted) and wanted in normalise(call.error.message)


def _error_graph(text: str, calls: Sequence[BackwardCall]) -> set[str]:
    """The tracked names the graphs of the reference's calls that raised `text` reach
    (empty: none of them is known to reach a tracked tensor)."""
    names: set[str] = set()
    for call in calls:
        if _raised(call, text):
            if call.graph is None:
                return set()
            names |= set(call.graph) | set(call.roots)
    return names


def message_slug(got: str, want: str) -> str:
    """A message check holds another text: a course error other than the expected one
    names itself; anything else is a wrong value."""
    slug = error_slug(got)
    if slug is None or slug == error_slug(want):
        return "wrong-value"
    return slug
