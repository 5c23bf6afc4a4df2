"""For a file that scores more than it should (a [[wrong]] that passes, a starter above its
share): which check, missing from the manifest, would have caught it.

The candidates are the plain checks one could add for the manifest's names: a `value` and
a `grad` check of each name the reference defines (a `grad` check only where the
reference's tensor has a gradient), and a `backward_calls` count. Each candidate the
manifest does not already declare is run, as grading would run it, on the file's capture
against the reference's; those that fail are the checks that would catch it."""

from __future__ import annotations

from collections.abc import Iterator

from grader.capture import Capture, TensorValue
from grader.checks.base import CheckSpec
from grader.checks.registry import run_check
from grader.checks.runs import BackwardCallsOptions
from grader.checks.values import ValueOptions
from grader.spec import Package

SHOWN = 3  # candidates named in one hint


def _candidates(package: Package, reference: Capture) -> Iterator[CheckSpec]:
    for name in package.manifest.names:
        want = reference.variables.get(name)
        if want is None:
            continue
        yield CheckSpec(f"{name} equals the reference's", "value", 1, name, ValueOptions())
        if isinstance(want, TensorValue) and want.grad is not None:
            yield CheckSpec(f"{name}.grad equals the reference's", "grad", 1, name, ValueOptions())
    count = BackwardCallsOptions(count=True)
    yield CheckSpec("as many backward calls as the reference", "backward_calls", 1, None, count)


def _declared(package: Package) -> set[tuple[str, str | None]]:
    return {(check.type, check.target) for check in package.manifest.checks}


def catching_checks(package: Package, capture: Capture, reference: Capture) -> list[str]:
    """The candidate checks (as TOML-like text) that fail on `capture`."""
    declared = _declared(package)
    found = []
    for spec in _candidates(package, reference):
        if (spec.type, spec.target) in declared:
            continue
        outcome = run_check(spec, capture, reference)
        if not outcome.passed and not outcome.grading_error:
            target = f', target = "{spec.target}"' if spec.target else ""
            found.append(f'type = "{spec.type}"{target} ({outcome.message})')
    return found


def catching_hint(package: Package, capture: Capture, reference: Capture) -> str:
    """One sentence for a validation line: the checks that would catch the file."""
    found = catching_checks(package, capture, reference)
    if not found:
        return (
            "no plain value, grad or backward_calls check of the manifest's names tells it "
            "from the reference: add a name that shows the mistake, or a check of the run"
        )
    more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
    return "a check that would catch it: " + "; ".join(found[:SHOWN]) + more
