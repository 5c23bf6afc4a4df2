"""Trials: the units a check compares. A script exercise has one (the run); a function
exercise has one per reference case, paired with the learner's case of the same index."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from grader.capture import BackwardCall, Capture, ErrorInfo, Provenance, Value
from grader.checks.formatting import MISSING, Missing

NO_RESULT = ErrorInfo("RuntimeError", "your code produced no result for this input")


@dataclass(frozen=True)
class Trial:
    """One comparison unit: the script run, or one case of a function exercise."""

    index: int
    count: int
    visible: bool
    function: bool
    learner: Mapping[str, Value]
    reference: Mapping[str, Value]
    learner_calls: tuple[BackwardCall, ...]
    reference_calls: tuple[BackwardCall, ...]
    learner_exception: ErrorInfo | None
    reference_exception: ErrorInfo | None
    learner_stdout: str
    reference_stdout: str
    # Script runs only: where the final grads and parameters came from.
    learner_provenance: Provenance | None = None
    reference_provenance: Provenance | None = None
    # The learner's output went past the output limit: `learner_stdout` is what was kept.
    learner_stdout_cut: bool = False
    # Exercises whose learner seeds torch: did each run seed it (None: not recorded)?
    learner_seeded: bool | None = None
    reference_seeded: bool | None = None
    # Function exercises: the observed names a backward call of the case filled.
    learner_filled: tuple[str, ...] = ()

    def got(self, key: str) -> Value | Missing:
        return self.learner.get(key, MISSING)

    def want(self, key: str) -> Value | Missing:
        return self.reference.get(key, MISSING)

    @property
    def label(self) -> str:
        if not self.function:
            return ""
        if self.visible:
            return f"on the example input (case {self.index + 1} of {self.count}): "
        return f"on a hidden input (case {self.index + 1} of {self.count}): "

    @property
    def ok_learner_calls(self) -> tuple[BackwardCall, ...]:
        return tuple(c for c in self.learner_calls if c.ok)

    @property
    def ok_reference_calls(self) -> tuple[BackwardCall, ...]:
        return tuple(c for c in self.reference_calls if c.ok)


def trials(learner: Capture, reference: Capture) -> Iterator[Trial]:
    """Script: one trial. Function: one per reference case (the reference's visibility)."""
    if reference.kind == "script":
        yield Trial(
            index=0,
            count=1,
            visible=True,
            function=False,
            learner=learner.variables,
            reference=reference.variables,
            learner_calls=learner.backward_calls,
            reference_calls=reference.backward_calls,
            learner_exception=learner.exception,
            reference_exception=reference.exception,
            learner_stdout=learner.stdout,
            reference_stdout=reference.stdout,
            learner_provenance=learner.provenance,
            reference_provenance=reference.provenance,
            learner_stdout_cut=learner.stdout_truncated,
            learner_seeded=learner.torch_seeded,
            reference_seeded=reference.torch_seeded,
        )
        return
    count = len(reference.cases)
    for index, want in enumerate(reference.cases):
        got = learner.cases[index] if index < len(learner.cases) else None
        exception = got.exception if got else learner.exception or NO_RESULT
        yield Trial(
            index=index,
            count=count,
            visible=want.visible,
            function=True,
            learner=got.observations if got else {},
            reference=want.observations,
            learner_calls=got.backward_calls if got else (),
            reference_calls=want.backward_calls,
            learner_exception=exception,
            reference_exception=want.exception,
            learner_stdout=got.stdout if got else "",
            reference_stdout=want.stdout,
            learner_stdout_cut=bool(got and got.stdout_truncated),
            learner_filled=got.grads_filled if got else (),
        )
