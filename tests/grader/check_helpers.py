"""Running one check type on hand-built captures, with its options parsed exactly as a
manifest's are (imported by name: tests/ has no packages)."""

from __future__ import annotations

from typing import Any

from grader.capture import Capture
from grader.checks.base import CheckSpec, Outcome
from grader.checks.diagnoses.catalogue import DIAGNOSES
from grader.checks.options import OptionContext
from grader.checks.registry import REGISTRY, parse_options

NAMES = ("x", "y", "w", "b", "model")
# The diagnoses these tests may name: the built-in ones and a manifest's own.
KNOWN = frozenset(DIAGNOSES) | {"missing-value-error", "cleared", "extra", "ones-instead-of-v"}
CONTEXT = OptionContext(NAMES, KNOWN)


def spec_of(
    kind: str, target: str | None = None, *, name: str = "c", points: int = 1, **options: Any
) -> CheckSpec:
    parsed = parse_options(kind, options, CONTEXT)
    return CheckSpec(name=name, type=kind, points=points, target=target, options=parsed)


def run(
    kind: str, learner: Capture, reference: Capture, target: str | None = None, **options: Any
) -> Outcome:
    """The outcome of one `kind` check (its options as a manifest gives them)."""
    return REGISTRY[kind].run(learner, reference, spec_of(kind, target, **options))
