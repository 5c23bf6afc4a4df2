"""The typed manifest of a stored version: the one reader of ExerciseVersion.manifest (the
exercise.toml as saved, parsed to JSON).

A published version's manifest passed grader.spec when it was published. A draft's need
not (it is saved even when it is not a valid package, and {} when its TOML does not parse),
so this reads the stored JSON as leniently as the pages always did: a missing or malformed
field reads as empty (no title: `title`; a check that is not a table: a check with no name,
points or objectives, keeping its place), never as an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from courses.models import ExerciseVersion
from grader.checks.base import CheckSpec
from grader.spec import DiagnosisSpec, Manifest


def stored_manifest(version: ExerciseVersion, *, title: str = "") -> Manifest:
    """`version`'s manifest, typed; `title` is the title of one that has none."""
    raw = version.manifest if isinstance(version.manifest, Mapping) else {}
    return Manifest(
        slug=_text(raw.get("slug")),
        title=str(raw["title"]) if "title" in raw else title,
        kind=_text(raw.get("kind")),
        points=_number(raw.get("points")),
        names=_strings(raw.get("names")),
        checks=tuple(_check(c) for c in _list(raw.get("checks"))),
        diagnoses=_diagnoses(raw.get("diagnoses")),
    )


def _check(raw: Any) -> CheckSpec:
    if not isinstance(raw, Mapping):
        return CheckSpec(name="", type="", points=0)
    target = raw.get("target")
    return CheckSpec(
        name=str(raw.get("name", "")),
        type=_text(raw.get("type")),
        points=_number(raw.get("points")),
        target=target if isinstance(target, str) else None,
        objectives=_strings(raw.get("objectives")),
    )


def _diagnoses(raw: Any) -> dict[str, DiagnosisSpec]:
    """[diagnoses.<slug>] tables: a title (the slug without one) and a hint."""
    if not isinstance(raw, Mapping):
        return {}
    return {
        slug: DiagnosisSpec(str(entry.get("title", slug)), str(entry.get("hint", "")))
        for slug, entry in raw.items()
        if isinstance(entry, Mapping)
    }


def _list(raw: Any) -> list[Any]:
    return raw if isinstance(raw, list) else []


def _strings(raw: Any) -> tuple[str, ...]:
    return tuple(item for item in _list(raw) if isinstance(item, str))


def _text(raw: Any) -> str:
    return raw if isinstance(raw, str) else ""


def _number(raw: Any) -> int:
    """A whole number of points; anything else (a float only a draft has) reads as its
    integer part, a non-number as 0."""
    return int(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else 0
