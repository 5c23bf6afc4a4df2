"""`manage.py load_exercises`: idempotent, a new version only when the content changed."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from gradlab_fixtures import MODULE_SLUG
from platform_helpers import OBJECTIVES, write_module

pytestmark = pytest.mark.django_db


def _load(folder: Path, *args: str) -> str:
    out = StringIO()
    call_command("load_exercises", "--path", str(folder), *args, stdout=out, stderr=out)
    return out.getvalue()


def test_loading_twice_creates_each_exercise_and_version_once(tmp_path: Path) -> None:
    from courses.models import Exercise, ExerciseVersion, Module

    folder = write_module(tmp_path / "ex", ("first-gradient",))

    first = _load(folder)
    second = _load(folder)

    assert "created: first-gradient" in first
    assert "unchanged: first-gradient" in second
    assert Module.objects.get().slug == MODULE_SLUG
    exercise = Exercise.objects.get(slug="first-gradient")
    assert ExerciseVersion.objects.filter(exercise=exercise).count() == 1
    assert exercise.current_version.number == 1
    assert (exercise.kind, exercise.points, exercise.device) == ("script", 10, "cpu")


def test_a_changed_package_gets_a_new_current_version_and_old_ones_stay(tmp_path: Path) -> None:
    from courses.models import Exercise

    folder = write_module(tmp_path / "ex", ("first-gradient",))
    _load(folder)
    old = Exercise.objects.get(slug="first-gradient").current_version
    statement = folder / "first-gradient" / "statement.md"
    statement.write_text(statement.read_text() + "\nOne more sentence.\n", encoding="utf-8")

    output = _load(folder)

    exercise = Exercise.objects.get(slug="first-gradient")
    new = exercise.current_version
    assert "new version: first-gradient" in output
    assert new.number == 2 and new.pk != old.pk
    assert new.content_hash != old.content_hash
    assert "One more sentence." in new.statement and "One more sentence." in new.statement_html
    assert new.files["statement.md"].endswith("One more sentence.\n")
    assert exercise.versions.count() == 2


def test_each_version_stores_the_whole_package_and_its_own_hidden_seed(tmp_path: Path) -> None:
    from courses.models import Exercise
    from grader.spec import Package

    folder = write_module(tmp_path / "ex", ("first-gradient",))
    _load(folder)
    version = Exercise.objects.get(slug="first-gradient").current_version

    package = Package.from_files(version.files)

    assert package.content_hash == version.content_hash
    assert "solution.py" in version.files and "wrong/sign-error.py" in version.files
    assert version.manifest["slug"] == "first-gradient"
    assert 0 <= version.hidden_seed < 2**31


def test_exercises_follow_module_toml_order(tmp_path: Path) -> None:
    from courses.selectors import exercise_list

    folder = write_module(tmp_path / "ex", ("chain-rule", "first-gradient"))
    _load(folder)

    assert [e.slug for e in exercise_list()] == ["chain-rule", "first-gradient"]


def test_a_malformed_package_is_skipped_with_its_error_and_strict_fails(tmp_path: Path) -> None:
    from courses.models import Exercise

    folder = write_module(tmp_path / "ex", ("first-gradient", "chain-rule"))
    manifest = folder / "chain-rule" / "exercise.toml"
    manifest.write_text(manifest.read_text().replace("points = 10", "points = 11", 1))

    output = _load(folder)

    assert "skipped, malformed" in output and "chain-rule" in output
    assert Exercise.objects.filter(slug="first-gradient").exists()
    assert not Exercise.objects.filter(slug="chain-rule").exists()
    with pytest.raises(CommandError, match="chain-rule"):
        _load(folder, "--strict")


def test_a_listed_package_not_on_disk_is_reported(tmp_path: Path) -> None:
    folder = write_module(tmp_path / "ex", ("first-gradient",))
    (folder / "module.toml").write_text(
        f'slug = "{MODULE_SLUG}"\ntitle = "T"\nexercises = ["first-gradient", "not-yet"]\n'
        + OBJECTIVES
    )

    assert "not on disk yet: not-yet" in _load(folder)


def test_the_default_path_loads_the_repository_exercises(settings: Any) -> None:
    from courses.models import Exercise

    output = _load(settings.GRADLAB_EXERCISES_DIR)

    assert "exercises loaded" in output
    assert Exercise.objects.filter(slug="first-gradient").exists()
