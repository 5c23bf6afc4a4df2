"""A worker parses a stored exercise version once per content (grading.bridge's
package cache, issue 12): later jobs of the same files reuse the parsed package, other
content is parsed anew, and an invalid package is refused every time, never cached."""

from __future__ import annotations

import pytest
from gradlab_fixtures import EXERCISES

from grader.protocol import ExerciseError
from grader.spec import Package


def _files(slug: str) -> dict[str, str]:
    folder = EXERCISES / slug
    return {
        str(path.relative_to(folder)): path.read_text(encoding="utf-8")
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_same_files_give_the_same_parsed_package_without_parsing_again() -> None:
    from grading import bridge

    files = _files("chain-rule")
    first = bridge.package_of(files)
    again = bridge.package_of(dict(files))  # another dict, equal content
    assert again is first
    assert again == Package.from_files(files)


def test_edited_files_are_parsed_as_a_package_of_their_own() -> None:
    from grading import bridge

    files = _files("chain-rule")
    edited = {**files, "solution.py": files["solution.py"] + "\n# edited\n"}
    package, other = bridge.package_of(files), bridge.package_of(edited)
    assert other is not package
    assert other.solution.endswith("# edited\n")
    assert package.solution == files["solution.py"]


def test_an_invalid_package_is_refused_each_time_and_never_cached() -> None:
    from grading import bridge

    broken = {**_files("chain-rule"), "exercise.toml": "slug = "}
    for _ in range(2):
        with pytest.raises(ExerciseError, match="stored exercise version is invalid"):
            bridge.package_of(broken)


def test_the_cache_keeps_at_most_its_size_dropping_the_least_recently_used() -> None:
    from grading.bridge import _Packages

    packages = _Packages(size=2)
    slugs = ("chain-rule", "first-gradient", "retain-graph")
    parsed = [packages.get(_files(slug)) for slug in slugs]  # chain-rule dropped
    assert packages.get(_files("retain-graph")) is parsed[2]
    assert packages.get(_files("first-gradient")) is parsed[1]
    assert packages.get(_files("chain-rule")) is not parsed[0]  # parsed again
