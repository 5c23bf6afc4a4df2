"""Fixtures of the grading-engine tests: the real bubblewrap sandbox, a reference cache
shared by the session, and a helper that grades code against a package."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from grader.cache import ReferenceCache
from grader.engine import GradeJob, grade
from grader.protocol import Report
from grader.sandbox import get_backend
from grader.sandbox.base import Sandbox
from grader.spec import Package, load_package

REPO = Path(__file__).resolve().parents[2]
TEST_PACKAGES = Path(__file__).resolve().parent / "packages"

GradeCode = Callable[..., Report]


def package_at(name: str) -> Package:
    """A test-only package (tests/grader/packages/) or a course package (exercises/)."""
    local = TEST_PACKAGES / name
    return load_package(local if local.is_dir() else REPO / "exercises" / name)


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    return get_backend("bubblewrap")


@pytest.fixture(scope="session")
def reference_cache(tmp_path_factory: pytest.TempPathFactory) -> ReferenceCache:
    return ReferenceCache(tmp_path_factory.mktemp("reference-cache"))


@pytest.fixture
def grade_code(sandbox: Sandbox, reference_cache: ReferenceCache) -> GradeCode:
    def run(package: str | Package, code: str, **job: object) -> Report:
        chosen = package_at(package) if isinstance(package, str) else package
        return grade(
            GradeJob(package=chosen, code=code, **job),  # type: ignore[arg-type]
            sandbox=sandbox,
            cache=reference_cache,
        )

    return run


def failed_diagnoses(report: Report) -> dict[str, str]:
    return {c.name: c.diagnosis for c in report.checks if not c.passed}
