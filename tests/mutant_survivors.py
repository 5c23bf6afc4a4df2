"""Auto-mutant survivors that only gradient provenance (issue 11) can catch: a throw-away
backward, then the reference's final `.grad` written by hand. Until the grader records
each backward's root and the grads it left, these pass every check; they are tolerated
here, and only here, by the tests that validate course packages (tests/exercises, the
validation job and page). They are not declared equivalent: they are real mistakes.
Remove an entry as soon as it is caught; every other survivor fails validation."""

from __future__ import annotations

PROVENANCE_PENDING: dict[str, frozenset[str]] = {
    "chain-rule": frozenset({"hand-written-grad@6"}),
    "first-gradient": frozenset({"hand-written-grad@5"}),
    "linear-regression-gradient": frozenset({"hand-written-grad@10"}),
    "multiple-variables": frozenset({"hand-written-grad@6"}),
    "non-scalar-backward": frozenset({"hand-written-grad@12"}),
    "retain-graph": frozenset({"hand-written-grad@8"}),
}
