"""Every course package in exercises/, validated through the real sandbox: the reference
passes every check, the starter runs, each known wrong solution fails with the diagnosis
it declares, each alternative passes, no run trips the tamper detector (a false alarm on
our own code), and every auto-mutant of the reference is caught or declared equivalent.
The reference cache and the grading backend (tests/gradlab_fixtures.py) are shared by the
session; each package's reference runs once for its files and its mutants."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.authoring.validation import validate_package
from grader.cache import ReferenceCache
from grader.sandbox.base import Sandbox
from grader.spec import load_module, load_package, package_dirs

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
PACKAGES = package_dirs(EXERCISES)

pytestmark = pytest.mark.sandbox


def test_every_package_is_listed_in_the_module() -> None:
    listed = set(load_module(EXERCISES).exercises)
    assert {path.name for path in PACKAGES} <= listed


@pytest.mark.parametrize("path", PACKAGES, ids=[path.name for path in PACKAGES])
def test_course_package_behaves_as_declared_and_catches_its_mutants(
    path: Path, sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = load_package(path)
    validation = validate_package(package, sandbox=sandbox, cache=reference_cache)
    print(validation.summary())
    assert validation.ok, validation.summary()  # every mutant caught or declared equivalent
    kinds = [item.kind for item in validation.items]
    assert kinds.count("wrong") == len(package.manifest.wrong) >= 1
    assert kinds.count("alternative") == len(package.manifest.alternatives)
