"""Rules that name a shortcut: the right numbers reached without the technique the
exercise teaches, read from what the recorder saw the run do (grader/harness/
instrument.py: each call's `differentiates`, `graph_reused` and `identities`), never from
the source text. A call whose graph was not walked (too large) gives no evidence either
way: it counts for the learner."""

from __future__ import annotations

from collections.abc import Sequence

from grader.capture import BackwardCall


def differentiated(calls: Sequence[BackwardCall]) -> int | None:
    """How many distinct derivatives made with create_graph were differentiated by one of
    these (successful) calls; None when a call's graph was not walked (unknown)."""
    found: set[int] = set()
    for call in calls:
        if call.differentiates is None:
            return None
        found.update(call.differentiates)
    return len(found)


def reusing(calls: Sequence[BackwardCall]) -> int:
    """How many of these calls went through a graph node an earlier call had gone
    through (a retained graph used again); an unwalked graph counts."""
    return sum(call.graph_reused is not False for call in calls)


def objects_held(calls: Sequence[BackwardCall]) -> dict[str, int]:
    """How many distinct tensor objects each name held at these calls (1: the same tensor
    all along; a name never a tensor at a call is absent): one pass over the calls."""
    serials: dict[str, set[int]] = {}
    for call in calls:
        for name, serial in call.identities.items():
            serials.setdefault(name, set()).add(serial)
    return {name: len(found) for name, found in serials.items()}


def recreated(mine: dict[str, int], theirs: dict[str, int], name: str) -> bool:
    """The reference keeps one tensor under `name` at every call, the learner's run held
    more than one there (a new leaf made each step instead of an in-place update);
    `mine`, `theirs`: `objects_held` of each run's calls."""
    return theirs.get(name, 0) == 1 and mine.get(name, 0) > 1
