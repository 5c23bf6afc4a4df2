"""courses.manifest.stored_manifest: the typed manifest of a stored version, what every
page, mastery and authoring read instead of the version's manifest JSON."""

from __future__ import annotations

from typing import Any

import pytest
from gradlab_fixtures import EXERCISES
from platform_helpers import E2E_SLUG

from grader.spec import load_package

pytestmark = pytest.mark.django_db


def _stored(files: dict[str, str]) -> Any:
    from courses.models import Exercise
    from courses.services import version_create

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    return version_create(exercise=exercise, files=files, statement="")


def test_a_valid_package_reads_as_grader_spec_parsed_it(catalog: Any) -> None:
    from courses.manifest import stored_manifest

    package = load_package(EXERCISES / "graph-inspection")

    typed, parsed = stored_manifest(_stored(dict(package.files))), package.manifest

    fields = ("slug", "title", "kind", "points", "names")
    assert [getattr(typed, f) for f in fields] == [getattr(parsed, f) for f in fields]
    assert [(c.name, c.type, c.points, c.target, c.objectives) for c in typed.checks] == [
        (c.name, c.type, c.points, c.target, c.objectives) for c in parsed.checks
    ]
    assert typed.diagnoses == dict(parsed.diagnoses) and typed.diagnoses


def test_a_draft_that_is_no_package_reads_as_empty_keeping_each_checks_place(
    catalog: Any,
) -> None:
    from courses.manifest import stored_manifest

    toml = 'checks = [1, {name = "x", points = 2.5, objectives = ["a", 1]}]\n'
    malformed = stored_manifest(_stored({"exercise.toml": toml}), title="Fallback")
    unparsed = stored_manifest(_stored({"exercise.toml": "checks = ["}))

    assert malformed.title == "Fallback" and malformed.diagnoses == {}
    assert [(c.name, c.points, c.objectives) for c in malformed.checks] == [
        ("", 0, ()), ("x", 2, ("a",)),
    ]  # fmt: skip
    assert (unparsed.title, unparsed.checks, unparsed.diagnoses) == ("", (), {})
