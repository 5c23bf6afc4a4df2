"""Where a PackageError points (grader.authoring.problems): the file and line of real PackageErrors
of broken packages, which the authoring page marks in that file's editor."""

from __future__ import annotations

import pytest

from grader.authoring.problems import ProblemPlace, field_line, problem_place
from grader.authoring.scaffold import new_package
from grader.spec import Package, PackageError


def _place(files: dict[str, str]) -> tuple[ProblemPlace | None, str]:
    with pytest.raises(PackageError) as raised:
        Package.from_files(files, origin="cube")
    place = problem_place(str(raised.value), files)
    line = files[place.file].splitlines()[place.line - 1] if place and place.line else ""
    return place, line


def _with(path: str, old: str, new: str, kind: str = "script") -> dict[str, str]:
    files = new_package("cube", kind=kind)
    assert old in files[path]
    files[path] = files[path].replace(old, new, 1)
    return files


def test_a_check_field_points_at_its_line_in_its_own_checks_table() -> None:
    place, line = _place(_with("exercise.toml", 'target = "y"', 'target = "z"'))

    assert place is not None and (place.file, place.field) == ("exercise.toml", "checks[1].target")
    assert line == 'target = "z"'


def test_a_top_level_field_points_at_its_key_line() -> None:
    place, line = _place(_with("exercise.toml", "points = 10", "points = 11"))

    assert place is not None and place.field == "points" and line == "points = 11"


def test_an_unknown_field_of_a_wrong_solution_points_at_that_field() -> None:
    place, line = _place(_with("exercise.toml", "[[wrong]]", "[[wrong]]\nbogus = 1"))

    assert place is not None and place.field == "wrong[0].bogus" and line == "bogus = 1"


def test_a_field_of_a_declared_diagnosis_points_into_its_table() -> None:
    files = new_package("cube")
    files["exercise.toml"] += '\n[diagnoses.mine]\ntitle = "Mine"\nhintt = "typo"\n'

    place, line = _place(files)

    assert place is not None and place.field == "diagnoses.mine.hintt" and line == 'hintt = "typo"'


def test_invalid_toml_points_at_the_line_the_parser_names() -> None:
    place, _ = _place(_with("exercise.toml", 'names = ["x", "y"]', 'names = ["x", "y"'))

    assert place is not None and place.file == "exercise.toml" and place.line > 0


def test_a_python_file_that_does_not_compile_points_at_its_line() -> None:
    path = "wrong/forgot-requires-grad.py"
    place, line = _place(_with(path, "y.backward()", "y.backward(("))

    assert place == ProblemPlace(path, 5) and line == "y.backward(("


def test_a_function_exercises_cases_file_points_at_its_line() -> None:
    place, line = _place(_with("cases.py", "def _case(x, visible):", "def _case(x,,):", "function"))

    assert place is not None and place.file == "cases.py" and line == "def _case(x,,):"


def test_a_missing_file_points_at_no_file() -> None:
    files = new_package("cube")
    del files["starter.py"]

    with pytest.raises(PackageError) as raised:
        Package.from_files(files, origin="cube")

    assert problem_place(str(raised.value), files) is None


def test_a_field_the_text_does_not_spell_out_points_at_its_table_or_nowhere() -> None:
    toml = '[[checks]]\nname = "a"\n\n[[checks]]\nname = "b"\n'

    assert field_line(toml, "checks[1].points") == 4  # the table's header
    assert field_line(toml, "checks[5].points") == 0
    assert field_line(toml, "title") == 0
